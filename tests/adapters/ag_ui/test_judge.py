"""The AG-UI judge against the real `@ag-ui/client` 1.0.0: for every stream, valid or broken on purpose, the judge
finds no violation exactly when the client runs it with no error, no warning and a terminal event; and for each
broken stream the judge names the rule and the frame that broke it."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from helpers import decode, encode, fixture_dialect, fixtures, read_fixture, sse_payloads
from node_clients import AguiResult, node_clients_available, verify_agui

from adapters.ag_ui.conformance import judge
from gateway.core.conformance import MAX_VIOLATIONS, PREVIEW, Answer, Violation, preview
from gateway.core.events import (
    Data,
    Event,
    Interrupt,
    MessagesSnapshot,
    Raw,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.turn import ContentPart, Message, ToolCall

SSE = {"content-type": "text/event-stream"}
START = {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"}
FINISH = {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"}


def sse(*frames: dict[str, Any] | str) -> bytes:
    """One `data:` frame per item; a string goes out as it is, to break the JSON."""
    return b"".join(b"data: " + (f if isinstance(f, str) else json.dumps(f)).encode() + b"\n\n" for f in frames)


def run(*frames: dict[str, Any] | str) -> bytes:
    """A run around the frames: RUN_STARTED is frame 0, so the first frame given is frame 1."""
    return sse(START, *frames, FINISH)


def ev(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, **fields}


def text(mid: str = "m1", delta: str = "hi", **extra: Any) -> list[dict[str, Any]]:
    return [ev("TEXT_MESSAGE_START", messageId=mid, role="assistant", **extra),
            ev("TEXT_MESSAGE_CONTENT", messageId=mid, delta=delta, **extra),
            ev("TEXT_MESSAGE_END", messageId=mid, **extra)]


def tool(call: str = "c1", name: str = "lookup", parent: str = "m1", **extra: Any) -> list[dict[str, Any]]:
    return [ev("TOOL_CALL_START", toolCallId=call, toolCallName=name, parentMessageId=parent, **extra),
            ev("TOOL_CALL_ARGS", toolCallId=call, delta='{"q":1}', **extra),
            ev("TOOL_CALL_END", toolCallId=call, **extra)]


def answer(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, SSE if headers is None else headers, body)


def verdict(body: bytes) -> list[Violation]:
    return judge(answer(body))


def encoded(events: list[Event]) -> bytes:
    """Our encoder's stream for a run of these events."""
    ending = [] if isinstance(events[-1], RunFinished | RunError) else [RunFinished()]
    return encode("ag-ui", [RunStarted(thread_id="t1", run_id="r1"), *events, *ending])


# ------------------------------------------------------------------------------------------------- the corpus

