"""What an AG-UI client before 1.0 is written: a client that declares no `protocolVersion`, or one below 1.0 (see
`versions`, the gate).

A 1.0 client declares `protocolVersion: "1.0"` in every `RunAgentInput`; clients before it declared nothing and read
what servers of their day sent:

- reasoning as `THINKING_START`, `THINKING_TEXT_MESSAGE_START/CONTENT/END`, `THINKING_END` (no ids);
- `RUN_FINISHED` with no `outcome` and no `usage`, and no `protocolVersion` on `RUN_STARTED`;
- an interrupt as LangGraph's `CUSTOM on_interrupt` (its question as a JSON string, its id as `rawEvent`), answered
  with `forwardedProps.command.resume`, which names no interrupt;
- no subagents: their lifecycle events are left out and their content is the agent's own, as `@ag-ui/client`'s own
  downgrade for a peer before 0.0.57 does; no event metadata, no encrypted reasoning.

What is left out is counted in `dropped`. Over protobuf (`LegacyProtoAguiEncoder`) a client before 1.0 reads
`@ag-ui/proto` before 1.0, whose schema has no reasoning and no activity events (its `decode` throws on an event it
does not know): both are left out.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import drop_none
from gateway.core.dropped import Dropped, drop_map
from gateway.core.encoding import sse_frame

from . import encode
from .encode import AguiEncoder


def _run_started(enc: LegacyAguiEncoder, e: canonical.RunStarted) -> bytes:
    frame = encode._run_started(enc, e)
    return frame.replace(b',"protocolVersion":"1.0"', b"", 1)


def _run_finished(enc: LegacyAguiEncoder, e: canonical.RunFinished) -> bytes:
    out = []
    if e.outcome == "interrupt":
        for interrupt in enc._interrupts:
            out.append(sse_frame({"type": "CUSTOM", "name": "on_interrupt",
                                  "value": orjson.dumps(_question(interrupt)).decode(),
                                  "rawEvent": interrupt["id"]}))
    elif e.outcome == "cancelled":
        enc.dropped[Dropped.CANCELLED_AS_FINISH] += 1
    if e.stop_reason is not None:
        enc.dropped[Dropped.STOP_REASON] += 1  # no metadata before 1.0: the answer ends as if whole
    if enc._usage:
        enc.dropped[Dropped.USAGE] += len(enc._usage)
    event: dict[str, Any] = {"type": "RUN_FINISHED", "threadId": enc._thread_id, "runId": enc._run_id}
    if e.result is not None:
        event["result"] = e.result
    return b"".join(out) + sse_frame(event)


def _run_error(enc: LegacyAguiEncoder, e: canonical.RunError) -> bytes:
    if enc._usage:
        enc.dropped[Dropped.USAGE] += len(enc._usage)
    return sse_frame(drop_none({"type": "RUN_ERROR", "message": e.message, "code": e.code}))


def _interrupt(enc: LegacyAguiEncoder, e: canonical.Interrupt) -> bytes:
    enc.dropped[Dropped.INTERRUPT_AS_CUSTOM] += 1
    return encode._interrupt(enc, e)


def _reasoning_start(enc: LegacyAguiEncoder, e: canonical.ReasoningStart) -> bytes:
    enc._open(e.message_id, e.subagent_run_id)
    return sse_frame({"type": "THINKING_START"}) + sse_frame({"type": "THINKING_TEXT_MESSAGE_START"})


def _reasoning_delta(enc: LegacyAguiEncoder, e: canonical.ReasoningDelta) -> bytes:
    return sse_frame({"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": e.delta})


def _reasoning_end(enc: LegacyAguiEncoder, e: canonical.ReasoningEnd) -> bytes:
    return sse_frame({"type": "THINKING_TEXT_MESSAGE_END"}) + sse_frame({"type": "THINKING_END"})


def _subagent_event(enc: LegacyAguiEncoder,
                    e: canonical.SubagentStarted | canonical.SubagentFinished | canonical.SubagentError) -> bytes:
    return b""  # counted where its content is written as the agent's own


class LegacyAguiEncoder(AguiEncoder):
    __slots__ = ()

    METADATA = frozenset()  # none carried: every event's is counted
    DROPS = drop_map(Dropped.ENCRYPTED_VALUE)

    def tag(self, event: dict[str, Any], e: canonical.Event, owner: str | None = None) -> dict[str, Any]:
        return event

    def _open(self, entity_id: str, owner: str | None) -> str | None:
        if owner is not None:
            self.dropped[Dropped.SUBAGENT] += 1  # the subagent's content is the agent's own
        return None

    handlers = {
        **AguiEncoder.handlers,
        canonical.ReasoningStart: _reasoning_start,
        canonical.ReasoningDelta: _reasoning_delta,
        canonical.ReasoningEnd: _reasoning_end,
        canonical.Interrupt: _interrupt,
        canonical.SubagentStarted: _subagent_event,
        canonical.SubagentFinished: _subagent_event,
        canonical.SubagentError: _subagent_event,
        canonical.RunStarted: _run_started,
        canonical.RunFinished: _run_finished,
        canonical.RunError: _run_error,
    }


def _question(interrupt: dict[str, Any]) -> Any:
    """What LangGraph put in `on_interrupt`: the interrupt's value, here its payload, or what it asks."""
    metadata = interrupt.get("metadata")
    if isinstance(metadata, dict) and "payload" in metadata:
        return metadata["payload"]
    return drop_none({"reason": interrupt.get("reason"), "message": interrupt.get("message"),
                      "toolCallId": interrupt.get("toolCallId")})


class LegacyProtoAguiEncoder(LegacyAguiEncoder):
    """What a client before 1.0 reading protobuf is written: what one reading SSE is, but reasoning and activities,
    which its schema has no events for."""

    __slots__ = ()

    DROPS = {**LegacyAguiEncoder.DROPS, **drop_map(Dropped.REASONING, Dropped.ACTIVITY)}
