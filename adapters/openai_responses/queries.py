"""`GET /v1/responses/{id}`, `POST /v1/responses/{id}/cancel` and `DELETE /v1/responses/{id}`: a response the
gateway served, as it stands. A response still running is `in_progress` (cancelling it ends its stream as
`incomplete`, reason `cancelled`, and cancels the upstream's run); a finished one is read from the conversation
store, so any replica answers."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import RunPath, RunQuery, RunRecord
from gateway.core.ids import new_id

from .items import error_object, function_call_item, message_item, response_object, tool_call_item

RUN_PATHS = (RunPath("GET"), RunPath("DELETE", forget=True), RunPath("POST", "/cancel", cancel=True))

_STATUS = {"running": "in_progress", "success": "completed", "interrupt": "incomplete", "cancelled": "cancelled",
           "error": "failed"}


def answer_query(query: RunQuery, run: RunRecord | None, request: dict[str, Any]) -> tuple[int, bytes]:
    if run is None:
        return 404, orjson.dumps({"error": error_object(f"Response with id '{query.run_id}' not found.", 404,
                                                        "response_not_found", "response_id")})
    if query.forget:
        return 200, orjson.dumps({"id": run.run_id, "object": "response", "deleted": True})
    if query.cancel and run.status not in ("running", "interrupt"):
        return 400, orjson.dumps({"error": error_object(f"Response {run.run_id} is {_STATUS[run.status]}: only a "
                                                        "response in progress can be cancelled", 400,
                                                        "response_not_cancellable", None)})
    status = "cancelled" if query.cancel else _STATUS[run.status]
    echo = {"previous_response_id": run.follows}
    error = {"code": "upstream_error", "message": run.error} if run.status == "error" and run.error else None
    return 200, orjson.dumps(response_object(
        run.run_id, status=status, model=run.model or "agent-gateway", created_at=int(run.created_at or 0),
        output=output_of(run), request=echo, error=error,
        incomplete="interrupt" if status == "incomplete" else None))


def output_of(run: RunRecord) -> list[dict[str, Any]]:
    """A stored run's messages as the output items its stream showed (interrupts aside: their questions)."""
    results = {m.tool_call_id: m for m in run.messages if m.role == "tool" and m.tool_call_id}
    items: list[dict[str, Any]] = []
    for m in run.messages:
        if m.role != "assistant":
            continue
        if m.text:
            items.append(message_item(m.id or new_id("msg"), m.text))
        for call in m.tool_calls:
            result = results.get(call.id)
            items.append(function_call_item(new_id("fc"), call.id, call.name, call.arguments) if result is None
                         else tool_call_item(new_id("fc"), call.id, call.name, call.arguments, result.text,
                                             result.error is not None))
    items += [message_item(new_id("msg"), question) for question in run.questions]
    return items