VALID: dict[str, bytes] = {
    "text": run(*text()),
    "text-no-role-and-timestamps": run(ev("TEXT_MESSAGE_START", messageId="m1", timestamp=1700000000000),
                                       ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="", timestamp=1.0),
                                       ev("TEXT_MESSAGE_END", messageId="m1", metadata={"k": None})),
    "interleaved-messages": run(ev("TEXT_MESSAGE_START", messageId="a"), ev("TEXT_MESSAGE_START", messageId="b"),
                                ev("TEXT_MESSAGE_CONTENT", messageId="b", delta="x"),
                                ev("TEXT_MESSAGE_END", messageId="a"), ev("TEXT_MESSAGE_END", messageId="b")),
    "message-id-reused-after-end": run(*text(), *text()),
    "tool-call-and-result": run(*text(), *tool(),
                                ev("TOOL_CALL_RESULT", messageId="r1", toolCallId="c1", content="42", role="tool")),
    "tool-result-parts": run(*text(), *tool(), ev("TOOL_CALL_RESULT", messageId="r1", toolCallId="c1", content=[
        {"type": "text", "text": "ok"},
        {"type": "image", "source": {"type": "url", "value": "https://x/y.png"}},
        {"type": "document", "source": {"type": "data", "value": "aGk=", "mimeType": "text/plain"}}])),
    "tool-result-for-unknown-call": run(ev("TOOL_CALL_RESULT", messageId="r1", toolCallId="nope", content="?")),
    "tool-call-reopened-same-name": run(*text(), *tool(), *tool()),
    "reasoning": run(ev("REASONING_START", messageId="r1"),
                     ev("REASONING_MESSAGE_START", messageId="r1", role="reasoning"),
                     ev("REASONING_MESSAGE_CONTENT", messageId="r1", delta="hmm"),
                     ev("REASONING_MESSAGE_END", messageId="r1"),
                     ev("REASONING_ENCRYPTED_VALUE", subtype="message", entityId="r1", encryptedValue="zz"),
                     ev("REASONING_END", messageId="r1")),
    "state": run(ev("STATE_SNAPSHOT", snapshot={"n": 1, "items": []}),
                 ev("STATE_DELTA", delta=[{"op": "replace", "path": "/n", "value": 2},
                                          {"op": "add", "path": "/items/-", "value": "a"},
                                          {"op": "test", "path": "/n", "value": 2},
                                          {"op": "remove", "path": "/items/0", "value": "ignored"}]),
                 ev("STATE_SNAPSHOT", snapshot=None)),
    "state-delta-on-fresh-state": run(ev("STATE_DELTA", delta=[{"op": "add", "path": "/n", "value": 1}])),
    "steps-custom-raw": run(ev("STEP_STARTED", stepName="plan"), ev("CUSTOM", name="x", value=None),
                            ev("RAW", event={"anything": [1]}, source="openai"), ev("STEP_FINISHED", stepName="plan")),
    "activity": run(ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="plan", content={"steps": []}),
                    ev("ACTIVITY_DELTA", messageId="a1", activityType="plan",
                       patch=[{"op": "add", "path": "/steps/-", "value": "s"}]),
                    ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="plan", content={}, replace=False)),
    "messages-snapshot": run(ev("MESSAGES_SNAPSHOT", messages=[
        {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"id": "a1", "role": "assistant", "toolCalls": [
            {"id": "c9", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"id": "t1", "role": "tool", "toolCallId": "c9", "content": "ok"},
        {"id": "s1", "role": "system", "content": "be brief"},
        {"id": "d1", "role": "developer", "content": "dev"},
        {"id": "x1", "role": "activity", "activityType": "p", "content": {}},
        {"id": "z1", "role": "reasoning", "content": "thought"}]),
        ev("TOOL_CALL_START", toolCallId="c2", toolCallName="g", parentMessageId="a1"),
        ev("TOOL_CALL_END", toolCallId="c2")),
    "run-started-with-input": sse(dict(START, protocolVersion="1.0", parentRunId="p0", input={
        "threadId": "t1", "runId": "r1", "messages": [{"id": "u1", "role": "user", "content": "hi"}],
        "state": None, "tools": [{"name": "f", "description": "d", "parameters": {}}],
        "context": [{"description": "c", "value": "v"}], "forwardedProps": {},
        "resume": [{"interruptId": "i1", "status": "resolved", "payload": 1}]}), FINISH),
    "older-protocol-version": sse(dict(START, protocolVersion="0.9"), FINISH),
    "interrupt-outcome": sse(START, dict(FINISH, outcome={"type": "interrupt", "interrupts": [
        {"id": "i1", "reason": "approval", "toolCallId": "c1", "responseSchema": {"type": "object"}}]})),
    "success-outcome-and-usage": sse(START, dict(FINISH, result={"a": 1}, outcome={
        "type": "success", "pendingToolCallIds": ["c1"]}, usage=[{"model": "m", "inputTokens": 3}])),
    "cancelled-outcome": sse(START, dict(FINISH, outcome={"type": "cancelled"})),
    "run-error-only": sse(ev("RUN_ERROR", message="boom", code="E1")),
    "run-error-mid-run": run(ev("TEXT_MESSAGE_START", messageId="m1"), ev("RUN_ERROR", message="boom"))[
        :-len(sse(FINISH))],
    "run-error-after-finished": sse(START, FINISH, ev("RUN_ERROR", message="late")),
    "two-runs": sse(START, *text(), FINISH, dict(START, runId="r2"), *text(), dict(FINISH, runId="r2")),
    "new-run-after-error": sse(START, ev("RUN_ERROR", message="x"), START, FINISH),
    "text-chunks": run(ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a"), ev("TEXT_MESSAGE_CHUNK", delta="b"),
                       ev("TEXT_MESSAGE_CHUNK", messageId="m1", role="assistant", delta="c"),
                       ev("TEXT_MESSAGE_CHUNK", messageId="m2", delta="d")),
    "tool-and-reasoning-chunks": run(
        ev("REASONING_MESSAGE_CHUNK", messageId="r1", delta="think"), ev("REASONING_MESSAGE_CHUNK", delta="ing"),
        ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a"),
        ev("TOOL_CALL_CHUNK", toolCallId="c1", toolCallName="f", parentMessageId="m1", delta="{"),
        ev("TOOL_CALL_CHUNK", delta="}", metadata={"k": 1}), ev("TOOL_CALL_CHUNK", metadata={"done": True}),
        ev("STEP_STARTED", stepName="s"), ev("STEP_FINISHED", stepName="s")),
    "subagents": run(
        ev("SUBAGENT_STARTED", subagentRunId="s1", name="researcher"),
        ev("SUBAGENT_STARTED", subagentRunId="s2", name="helper", parentSubagentRunId="s1"),
        *text("m1", subagentRunId="s2"), ev("STEP_STARTED", stepName="tools"),
        ev("STEP_STARTED", stepName="tools", subagentRunId="s1"), ev("STEP_FINISHED", stepName="tools"),
        ev("STEP_FINISHED", stepName="tools", subagentRunId="s1"),
        ev("TEXT_MESSAGE_CHUNK", messageId="m2", delta="x", subagentRunId="s1"),
        ev("SUBAGENT_FINISHED", subagentRunId="s2", outcome={"type": "suspended", "interruptIds": ["i"]}),
        ev("SUBAGENT_ERROR", subagentRunId="s1", message="failed")),
    "framing-variants": (b": ping\n\nevent: message\nid: 1\ndata:" + json.dumps(START).encode() + b"\n\n"
                         b"data: {\"type\":\ndata: \"TEXT_MESSAGE_START\", \"messageId\": \"m1\"}\n\n"
                         b"retry: 10\n\n" + sse(ev("TEXT_MESSAGE_END", messageId="m1")) + b"data: "
                         + json.dumps(FINISH).encode()),
    "crlf-inside-comment-line": b": ping\r\n" + run(),
}

INTERRUPTED = [TextStart("m1"), TextDelta("m1", "Shall I?"), TextEnd("m1"),
               ToolCallStart("c1", "approve", parent_message_id="m1"), ToolCallArgs("c1", "{}"), ToolCallEnd("c1"),
               Interrupt("i1", reason="approval", message="ok?", payload={"x": 1}, tool_call_id="c1"),
               RunFinished(outcome="interrupt")]
ENCODED: dict[str, list[Event]] = {
    "text": [TextStart("m1"), TextDelta("m1", "Hello"), TextEnd("m1")],
    "tool-calls": [ToolCallStart("c1", "weather"), ToolCallArgs("c1", '{"city":"Paris"}'), ToolCallEnd("c1"),
                   ToolResult("c1", {"temp": 20}, message_id="r1"), TextStart("m2"), TextDelta("m2", "20C"),
                   TextEnd("m2")],
    "client-tool-pending": [TextStart("m1"), ToolCallStart("c1", "ask_user", parent_message_id="m1"),
                            ToolCallEnd("c1"), TextEnd("m1")],
    "reasoning": [ReasoningStart("r1"), ReasoningDelta("r1", "hmm"), ReasoningEnd("r1"), TextStart("m1"),
                  TextDelta("m1", "so"), TextEnd("m1")],
    "state": [StateSnapshot({"count": 0}), StateDelta([{"op": "replace", "path": "/count", "value": 1}])],
    "steps-data-raw-usage": [StepStarted(name="plan"), Data("progress", {"pct": 50}),
                             Raw("vercel", event={"type": "x"}), StepFinished(name="plan"),
                             Usage(input_tokens=10, output_tokens=5, total_tokens=15, model="m", provider="p")],
    "messages-snapshot": [MessagesSnapshot([
        Message("user", "hi", "u1"),
        Message("user", [ContentPart("text", text="look"), ContentPart("image", url="https://x/a.png")], "u2"),
        Message("assistant", "", "a1", [ToolCall("c1", "f", "{}")]),
        Message("tool", "done", "t1", tool_call_id="c1")])],
    "interrupt": INTERRUPTED,
    "error": [TextStart("m1"), TextDelta("m1", "par"), RunError("model overloaded", code="overloaded")],
}

# name -> (body, rule of the first violation, frame of the first violation)
BROKEN: dict[str, tuple[bytes, str, int | None]] = {
    "content-before-start": (run(ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="x")),
                             "text-content-without-start", 1),
    "end-without-start": (run(ev("TEXT_MESSAGE_END", messageId="m1")), "text-end-without-start", 1),
    "content-after-end": (run(*text(), ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="late")),
                          "text-content-without-start", 4),
    "duplicate-text-start": (run(ev("TEXT_MESSAGE_START", messageId="m1"), *text()), "text-start-duplicate", 2),
    "args-before-start": (run(ev("TOOL_CALL_ARGS", toolCallId="c1", delta="{}")), "tool-call-args-without-start", 1),
    "tool-end-without-start": (run(ev("TOOL_CALL_END", toolCallId="c1")), "tool-call-end-without-start", 1),
    "duplicate-tool-start": (run(*text(), tool()[0], *tool()), "tool-call-start-duplicate", 5),
    "reasoning-content-before-start": (run(ev("REASONING_MESSAGE_CONTENT", messageId="r1", delta="x")),
                                       "reasoning-message-content-without-start", 1),
    "reasoning-end-without-start": (run(ev("REASONING_END", messageId="r1")), "reasoning-span-end-without-start", 1),
    "duplicate-reasoning-span": (run(ev("REASONING_START", messageId="r1"), ev("REASONING_START", messageId="r1"),
                                     ev("REASONING_END", messageId="r1")), "reasoning-span-start-duplicate", 2),
    "duplicate-step": (run(ev("STEP_STARTED", stepName="s"), ev("STEP_STARTED", stepName="s")),
                       "step-start-duplicate", 2),
    "step-finished-without-start": (run(ev("STEP_FINISHED", stepName="s")), "step-finished-without-start", 1),
    "step-finished-by-other-owner": (run(ev("STEP_STARTED", stepName="s"),
                                         ev("STEP_FINISHED", stepName="s", subagentRunId="x")),
                                     "step-owner-mismatch", 2),
    "first-event-not-run-started": (sse(*text(), FINISH), "first-event-not-run-started", 0),
    "event-after-run-finished": (sse(START, FINISH, ev("CUSTOM", name="x", value=1)), "event-after-run-finished", 2),
    "event-after-run-error": (sse(START, ev("RUN_ERROR", message="x"), FINISH), "event-after-run-error", 2),
    "run-started-twice": (sse(START, START, FINISH), "run-started-while-active", 1),
    "finished-with-open-message": (run(ev("TEXT_MESSAGE_START", messageId="m1")),
                                   "run-finished-with-open-text-messages", 2),
    "finished-with-open-tool-call": (run(*text(), tool()[0]), "run-finished-with-open-tool-calls", 5),
    "finished-with-open-step": (run(ev("STEP_STARTED", stepName="s")), "run-finished-with-open-steps", 2),
    "finished-with-open-reasoning": (run(ev("REASONING_MESSAGE_START", messageId="r", role="reasoning")),
                                     "run-finished-with-open-reasoning-messages", 2),
    "finished-with-open-subagent": (run(ev("SUBAGENT_STARTED", subagentRunId="s1", name="n")),
                                    "run-finished-with-open-subagents", 2),
    "no-terminal-event": (sse(START, *text()), "no-terminal-event", None),
    "empty-body": (b"", "no-terminal-event", None),
    "unknown-event-type": (run(ev("TEXT_MESSAGE_DELTA", messageId="m1", delta="x")), "unknown-event-type", 1),
    "missing-required-field": (run(ev("TEXT_MESSAGE_START", messageId="m1"), ev("TEXT_MESSAGE_CONTENT",
                                                                                messageId="m1")), "missing-field", 2),
    "snake-case-keys": (sse(ev("RUN_STARTED", thread_id="t1", run_id="r1"), FINISH), "unknown-field", 0),
    "wrong-field-type": (run(ev("TEXT_MESSAGE_START", messageId=7)), "invalid-field", 1),
    "role-not-in-enum": (run(*text(), ev("TEXT_MESSAGE_START", messageId="m2", role="tool")), "invalid-field", 4),
    "null-optional-field": (run(ev("TEXT_MESSAGE_START", messageId="m1", name=None)), "invalid-field", 1),
    "float-timestamp": (run(ev("CUSTOM", name="x", value=1, timestamp=1.5)), "invalid-field", 1),
    "empty-interrupts": (sse(START, dict(FINISH, outcome={"type": "interrupt", "interrupts": []})),
                         "invalid-field", 1),
    "bad-json-pointer": (run(ev("STATE_DELTA", delta=[{"op": "add", "path": "count", "value": 1}])),
                         "invalid-field", 1),
    "extra-unknown-key": (run(ev("CUSTOM", name="x", value=1, extra=True)), "unknown-field", 1),
    "unknown-message-role": (run(ev("MESSAGES_SNAPSHOT", messages=[{"id": "b", "role": "robot", "content": "x"}])),
                             "unknown-union-member", 1),
    "unknown-outcome": (sse(START, dict(FINISH, outcome={"type": "paused"})), "unknown-union-member", 1),
    "non-json-data": (run("{not json"), "json", 1),
    "done-marker": (run() + b"data: [DONE]\n\n", "json", 2),
    "crlf-framing": (run(*text()).replace(b"\n", b"\r\n"), "json", 0),
    "array-frame": (run("[1, 2]"), "event-not-object", 1),
    "frame-without-type": (run({"messageId": "m1"}), "event-without-type", 1),
    "null-raw-event": (run(ev("CUSTOM", name="x", value=1, rawEvent=None)), "legacy-null", 1),
    "null-parent-message-id": (run(*text(), dict(tool()[0], parentMessageId=None), *tool()[1:]), "legacy-null", 4),
    "null-outcome": (sse(START, dict(FINISH, outcome=None)), "legacy-null", 1),
    "thinking-events": (run(ev("THINKING_START", title="plan"), ev("THINKING_TEXT_MESSAGE_START"),
                            ev("THINKING_TEXT_MESSAGE_CONTENT", delta="x"), ev("THINKING_TEXT_MESSAGE_END"),
                            ev("THINKING_END")), "legacy-thinking", 1),
    "binary-content-part": (run(ev("MESSAGES_SNAPSHOT", messages=[{"id": "u1", "role": "user", "content": [
        {"type": "binary", "mimeType": "image/png", "data": "aGk="}]}])), "legacy-binary-content", 1),
    "first-chunk-without-id": (run(ev("TEXT_MESSAGE_CHUNK", delta="x")), "chunk-without-id", 1),
    "first-tool-chunk-without-name": (run(ev("TOOL_CALL_CHUNK", toolCallId="c1", delta="{}")),
                                      "chunk-without-name", 1),
    "chunk-changes-role": (run(ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a"),
                               ev("TEXT_MESSAGE_CHUNK", role="user", delta="b")), "chunk-conflict", 2),
    "chunk-changes-owner": (run(ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a"),
                                ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="b", subagentRunId="s1")),
                            "chunk-owner-mismatch", 2),
    "ambiguous-chunk": (run(ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a", subagentRunId="s1"),
                            ev("TEXT_MESSAGE_CHUNK", messageId="m2", delta="a", subagentRunId="s2"),
                            ev("TEXT_MESSAGE_CHUNK", delta="?")), "chunk-ambiguous", 3),
    "explicit-content-after-chunk": (run(ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a"),
                                         ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="b")),
                                     "text-content-without-start", 2),
    "explicit-end-after-chunk": (run(ev("TEXT_MESSAGE_CHUNK", messageId="m1", delta="a"),
                                     ev("TEXT_MESSAGE_END", messageId="m1")), "text-end-without-start", 2),
    "tool-chunk-continued-after-a-step": (run(ev("TOOL_CALL_CHUNK", toolCallId="c1", toolCallName="f", delta="{"),
                                              ev("STEP_STARTED", stepName="s"), ev("TOOL_CALL_CHUNK", delta="}"),
                                              ev("STEP_FINISHED", stepName="s")), "chunk-without-id", 3),
    "content-from-another-subagent": (run(ev("TEXT_MESSAGE_START", messageId="m1"),
                                          ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="x", subagentRunId="s1"),
                                          ev("TEXT_MESSAGE_END", messageId="m1")), "subagent-owner-mismatch", 2),
    "tool-call-owner-vs-parent": (run(*text(), dict(tool()[0], subagentRunId="s9"), *tool()[1:]),
                                  "subagent-owner-mismatch", 4),
    "duplicate-subagent": (run(ev("SUBAGENT_STARTED", subagentRunId="s1", name="n"),
                               ev("SUBAGENT_STARTED", subagentRunId="s1", name="n")), "subagent-start-duplicate", 2),
    "subagent-id-reused": (run(ev("SUBAGENT_STARTED", subagentRunId="s1", name="n"),
                               ev("SUBAGENT_FINISHED", subagentRunId="s1"),
                               ev("SUBAGENT_STARTED", subagentRunId="s1", name="n")), "subagent-id-reused", 3),
    "subagent-unknown-parent": (run(ev("SUBAGENT_STARTED", subagentRunId="s1", name="n", parentSubagentRunId="p")),
                                "subagent-parent-unknown", 1),
    "subagent-finished-without-start": (run(ev("SUBAGENT_FINISHED", subagentRunId="s1")),
                                        "subagent-end-without-start", 1),
    "newer-protocol-version": (sse(dict(START, protocolVersion="2.0"), FINISH), "protocol-version", 0),
    "uninterpretable-protocol-version": (sse(dict(START, protocolVersion="v1"), FINISH), "protocol-version", 0),
    "state-delta-does-not-apply": (run(ev("STATE_DELTA", delta=[{"op": "replace", "path": "/n", "value": 1}])),
                                   "state-patch-failed", 1),
    "tool-call-renamed": (run(*text(), *tool(), *tool(name="other")), "tool-call-renamed", 7),
    "tool-call-parent-is-a-tool-result": (run(*text(), *tool(), ev("TOOL_CALL_RESULT", messageId="r1",
                                                                   toolCallId="c1", content="x"),
                                              *tool("c2", parent="r1")), "tool-call-parent-not-assistant", 8),
    "content-after-snapshot-dropped-message": (run(ev("TEXT_MESSAGE_START", messageId="m1"),
                                                   ev("MESSAGES_SNAPSHOT", messages=[]),
                                                   ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="x"),
                                                   ev("TEXT_MESSAGE_END", messageId="m1")), "message-not-found", 3),
    "args-after-snapshot-dropped-call": (run(*text(), tool()[0], ev("MESSAGES_SNAPSHOT", messages=[]),
                                             *tool()[1:]), "tool-call-not-found", 6),
    "text-on-activity-id": (run(ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="p", content={}),
                                *text("a1")), "message-id-is-activity", 2),
    "activity-delta-on-text": (run(*text(), ev("ACTIVITY_DELTA", messageId="m1", activityType="p", patch=[])),
                               "activity-delta-not-activity", 4),
    "activity-patch-does-not-apply": (run(ev("ACTIVITY_SNAPSHOT", messageId="a1", activityType="p", content={}),
                                          ev("ACTIVITY_DELTA", messageId="a1", activityType="p",
                                             patch=[{"op": "remove", "path": "/gone"}])), "activity-patch-failed", 2),
}


