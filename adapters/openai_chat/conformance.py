"""The rules an OpenAI client holds a Chat Completions reply to: the published schemas of `chat.completion.chunk`
(`CreateChatCompletionStreamResponse`) and `chat.completion` (`CreateChatCompletionResponse`) in OpenAI's OpenAPI
document, and what the `openai` SDKs' stream accumulators need (each tool call's first piece names its id and
function; a choice finishes once). An `error` frame is the dialect's own way for a stream to fail (the SDKs raise
it); an error status needs an OpenAI error object."""

from __future__ import annotations

from typing import Any

import orjson

from adapters.openai_common.conformance import error_body
from gateway.core.conformance import Answer, Violation, json_type, preview, sse_head, sse_json_frames

FINISH_REASONS = frozenset({"stop", "length", "tool_calls", "content_filter", "function_call"})


def judge(answer: Answer) -> list[Violation]:
    content_type = answer.headers.get("content-type", "").split(";")[0].strip().lower()
    if not 200 <= answer.status < 300:
        return error_body(answer, "an OpenAI error object")
    if content_type == "application/json":
        return _completion(answer)
    found = sse_head(answer)
    frames = sse_json_frames(answer, found)
    state = _Stream()
    for index, data, value in frames:
        if state.done:
            found.append(Violation("after-done", "nothing may follow data: [DONE]", preview(data), index))
            break
        for rule, message in state.frame(value):
            found.append(Violation(rule, message, preview(data), index))
    if not state.done:
        found.append(Violation("convention-done", "an OpenAI stream ends with data: [DONE]"))
    if not state.finished and not state.failed:
        found.append(Violation("no-finish-reason", "the stream ended without a choice's finish_reason (or an error)"))
    return found[:20]


class _Stream:
    __slots__ = ("calls", "done", "failed", "finished")

    def __init__(self) -> None:
        self.calls: set[int] = set()
        self.finished = False
        self.failed = False
        self.done = False

    def frame(self, value: object) -> list[tuple[str, str]]:
        if value == "[DONE]":
            self.done = True
            return []
        if not isinstance(value, dict):
            return [("chunk", f"a chunk is a JSON object, got {json_type(value)}")]
        if "error" in value:
            self.failed = True
            error = value["error"]
            if not isinstance(error, dict) or not isinstance(error.get("message"), str):
                return [("error-object", "an error frame holds {error: {message, type, param, code}}")]
            return []
        if self.failed or (self.finished and value.get("choices")):
            return [("after-end", "a chunk with choices after the stream finished or failed")]
        return self._chunk(value)

    def _chunk(self, chunk: dict[str, Any]) -> list[tuple[str, str]]:
        found = []
        if chunk.get("object") != "chat.completion.chunk":
            found.append(("chunk-object", f"object must be 'chat.completion.chunk', got {chunk.get('object')!r}"))
        for key, kind in (("id", str), ("model", str), ("created", int)):
            if not isinstance(chunk.get(key), kind) or isinstance(chunk.get(key), bool):
                found.append(("chunk-field", f"{key} must be a {kind.__name__}, got {json_type(chunk.get(key))}"))
        choices = chunk.get("choices")
        if not isinstance(choices, list):
            return [*found, ("chunk-field", f"choices must be an array, got {json_type(choices)}")]
        usage = chunk.get("usage")
        if usage is not None:
            found += _usage(usage)
        for choice in choices:
            found += self._choice(choice)
        return found

    def _choice(self, choice: Any) -> list[tuple[str, str]]:
        if not isinstance(choice, dict) or not isinstance(choice.get("index"), int):
            return [("choice", "each choice is an object with an integer index")]
        found = []
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return [("delta", f"choices[].delta must be an object, got {json_type(delta)}")]
        for key in ("content", "refusal", "reasoning_content"):
            if delta.get(key) is not None and not isinstance(delta[key], str):
                found.append(("delta", f"delta.{key} must be a string or null, got {json_type(delta[key])}"))
        for call in delta.get("tool_calls") or ():
            found += self._call(call)
        reason = choice.get("finish_reason")
        if reason is not None:
            if reason not in FINISH_REASONS:
                found.append(("finish-reason", f"finish_reason must be one of {sorted(FINISH_REASONS)}, got "
                                               f"{reason!r}"))
            self.finished = True
        return found

    def _call(self, call: Any) -> list[tuple[str, str]]:
        if not isinstance(call, dict) or not isinstance(call.get("index"), int):
            return [("tool-call", "each delta.tool_calls[] names its integer index")]
        function = call.get("function")
        if call["index"] not in self.calls:
            self.calls.add(call["index"])
            if not isinstance(call.get("id"), str) or not isinstance(function, dict) \
                    or not isinstance(function.get("name"), str):
                return [("tool-call-start", "a tool call's first piece names its id and function.name")]
        if isinstance(function, dict) and function.get("arguments") is not None \
                and not isinstance(function["arguments"], str):
            return [("tool-call-arguments", "function.arguments is a string of JSON, streamed in pieces")]
        return []


def _completion(answer: Answer) -> list[Violation]:
    body = preview(answer.body)
    try:
        value = orjson.loads(answer.body)
    except orjson.JSONDecodeError:
        return [Violation("json", "the reply is not JSON", body, 0)]
    if not isinstance(value, dict) or value.get("object") != "chat.completion":
        return [Violation("completion-object", "a one-body reply is a chat.completion object", body, 0)]
    choices = value.get("choices")
    if not isinstance(choices, list) or not choices:
        return [Violation("completion-choices", "a chat.completion has at least one choice", body, 0)]
    found = []
    for choice in choices:
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            found.append(Violation("completion-message", "each choice holds the assistant's message", body, 0))
        elif message.get("content") is not None and not isinstance(message["content"], str):
            found.append(Violation("completion-message", "message.content is a string or null", body, 0))
        if isinstance(choice, dict) and choice.get("finish_reason") not in FINISH_REASONS:
            found.append(Violation("finish-reason", "each choice has a finish_reason", body, 0))
    if value.get("usage") is not None:  # optional: an agent that counted nothing reports nothing
        found += [Violation(rule, message, body, 0) for rule, message in _usage(value["usage"])]
    return found


def _usage(usage: Any) -> list[tuple[str, str]]:
    """`CompletionUsage`: three counts, and the details of two of them (reasoning and cached tokens) as objects of
    counts."""
    if not (isinstance(usage, dict) and all(
            isinstance(usage.get(k), int) for k in ("prompt_tokens", "completion_tokens", "total_tokens"))):
        return [("usage", "usage holds prompt_tokens, completion_tokens and total_tokens as integers")]
    for key in ("prompt_tokens_details", "completion_tokens_details"):
        details = usage.get(key)
        if details is not None and not (isinstance(details, dict) and all(
                isinstance(v, int) and not isinstance(v, bool) for v in details.values())):
            return [("usage-details", f"usage.{key} is an object of token counts (integers)")]
    return []
