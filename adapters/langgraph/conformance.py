"""LangGraph's rules for a run stream, from the server's published API schema (`openapi.json` of `langgraph-api`:
`RunCreateStateful.stream_mode`, `Interrupt`) and how its SDKs read a stream (`langgraph-sdk`'s `SSEDecoder` and
`StreamPart`, `@langchain/langgraph-sdk`'s `useStream`): every frame named by its stream mode, its data JSON; a
`metadata` frame naming the run first; `messages` as `[message, metadata]` tuples of typed messages; interrupts
with a `value`; nothing after the run's `error`. `tests/adapters/langgraph/test_judge.py` holds the judge to the
schema."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.conformance import MAX_VIOLATIONS, Answer, Violation, json_type, preview, sse_head
from gateway.core.sse import SSEEventDecoder

FRAMES = frozenset({"metadata", "values", "updates", "messages", "messages/partial", "messages/complete",
                    "messages/metadata", "custom", "events", "debug", "tasks", "checkpoints", "error", "end",
                    "feedback"})
"""The frame names a run stream holds: the stream modes of `RunCreateStateful.stream_mode`, the `messages` mode's
partial, complete and metadata frames, and the run's own."""
MESSAGE_TYPES = frozenset({"human", "ai", "tool", "system", "function", "remove", "AIMessageChunk",
                           "HumanMessageChunk", "ToolMessageChunk", "SystemMessageChunk", "FunctionMessageChunk"})


def judge(answer: Answer) -> list[Violation]:
    found = sse_head(answer)
    decoder = SSEEventDecoder(max_frame=len(answer.body) + 1)
    frames = decoder.feed(answer.body) + decoder.flush()
    ended: int | None = None
    for index, frame in enumerate(frames):
        if len(found) >= MAX_VIOLATIONS:
            break
        shown = preview(frame.data)
        try:
            value = orjson.loads(frame.data)
        except orjson.JSONDecodeError:
            found.append(Violation("json", "an event's data is not JSON", shown, index))
            continue
        mode = frame.event.partition("|")[0]
        if ended is not None:
            found.append(Violation("frame-after-error", f"a `{frame.event}` frame after the run's error: the "
                                   "SDKs stop reading there", shown, index))
            continue
        if index == 0 and mode != "metadata":
            found.append(Violation("metadata-first", "a run stream begins with a `metadata` frame naming the run "
                                   "(`run_id`), which the SDKs read the run's id from", shown, index))
        if mode not in FRAMES:
            found.append(Violation("frame-name", f"`{frame.event or '(unnamed)'}` is not a stream mode: each frame "
                                   f"is named by one ({', '.join(sorted(FRAMES))})", shown, index))
            continue
        found += [Violation(rule, message, shown, index) for rule, message in _frame(mode, value)]
        if mode == "error":
            ended = index
    return found[:MAX_VIOLATIONS]


def _frame(mode: str, value: Any) -> list[tuple[str, str]]:
    if mode == "metadata":
        if not isinstance(value, dict) or not isinstance(value.get("run_id"), str):
            return [("metadata-run-id", "`metadata` is an object with the run's `run_id` as a string")]
    elif mode == "messages":
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[1], dict)):
            return [("messages-tuple", f"a `messages` frame is a [message, metadata] pair, not {json_type(value)}")]
        return _message(value[0])
    elif mode in ("messages/partial", "messages/complete"):
        if not isinstance(value, list):
            return [("messages-list", f"`{mode}` is a list of messages, not {json_type(value)}")]
        return [problem for message in value for problem in _message(message)]
    elif mode in ("values", "updates"):
        if not isinstance(value, dict | list):
            return [(f"{mode}-object", f"`{mode}` is the graph's state (an object), not {json_type(value)}")]
        if isinstance(value, dict) and "__interrupt__" in value:
            return _interrupts(value["__interrupt__"])
    elif mode == "error" and not (isinstance(value, dict) and isinstance(value.get("message"), str)):
        return [("error-message", "`error` is an object whose `message` says what failed")]
    return []


def _message(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, dict) or value.get("type") not in MESSAGE_TYPES:
        return [("message-type", "a message is an object whose `type` is one of "
                 f"{', '.join(sorted(MESSAGE_TYPES))}")]
    content = value.get("content")
    if not isinstance(content, str | list):
        return [("message-content", f"a message's `content` is a string or a list of blocks, not "
                 f"{json_type(content)}")]
    if value["type"] in ("tool", "ToolMessageChunk") and not isinstance(value.get("tool_call_id"), str):
        return [("tool-call-id", "a tool message names the call it answers (`tool_call_id`)")]
    return []


def _interrupts(value: Any) -> list[tuple[str, str]]:
    if not isinstance(value, list):
        return [("interrupts-list", f"`__interrupt__` is a list of interrupts, not {json_type(value)}")]
    problems = []
    for item in value:
        if not isinstance(item, dict) or "value" not in item:
            problems.append(("interrupt-value", "an interrupt is an object with its `value` (`Interrupt`)"))
        elif item.get("id") is not None and not isinstance(item["id"], str):
            problems.append(("interrupt-id", "an interrupt's `id` is a string"))
    return problems