def _objects(value: Any) -> list[dict[str, Any]]:
    if isinstance(value, dict):
        return [value, *(o for item in value.values() for o in _objects(item))]
    return [o for item in value for o in _objects(item)] if isinstance(value, list) else []


def mutants(count: int, seed: int = 1) -> dict[str, bytes]:
    """Seeded mutations of the valid streams: frames dropped, repeated or swapped, a field (at the top or deep inside)
    removed or set to a wrong, null or colliding value. Whatever the client makes of each, the judge must agree."""
    rng = random.Random(seed)
    values = [None, 0, 1.5, "", "m1", "c1", "s1", [], {}, True, "user", "tool", "binary", "/x", "RUN_FINISHED"]
    keys = ["messageId", "toolCallId", "subagentRunId", "role", "type", "metadata", "delta", "outcome", "content"]
    bases = [[json.loads(p) for p in sse_payloads(body)] for body in VALID.values()]
    out = {}
    for i in range(count):
        frames = copy.deepcopy(rng.choice(bases))
        for _ in range(rng.randint(1, 3)):
            at, roll = rng.randrange(len(frames)), rng.random()
            if roll < 0.15:
                del frames[at]
            elif roll < 0.3:
                frames.insert(at, copy.deepcopy(frames[at]))
            elif roll < 0.4:
                other = rng.randrange(len(frames))
                frames[at], frames[other] = frames[other], frames[at]
            else:
                target = rng.choice(_objects(frames[at]))
                key = rng.choice([*target, *keys])
                if roll < 0.55 and key in target:
                    del target[key]
                else:
                    target[key] = rng.choice(values)
            if not frames:
                break
        out[f"mutant:{i}"] = sse(*frames)
    return out


