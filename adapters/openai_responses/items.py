"""The Responses shapes both directions share: the response object (every field the Open Responses schema
requires), output items, the gateway's extension items, and OpenAI error objects.

What an agent does beyond a model's reply takes the Responses API's own items where it has them, the ones a hosted
MCP server's tools make (which the `openai` SDKs' types hold):

- `mcp_call`: a tool the agent ran itself (`id` is the call's id; `name`, `arguments`, `output`, or for a failed
  one `error`), with `approval_request_id` when it ran once approved in the same run. A `function_call` would be a
  call for the client to run: agent loops (the OpenAI Agents SDK) run every one, or fail on a tool they do not have.
- `mcp_approval_request`: the agent waits for a human. About a call of the agent's own, its `name` and `arguments`
  are the call's and `call_id` (the gateway's field) names it; any other interrupt is named after its reason, its
  `arguments` the question (`reason`, `message`, `payload`, `response_schema`, `tool_call_id`, `expires_at`). The
  response completes; the client answers with an `mcp_approval_response` input item (`approval_request_id`,
  `approve`, `reason`), or with `{"type": "agent_gateway:resume", "interrupt_id", "payload"}` for an answer that is
  not a yes or no.
- `mcp_approval_response`: an interrupt the run answered itself; the response does not wait for it.

The rest has no item in either, so it is an extension item under the gateway's slug (Open Responses' rule for
items of one implementation):

- `agent_gateway:activity`: an activity (a plan, a search's progress; AG-UI's activity messages) as it stands after
  each change, whole (`activity_id`, `activity_type`, `content`): the last item of an `activity_id` is how it is.
- `agent_gateway:subagent`: an agent the agent called (`subagent_run_id`, `name`, `description`, its parents), added
  `in_progress` when it starts and done when it ends (`completed` with its `result`, `incomplete` when suspended,
  `failed` with its `error`).

Encrypted reasoning has the specification's own place: a `reasoning` item's `encrypted_content`.
"""

from __future__ import annotations

import base64
import binascii
import time
from typing import Any

import orjson

from adapters.openai_common.errors import ErrorObjects
from adapters.openai_common.usage import usage_object
from gateway.core.errors import GatewayError, InvalidRequest, UnknownRun
from gateway.core.usage import UsageTotals
from gateway.core.validation import load_carried_json

SLUG = "agent_gateway"
MCP_CALL = "mcp_call"
APPROVAL_REQUEST = "mcp_approval_request"
APPROVAL_RESPONSE = "mcp_approval_response"
ACTIVITY = f"{SLUG}:activity"
SUBAGENT = f"{SLUG}:subagent"
RESUME = f"{SLUG}:resume"
COMPACTED = "agw1."
"""What begins a compaction item's `encrypted_content` made by the gateway: the version of its encoding."""

ERRORS = ErrorObjects({401: "authentication_error", 403: "permission_error", 404: "not_found",
                       429: "too_many_requests"})
"""Open Responses' error objects: the `type` of an HTTP status (the `openai` SDKs read the status)."""


def response_object(response_id: str, *, status: str, model: str, created_at: int, output: list[dict[str, Any]],
                    request: dict[str, Any], usage: UsageTotals | None = None,
                    error: dict[str, Any] | None = None, incomplete: str | None = None) -> dict[str, Any]:
    """A response resource with every field the Open Responses schema requires; `request` is what the client's
    request said of it (`openai` metadata of the turn: tools, instructions, previous response, store, metadata)."""
    done = status in ("completed", "failed", "incomplete", "cancelled")
    return {
        "id": response_id, "object": "response", "created_at": created_at,
        "completed_at": int(time.time()) if done else None, "status": status,
        "incomplete_details": {"reason": incomplete} if incomplete else None, "model": model,
        "previous_response_id": request.get("previous_response_id"), "instructions": request.get("instructions"),
        "output": output, "error": error, "tools": request.get("tools", []), "tool_choice": "auto",
        "truncation": "disabled", "parallel_tool_calls": True, "text": {"format": {"type": "text"}}, "top_p": 1.0,
        "presence_penalty": 0.0, "frequency_penalty": 0.0, "top_logprobs": 0, "temperature": 1.0,
        "reasoning": None, "usage": usage_object(usage, "responses", whole=True) if usage is not None else None,
        "max_output_tokens": None,
        "max_tool_calls": None, "store": request.get("store", True), "background": False,
        "service_tier": "default", "metadata": request.get("metadata") or {}, "safety_identifier": None,
        "prompt_cache_key": None,
        **({"conversation": {"id": request["conversation"]}} if request.get("conversation") else {}),
    }


