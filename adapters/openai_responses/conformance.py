"""The rules an Open Responses client holds a reply to, from the specification and its published schemas
(`ResponseResource` and the streaming events of `openresponses/openresponses`' OpenAPI document, which its
compliance suite validates with): every event has its `type` and an increasing `sequence_number`; the stream opens
with `response.created` and ends with one of `response.completed`, `failed` or `incomplete` carrying a whole
response object; items are added before their deltas and done after them; an `error` event carries an error
object. The terminal `data: [DONE]` the specification asks for is a note: the `openai` SDKs end without it."""

from __future__ import annotations

from typing import Any

import orjson

from adapters.openai_common.conformance import error_body
from gateway.core.conformance import Answer, Violation, json_type, preview, sse_head, sse_json_frames

RESPONSE_FIELDS = ("id", "object", "created_at", "completed_at", "status", "incomplete_details", "model",
                   "previous_response_id", "instructions", "output", "error", "tools", "tool_choice", "truncation",
                   "parallel_tool_calls", "text", "top_p", "presence_penalty", "frequency_penalty", "top_logprobs",
                   "temperature", "reasoning", "usage", "max_output_tokens", "max_tool_calls", "store", "background",
                   "service_tier", "metadata", "safety_identifier", "prompt_cache_key")
"""What the schema's `ResponseResource` requires (nullable ones included)."""
TERMINAL = frozenset({"response.completed", "response.failed", "response.incomplete"})
ITEM_DELTAS = frozenset({"response.output_text.delta", "response.function_call_arguments.delta",
                         "response.reasoning.delta", "response.content_part.added", "response.output_text.done",
                         "response.content_part.done", "response.function_call_arguments.done",
                         "response.reasoning.done", "response.reasoning_summary_part.added",
                         "response.reasoning_summary_text.delta", "response.reasoning_summary_text.done",
                         "response.reasoning_summary_part.done"})


def judge(answer: Answer) -> list[Violation]:
    if not 200 <= answer.status < 300:
        return error_body(answer, "an error object")
    content_type = answer.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type == "application/json":
        return _body(answer)
    found = sse_head(answer)
    state = _Stream()
    for index, data, value in sse_json_frames(answer, found):
        for rule, message in state.frame(value):
            found.append(Violation(rule, message, preview(data), index))
    if state.terminal is None and not state.errored:
        found.append(Violation("no-terminal-event", "the stream ended without response.completed, failed or "
                                                    "incomplete"))
    if not state.done:
        found.append(Violation("convention-done", "Open Responses ends a stream with data: [DONE]"))
    return found[:20]


class _Stream:
    __slots__ = ("done", "errored", "items", "last", "started", "terminal")

    def __init__(self) -> None:
        self.last = -1
        self.started = False
        self.terminal: str | None = None
        self.errored = False
        self.done = False
        self.items: dict[str, bool] = {}
        """Item ids added: whether they are done."""

    def frame(self, value: object) -> list[tuple[str, str]]:
        if value == "[DONE]":
            self.done = True
            return [] if self.terminal is not None else [("done-before-terminal",
                                                          "[DONE] before the response's terminal event")]
        if not isinstance(value, dict) or not isinstance(value.get("type"), str):
            return [("event", f"each event is a JSON object with a type, got {json_type(value)}")]
        kind = value["type"]
        found = []
        number = value.get("sequence_number")
        if not isinstance(number, int) or isinstance(number, bool) or number <= self.last:
            found.append(("sequence-number", f"sequence_number must be an integer above {self.last}, got "
                                             f"{number!r}"))
        else:
            self.last = number
        if self.terminal is not None:
            return [*found, ("after-terminal", f"{kind} after {self.terminal}")]
        if not self.started and kind not in ("response.created", "error"):
            found.append(("created-first", f"the first event is response.created, not {kind}"))
        self.started = True
        if kind in ("response.created", "response.in_progress", *TERMINAL):
            found += _response(value.get("response"), kind)
            if kind in TERMINAL:
                self.terminal = kind
        elif kind in ("response.output_item.added", "response.output_item.done"):
            found += self._item(kind, value)
        elif kind in ITEM_DELTAS:
            item_id = value.get("item_id")
            if not isinstance(item_id, str) or self.items.get(item_id) is not False:
                found.append(("item-not-open", f"{kind} for item {item_id!r}, which is not open"))
        elif kind == "error":
            self.errored = True
            error = value.get("error")
            if not isinstance(error, dict) or not isinstance(error.get("message"), str):
                found.append(("error-event", "an error event carries error: {type, code, message, param}"))
        return found

    def _item(self, kind: str, value: dict[str, Any]) -> list[tuple[str, str]]:
        item = value.get("item")
        if not isinstance(value.get("output_index"), int) or not isinstance(item, dict) \
                or not isinstance(item.get("id"), str) or not isinstance(item.get("type"), str):
            return [("item", f"{kind} carries output_index and an item with its id and type")]
        if kind.endswith("added"):
            if item["id"] in self.items:
                return [("item-added-twice", f"item {item['id']} was already added")]
            self.items[item["id"]] = False
        elif self.items.get(item["id"]) is not False:
            return [("item-not-open", f"item {item['id']} is done without being open")]
        else:
            self.items[item["id"]] = True
        return []


def _response(response: Any, where: str) -> list[tuple[str, str]]:
    if not isinstance(response, dict):
        return [("response-object", f"{where} carries the response object")]
    missing = [key for key in RESPONSE_FIELDS if key not in response]
    found = [("response-fields", f"the response lacks {', '.join(missing)}")] if missing else []
    if response.get("object") != "response" or not isinstance(response.get("output"), list):
        found.append(("response-object", "a response has object 'response' and an output array"))
    usage = response.get("usage")
    if usage is not None and not _usage(usage):
        found.append(("usage", "usage holds input_tokens, output_tokens, total_tokens, "
                               "input_tokens_details.cached_tokens and output_tokens_details.reasoning_tokens as "
                               "integers"))
    return found


def _usage(usage: Any) -> bool:
    """The schema's `Usage`: every count and both details required."""
    if not isinstance(usage, dict):
        return False
    inputs, outputs = usage.get("input_tokens_details"), usage.get("output_tokens_details")
    counts = [usage.get("input_tokens"), usage.get("output_tokens"), usage.get("total_tokens"),
              inputs.get("cached_tokens") if isinstance(inputs, dict) else None,
              outputs.get("reasoning_tokens") if isinstance(outputs, dict) else None]
    return all(isinstance(c, int) and not isinstance(c, bool) for c in counts)


def _body(answer: Answer) -> list[Violation]:
    try:
        value = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        return [Violation("json", "the reply is not JSON", preview(answer.body), 0)]
    return [Violation(rule, message, preview(answer.body), 0) for rule, message in _response(value, "the body")]