def corpus() -> dict[str, bytes]:
    streams = {f"valid:{name}": body for name, body in VALID.items()}
    streams |= {f"encoded:{name}": encoded(events) for name, events in ENCODED.items()}
    for name in fixtures():
        if fixture_dialect(name) == "ag-ui":
            streams[f"fixture:{name}"] = read_fixture(name)
        streams[f"translated:{name}"] = encode("ag-ui", decode(fixture_dialect(name), read_fixture(name)))
    streams |= {f"broken:{name}": body for name, (body, _, _) in BROKEN.items()}
    return streams | mutants(400)


CORPUS = corpus()


# ------------------------------------------------------------------------------------------------- against the client

needs_node = pytest.mark.skipif(not node_clients_available(),
                                reason="node or tests/clients/node_modules missing: npm ci --prefix tests/clients")


@pytest.fixture(scope="module")
def client_says() -> dict[str, AguiResult]:
    return verify_agui(CORPUS)  # one node process for the whole corpus


@needs_node
@pytest.mark.parametrize("name", [name for name in CORPUS if not name.startswith("mutant:")])
def test_judge_agrees_with_the_real_client(name: str, client_says: dict[str, AguiResult]) -> None:
    real = client_says[name]
    found = verdict(CORPUS[name])
    assert (not found) == real["ok"], (real["error"], real["warnings"], found)