def message_item(item_id: str, text: str, status: str = "completed", *, refusal: bool = False) -> dict[str, Any]:
    """An assistant message: its text, or (`refusal`) the model's refusal, as its one content part."""
    content = [] if status == "in_progress" else [text_part(text, refusal=refusal)]
    return {"id": item_id, "type": "message", "status": status, "role": "assistant", "content": content}


def text_part(text: str, *, refusal: bool = False) -> dict[str, Any]:
    """A message's content part: `output_text`, or `refusal`."""
    if refusal:
        return {"type": "refusal", "refusal": text}
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def function_call_item(item_id: str, call_id: str, name: str, arguments: str,
                       status: str = "completed") -> dict[str, Any]:
    return {"id": item_id, "type": "function_call", "status": status, "call_id": call_id, "name": name,
            "arguments": arguments}


def reasoning_item(item_id: str, text: str | None, encrypted: str | None = None) -> dict[str, Any]:
    """The agent's reasoning as the item's summary: its streaming events are the ones both the `openai` SDKs and
    Open Responses know (their events for raw reasoning text differ in name)."""
    summary = [summary_part(text)] if text is not None else []
    item: dict[str, Any] = {"id": item_id, "type": "reasoning", "summary": summary}
    if encrypted is not None:
        item["encrypted_content"] = encrypted
    return item


def summary_part(text: str) -> dict[str, Any]:
    return {"type": "summary_text", "text": text}


def mcp_call_item(call_id: str, name: str, arguments: str, server_label: str, output: str, failed: bool,
                  approval_request_id: str | None) -> dict[str, Any]:
    """A tool the agent ran, as a hosted MCP server's call: a failed one's output is its `error`."""
    return {"id": call_id, "type": MCP_CALL, "status": "failed" if failed else "completed", "name": name,
            "arguments": arguments, "server_label": server_label, "output": None if failed else output,
            "error": {"type": "mcp_tool_execution_error", "content": output} if failed else None,
            "approval_request_id": approval_request_id}


def refusal(error: GatewayError) -> tuple[int, dict[str, Any]]:
    """A refused request's status and error object, in the codes Open Responses clients test for."""
    if isinstance(error, UnknownRun):
        return 404, ERRORS.object(error.message, 404, "previous_response_not_found", "previous_response_id")
    return ERRORS.refusal(error)


def compacted(items: list[dict[str, Any]]) -> str:
    """Input items as a compaction item's `encrypted_content`: encoded, not encrypted, since they hold nothing its
    client could not send as input itself (see `compaction`)."""
    return COMPACTED + base64.urlsafe_b64encode(orjson.dumps(items)).decode()


def expanded(item: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The input items a compaction item of the gateway's stands for; refused if it is not one."""
    content = item.get("encrypted_content")
    refused = InvalidRequest(f"{where}.encrypted_content is not a compaction this gateway made (POST "
                             "/v1/responses/compact makes one)",
                             [{"field": f"{where}.encrypted_content", "message": "not a compaction of this gateway"}])
    if not isinstance(content, str) or not content.startswith(COMPACTED):
        raise refused
    try:
        items = load_carried_json(base64.urlsafe_b64decode(content[len(COMPACTED):]), at=2)  # where `input` is
    except (binascii.Error, ValueError):
        raise refused from None
    if not isinstance(items, list) or not all(isinstance(i, dict) and i.get("type") != "compaction" for i in items):
        raise refused
    return items
