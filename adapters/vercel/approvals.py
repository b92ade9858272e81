"""How a useChat client is asked about an interrupt and told it was answered, as far as its `ai` release reads it.

An interrupt about a tool call of the stream is an approval asked on that call (6 on); any other, and every one for a
5 client, which has no approvals, is a tool call of the gateway's own that stands for it (see
`request.INTERRUPT_CALL_PREFIX`): a 6 or 7 client is asked to approve it, a 5 client answers it with a tool result.
"""

from __future__ import annotations

import re
from typing import Any

from gateway.core import events as canonical
from gateway.core.codec import drop_none
from gateway.core.turn import Resume, approves

from .request import INTERRUPT_CALL_PREFIX
from .versions import AiSdk


def approval(e: canonical.Interrupt, sdk: AiSdk) -> dict[str, Any]:
    """The approval asked on the call the interrupt is about, with what an AI SDK upstream said of it (a
    signature, an automatic approval, why) as far as this release reads it."""
    chunk: dict[str, Any] = {"type": "tool-approval-request", "approvalId": e.id, "toolCallId": e.tool_call_id}
    said = e.metadata.get("vercel") if isinstance(e.metadata, dict) else None
    if isinstance(said, dict):
        allowed = {"signature"} | ({"isAutomatic"} if sdk.seven else set()) \
            | ({"reason", "approvalDescriptor", "inputSchemaInput"} if sdk.approval_reason else set())
        chunk.update({k: v for k, v in said.items() if k in allowed})
    return chunk


def stand_in(e: canonical.Interrupt, sdk: AiSdk) -> tuple[str, str, list[dict[str, Any]]]:
    """The call that stands for the interrupt: its id, its name (after the interrupt's reason), and its chunks."""
    call_id = INTERRUPT_CALL_PREFIX + e.id
    name = re.sub(r"[^A-Za-z0-9_]+", "_", e.reason).strip("_") or "approval"
    details = drop_none({"reason": e.reason or None, "message": e.message, "payload": e.payload,
                         "responseSchema": e.response_schema, "toolCallId": e.tool_call_id,
                         "expiresAt": e.expires_at, "metadata": e.metadata})
    chunks = [{"type": "tool-input-available", "toolCallId": call_id, "toolName": name, "input": details}]
    if sdk.approvals:
        chunks.append({"type": "tool-approval-request", "approvalId": e.id, "toolCallId": call_id})
    return call_id, name, chunks


def resolved(e: canonical.InterruptResolved, sdk: AiSdk) -> dict[str, Any] | None:
    """An approval the agent answered itself, in the run: said to a 7 client; None for one that has no word for
    it."""
    if not sdk.seven:
        return None
    return drop_none({"type": "tool-approval-response", "approvalId": e.interrupt_id, "approved": e.approved,
                      "reason": e.reason})


def settled(resumes: list[Resume]) -> list[dict[str, Any]]:
    """The calls that stood for the interrupts a continuation answers, closed as the client answered them, so that
    it shows the answer and never sends it again."""
    out = []
    for resume in resumes:
        call_id = INTERRUPT_CALL_PREFIX + resume.interrupt_id
        if approves(resume):
            out.append({"type": "tool-output-available", "toolCallId": call_id, "output": resume.payload})
        else:
            out.append({"type": "tool-output-denied", "toolCallId": call_id})
    return out