@needs_node
def test_judge_agrees_with_the_real_client_on_mutants(client_says: dict[str, AguiResult]) -> None:
    disagree = {name: (client_says[name]["error"], client_says[name]["warnings"][:1], verdict(CORPUS[name])[:1])
                for name in CORPUS if name.startswith("mutant:")
                if (not verdict(CORPUS[name])) != client_says[name]["ok"]}
    assert not disagree
    accepted = sum(client_says[name]["ok"] for name in CORPUS if name.startswith("mutant:"))
    assert 0 < accepted < 400  # the mutants exercise both verdicts


@needs_node
def test_the_corpus_has_both_verdicts(client_says: dict[str, AguiResult]) -> None:
    accepted = {name for name, result in client_says.items() if result["ok"]}
    assert {f"valid:{n}" for n in VALID} | {f"encoded:{n}" for n in ENCODED} <= accepted
    assert not accepted & {f"broken:{n}" for n in BROKEN}


@pytest.mark.parametrize("name", BROKEN)
def test_each_broken_stream_is_caught_at_its_frame(name: str) -> None:
    body, rule, index = BROKEN[name]
    found = verdict(body)
    assert found, "the judge accepted a stream broken on purpose"
    assert (found[0].rule, found[0].index) == (rule, index), found
    if index is not None and b"\r" not in body:
        assert found[0].frame == preview(sse_payloads(body)[index])


@pytest.mark.parametrize("name", VALID)
def test_each_valid_stream_passes(name: str) -> None:
    assert verdict(VALID[name]) == []


# ------------------------------------------------------------------------------------------------- no node needed


def test_messages_say_what_broke_in_ag_ui_terms() -> None:
    [found] = verdict(run(ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="x"),
                          ev("TEXT_MESSAGE_END", messageId="m1")))
    assert found.message == "TEXT_MESSAGE_CONTENT for text message 'm1', which was never started (TEXT_MESSAGE_START)"
    [found] = verdict(run(*text(), ev("TEXT_MESSAGE_END", messageId="m1")))
    assert "which already ended (TEXT_MESSAGE_END)" in found.message
    [found] = verdict(run(ev("TEXT_MESSAGE_START", messageId="m1", role="bot"), *text()[1:]))
    assert found.message == ("TEXT_MESSAGE_START.role must be 'developer' or 'system' or 'assistant' or 'user', "
                             "got 'bot'")
    assert verdict(run(ev("STATE_DELTA", delta=[{"op": "add", "path": "/a", "value": 1, "from": 3}]))) == []
    [found] = verdict(run(ev("STATE_DELTA", delta=[{"op": "move", "path": "/a", "from": 3}])))
    assert (found.rule, found.message) == ("invalid-field", "STATE_DELTA.delta[0].from must be a string, got the "
                                                            "number 3")


def test_after_the_first_error_it_keeps_judging_each_frame() -> None:
    found = verdict(run(ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="a"),
                        ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="b"),
                        ev("TEXT_MESSAGE_END", messageId="m1"),
                        ev("CUSTOM", name="x", value=1, extra=1),
                        ev("TOOL_CALL_END", toolCallId="c1")))
    assert [(v.rule, v.index) for v in found] == [
        ("text-content-without-start", 1), ("unknown-field", 4), ("tool-call-end-without-start", 5)]


def test_a_repeated_complaint_is_made_once_and_the_list_is_capped() -> None:
    same = verdict(run(*(ev("CUSTOM", name="x", value=i, extra=1) for i in range(5))))
    assert [(v.rule, v.index) for v in same] == [("unknown-field", 1)]
    many = verdict(run(*(ev("CUSTOM", name="x", value=i, **{f"k{i}": 1}) for i in range(3 * MAX_VIOLATIONS))))
    assert len(many) == MAX_VIOLATIONS and [v.index for v in many] == list(range(1, MAX_VIOLATIONS + 1))


def test_a_long_frame_is_cut_in_the_report() -> None:
    found, *_ = verdict(run(ev("TEXT_MESSAGE_CONTENT", messageId="m1", delta="x" * 1000)))
    assert found.frame is not None and len(found.frame) == PREVIEW + 1 and found.frame.endswith("…")


def test_the_response_head() -> None:
    body = run(*text())
    assert [v.rule for v in judge(answer(body, 500))] == ["status"]  # the client reads no further than the status
    assert [v.rule for v in judge(answer(body, headers={"content-type": "application/json"}))] == [
        "convention-content-type"]
    assert judge(answer(body, headers={"content-type": "text/event-stream; charset=utf-8"})) == []


def test_crlf_and_done_are_explained() -> None:
    [crlf, *_] = verdict(run(*text()).replace(b"\n", b"\r\n"))
    assert "CR line ends" in crlf.message
    [done] = verdict(run() + b"data: [DONE]\n\n")
    assert "[DONE]" in done.message and "RUN_FINISHED" in done.message


def test_a_stream_may_stop_at_a_terminal_event_without_a_blank_line() -> None:
    assert verdict(run(*text())[:-2]) == []
    assert verdict(run(*text())[:-1]) == []


def test_an_id_less_thinking_continuation_names_the_id_the_client_invents() -> None:
    found = verdict(run(ev("THINKING_TEXT_MESSAGE_CONTENT", delta="x")))
    assert [v.rule for v in found[:3]] == ["legacy-thinking", "legacy-thinking",
                                           "reasoning-message-content-without-start"]
    assert "'thinking-1'" in found[1].message and "'thinking-1'" in found[2].message


def test_the_judge_reads_what_our_encoder_writes() -> None:
    for name, events in ENCODED.items():
        assert verdict(encoded(events)) == [], name
