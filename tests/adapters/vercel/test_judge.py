from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from helpers import encode, fixture_dialect, fixtures, read_fixture
from node_clients import CLIENTS_DIR, VercelResult, node_clients_available, verify_vercel

from adapters.vercel import INKEEP
from adapters.vercel.conformance import AI7_TYPES, CHUNKS, CONVENTION, judge
from gateway.core.conformance import MAX_VIOLATIONS, Answer, Violation
from gateway.core.events import (
    Data,
    Interrupt,
    Raw,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    Usage,
)

HEADERS = {"content-type": "text/event-stream; charset=utf-8", "x-vercel-ai-ui-message-stream": "v1"}
DONE = b"data: [DONE]\n\n"


def sse(*chunks: dict[str, Any] | bytes, done: bool = True) -> bytes:
    frames = [b"data: " + (c if isinstance(c, bytes) else orjson.dumps(c)) + b"\n\n" for c in chunks]
    return b"".join(frames) + (DONE if done else b"")


def check(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> list[Violation]:
    return judge(Answer(status, HEADERS if headers is None else headers, body))


def hard(violations: list[Violation]) -> list[Violation]:
    return [v for v in violations if not v.rule.startswith(CONVENTION)]


START = {"type": "start"}
TEXT_START = {"type": "text-start", "id": "t1"}
TEXT_DELTA = {"type": "text-delta", "id": "t1", "delta": "Hi"}
TEXT_END = {"type": "text-end", "id": "t1"}
TOOL_START = {"type": "tool-input-start", "toolCallId": "c1", "toolName": "search"}
TOOL_INPUT = {"type": "tool-input-available", "toolCallId": "c1", "toolName": "search", "input": {"q": "x"}}
TOOL_OUTPUT = {"type": "tool-output-available", "toolCallId": "c1", "output": {"hits": 1}}

# Streams a real useChat accepts. Conventions may still be reported on some (see CONVENTIONS).
VALID: dict[str, bytes] = {
    **{f"fixture {name}": read_fixture(name) for name in fixtures() if fixture_dialect(name) == "vercel"},
    "encoder text": encode("vercel", [RunStarted(message_id="m1"), TextStart("t1"), TextDelta("t1", "Hello"),
                                      TextEnd("t1"), Usage(input_tokens=3, output_tokens=2), RunFinished()]),
    "encoder reasoning": encode("vercel", [RunStarted(), ReasoningStart("r1"), ReasoningDelta("r1", "hmm"),
                                           ReasoningEnd("r1"), TextStart("t1"), TextDelta("t1", "42"), TextEnd("t1"),
                                           RunFinished()]),
    "encoder server tool": encode("vercel", [RunStarted(), ToolCallStart("c1", "search"),
                                             ToolCallArgs("c1", '{"q":'), ToolCallArgs("c1", '"x"}'),
                                             ToolCallEnd("c1"), ToolResult("c1", {"hits": 1}), TextStart("t1"),
                                             TextDelta("t1", "found"), TextEnd("t1"), RunFinished()]),
    "encoder tool error": encode("vercel", [RunStarted(), ToolCallStart("c1", "search"), ToolCallEnd("c1"),
                                            ToolResult("c1", "quota", is_error=True), RunFinished()]),
    "encoder client tool": encode("vercel", [RunStarted(), ToolCallStart("c1", "getLocation"),
                                             ToolCallArgs("c1", '{"precision":"city"}'), ToolCallEnd("c1"),
                                             RunFinished()]),
    "encoder approval": encode("vercel", [RunStarted(), ToolCallStart("c1", "deleteFile"),
                                          ToolCallArgs("c1", '{"path":"/tmp/x"}'), ToolCallEnd("c1"),
                                          Interrupt("ap1", reason="tool_approval", tool_call_id="c1"), RunFinished()]),
    "encoder interrupt": encode("vercel", [RunStarted(), Interrupt("i1", reason="confirm order", message="Sure?",
                                                                   payload={"total": 3}), RunFinished()]),
    "encoder data parts": encode("vercel", [RunStarted(), Data("progress", {"pct": 50}),
                                            Data("progress", {"pct": 100}, id="p"), Data("ping", None, transient=True),
                                            StateSnapshot({"count": 1}),
                                            StateDelta([{"op": "replace", "path": "/count", "value": 2}]),
                                            Raw("vercel", event={"type": "source-url", "sourceId": "s1",
                                                                 "url": "https://example.com"}),
                                            Raw("vercel", event={"type": "file", "url": "data:text/plain;base64,aGk=",
                                                                 "mediaType": "text/plain"}),
                                            RunFinished()]),
    "encoder error": encode("vercel", [RunStarted(), TextStart("t1"), TextDelta("t1", "par"), RunError("boom")]),
    "encoder inkeep error": encode("vercel", [RunStarted(), RunError("boom", code="timeout")], INKEEP),
    "encoder abort": encode("vercel", [RunStarted(), TextStart("t1"), TextDelta("t1", "par"),
                                       RunFinished(outcome="cancelled")]),
    "input available without start": sse(START, TOOL_INPUT, TOOL_OUTPUT),
    "text id reused after its end": sse(TEXT_START, TEXT_DELTA, TEXT_END, TEXT_START, TEXT_DELTA, TEXT_END),
    "text across start-step": sse(TEXT_START, {"type": "start-step"}, TEXT_DELTA, TEXT_END),
    "same messageId again": sse({"type": "start", "messageId": "m1"}, TEXT_START,
                                {"type": "start", "messageId": "m1"}, TEXT_DELTA, TEXT_END),
    "metadata objects merge": sse({"type": "start", "messageMetadata": {"a": 1}},
                                  {"type": "message-metadata", "messageMetadata": {"b": {"c": 1}}},
                                  {"type": "finish", "finishReason": "stop", "messageMetadata": "over"}),
    "metadata plain value, then a number": sse({"type": "start", "messageMetadata": "x"},
                                               {"type": "message-metadata", "messageMetadata": 5},
                                               {"type": "message-metadata", "messageMetadata": {"a": 1}}),
    "every optional key ai 6 knows": sse(
        {"type": "start", "messageId": "m1", "messageMetadata": None},
        {"type": "start-step"},
        {"type": "text-start", "id": "t1", "providerMetadata": {"openai": {"id": "x", "n": [1, None]}}},
        {"type": "text-delta", "id": "t1", "delta": "a", "providerMetadata": {}},
        {"type": "text-end", "id": "t1"},
        {"type": "tool-input-start", "toolCallId": "c1", "toolName": "f", "providerExecuted": True, "dynamic": True,
         "title": "F", "toolMetadata": {"k": [1]}, "providerMetadata": {"p": {}}},
        {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{}"},
        {"type": "tool-input-available", "toolCallId": "c1", "toolName": "f", "input": None, "dynamic": True},
        {"type": "tool-approval-request", "approvalId": "a1", "toolCallId": "c1", "signature": "sig"},
        {"type": "tool-output-available", "toolCallId": "c1", "output": None, "preliminary": True},
        {"type": "tool-input-error", "toolCallId": "c2", "toolName": "g", "input": "{bad", "errorText": "bad json"},
        {"type": "tool-output-denied", "toolCallId": "c2"},
        {"type": "tool-output-error", "toolCallId": "c1", "errorText": "failed", "providerExecuted": False},
        {"type": "source-url", "sourceId": "s1", "url": "https://example.com", "title": "Example"},
        {"type": "source-document", "sourceId": "s2", "mediaType": "application/pdf", "title": "Doc",
         "filename": "d.pdf"},
        {"type": "file", "url": "https://example.com/a.png", "mediaType": "image/png"},
        {"type": "data-weather", "id": "w", "data": {"t": 21}, "transient": False},
        {"type": "data-weather", "id": "w", "data": None},
        {"type": "message-metadata", "messageMetadata": None},
        {"type": "finish-step"},
        {"type": "abort", "reason": "user stopped"},
        {"type": "finish", "finishReason": "tool-calls"}),
    "error chunk, then more": sse(START, {"type": "error", "errorText": "boom"}, TEXT_DELTA),
    "[DONE] in the middle": sse(START, TEXT_START, done=False) + DONE + sse(TEXT_DELTA, TEXT_END, done=False),
    "CRLF, comments, event and id fields": (b": stream-open\r\n\r\nevent: message\r\nid: 1\r\ndata: "
                                            + orjson.dumps(TEXT_START) + b"\r\n\r\ndata:" + orjson.dumps(TEXT_DELTA)
                                            + b"\r\n\r\ndata: [DONE]\r\n\r\n"),
    "JSON over two data lines": b'data: {"type":"text-start",\ndata: "id":"t1"}\n\n' + DONE,
    "last frame cut short": sse(START, TEXT_START, TEXT_DELTA, TEXT_END, done=False) + b'data: {"type":"fin',
    "empty body": b"",
    "NDJSON": orjson.dumps(TEXT_START) + b"\n" + orjson.dumps(TEXT_DELTA) + b"\n",
    "ai 4 data stream": b'0:"hi"\n',
    "byte order mark": b"\xef\xbb\xbf" + sse(START, TEXT_START, TEXT_DELTA, TEXT_END),
    "lone surrogate escape": b'data: {"type":"text-start","id":"\\ud83d"}\n\n' + DONE,
}

# Streams a real useChat rejects: the first rule broken, and the index of the frame that breaks it.
BROKEN: dict[str, tuple[bytes, str, int]] = {
    "text-delta before text-start": (sse(START, TEXT_DELTA), "text-delta-without-start", 1),
    "text-end before text-start": (sse(START, TEXT_END), "text-end-without-start", 1),
    "text-delta after text-end": (sse(TEXT_START, TEXT_END, TEXT_DELTA), "text-delta-without-start", 2),
    "reasoning-delta before start": (sse({"type": "reasoning-delta", "id": "r", "delta": "x"}),
                                     "reasoning-delta-without-start", 0),
    "reasoning-end before start": (sse(START, {"type": "reasoning-end", "id": "r"}), "reasoning-end-without-start", 1),
    "text across finish-step (ai 6)": (sse(TEXT_START, {"type": "finish-step"}, TEXT_DELTA),
                                       "text-delta-without-start", 2),
    "reasoning-end across finish-step (ai 6)": (sse({"type": "reasoning-start", "id": "r"}, {"type": "finish-step"},
                                                    {"type": "reasoning-end", "id": "r"}),
                                                "reasoning-end-without-start", 2),
    "text across a new messageId (ai 7)": (sse(TEXT_START, {"type": "start", "messageId": "m2"}, TEXT_DELTA),
                                           "text-delta-without-start", 2),
    "tool output across a new messageId (ai 7)": (sse({"type": "start", "messageId": "m1"}, TOOL_INPUT,
                                                      {"type": "start", "messageId": "m2"}, TOOL_OUTPUT),
                                                  "tool-output-without-call", 3),
    "tool-input-delta before start": (sse(START, {"type": "tool-input-delta", "toolCallId": "c1",
                                                  "inputTextDelta": "{"}), "tool-input-delta-without-start", 1),
    "tool-input-delta after input-available only": (sse(TOOL_INPUT, {"type": "tool-input-delta", "toolCallId": "c1",
                                                                     "inputTextDelta": "{"}),
                                                    "tool-input-delta-without-start", 1),
    "tool output for unknown call": (sse(START, TOOL_OUTPUT), "tool-output-without-call", 1),
    "tool output error for unknown call": (sse(TOOL_INPUT, {"type": "tool-output-error", "toolCallId": "c9",
                                                            "errorText": "x"}), "tool-output-without-call", 1),
    "tool output denied for unknown call": (sse({"type": "tool-output-denied", "toolCallId": "c9"}),
                                            "tool-output-without-call", 0),
    "approval for unknown call": (sse(START, {"type": "tool-approval-request", "approvalId": "a", "toolCallId": "c9"}),
                                  "approval-request-without-call", 1),
    "metadata merge into a plain value": (sse({"type": "start", "messageMetadata": "x"},
                                              {"type": "finish", "messageMetadata": {"a": 1}}), "metadata-merge", 1),
    "unknown chunk type": (sse(START, {"type": "text", "text": "hi"}), "unknown-chunk-type", 1),
    "Inkeep error frame without type": (sse(START, {"error": "Stream error"}), "unknown-chunk-type", 1),
    "chunk not an object": (sse(START, b"[1, 2]"), "chunk-not-object", 1),
    "missing delta": (sse(TEXT_START, {"type": "text-delta", "id": "t1"}), "missing-key", 1),
    "missing input": (sse({"type": "tool-input-available", "toolCallId": "c1", "toolName": "f"}), "missing-key", 0),
    "missing data": (sse({"type": "data-x"}), "missing-key", 0),
    "Inkeep writeError shape": (sse(START, {"type": "error", "message": "x", "severity": "error"}), "missing-key", 1),
    "id not a string": (sse({"type": "text-start", "id": 1}), "wrong-type", 0),
    "messageId null": (sse({"type": "start", "messageId": None}), "wrong-type", 0),
    "providerMetadata not an object of objects": (sse({"type": "text-start", "id": "t", "providerMetadata": {"a": 1}}),
                                                  "wrong-type", 0),
    "bad finishReason": (sse(START, {"type": "finish", "finishReason": "unknown"}), "wrong-type", 1),
    "extra key (strict ai 6)": (sse(START, {**TEXT_START, "role": "assistant"}), "unknown-key", 1),
    "extra key on a data part (strict ai 6)": (sse({"type": "data-x", "data": 1, "name": "x"}), "unknown-key", 0),
    "finishReason interrupted (ai 7 only)": (sse({"type": "finish", "finishReason": "interrupted"}), "ai7-only", 0),
    "citations (ai 7 only)": (sse(TEXT_START, {**TEXT_END, "citations": []}), "ai7-only", 1),
    "tool-approval-response (ai 7 only)": (sse({"type": "tool-approval-response", "approvalId": "a",
                                                "approved": True}), "ai7-only", 0),
    "reset-step (ai 7 only)": (sse({"type": "reset-step"}), "ai7-only", 0),
    "not JSON": (sse(START, b"{'type': 'start'}"), "json", 1),
    "[DONE] with a space too many": (sse(START, done=False) + b"data:  [DONE]\n\n", "json", 1),
    "__proto__ key": (sse(START, b'{"type":"data-x","data":{"__proto__":{}}}'), "json-prototype-key", 1),
}

CONVENTIONS: dict[str, set[str]] = {
    "encoder error": set(),
    "encoder client tool": set(),
    "error chunk, then more": {"convention-after-error"},
    "[DONE] in the middle": {"convention-done"},
    "last frame cut short": {"convention-unterminated-frame", "convention-done"},
    "empty body": {"convention-empty-stream"},
    "NDJSON": {"convention-empty-stream"},
    "ai 4 data stream": {"convention-empty-stream"},
    "lone surrogate escape": {"convention-unfinished-part"},
    "JSON over two data lines": {"convention-unfinished-part"},
    "CRLF, comments, event and id fields": {"convention-unfinished-part"},
}
"""What the judge says of a valid stream beyond nothing at all."""

DONE_BY_TEXT = {"CRLF, comments, event and id fields"}
"""verify-vercel's `done` looks for a literal LF-framed `data: [DONE]`; the judge reads the frames."""


@pytest.fixture(scope="module")
def real() -> dict[str, VercelResult]:
    if not node_clients_available():
        pytest.skip("the node clients are not installed (npm ci --prefix tests/clients)")
    return verify_vercel({**VALID, **{name: body for name, (body, _, _) in BROKEN.items()}})


@pytest.mark.parametrize("name", sorted(VALID))
def test_judge_passes_what_the_real_client_accepts(name: str, real: dict[str, VercelResult]) -> None:
    found = check(VALID[name])
    assert real[name]["ok"], (real[name]["error"], real[name]["strict_error"])
    assert hard(found) == []
    assert {v.rule for v in found} == CONVENTIONS.get(name, set())
    if name not in DONE_BY_TEXT:
        assert real[name]["done"] == ("convention-done" not in {v.rule for v in found} and bool(real[name]["types"]))


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_judge_rejects_what_the_real_client_rejects(name: str, real: dict[str, VercelResult]) -> None:
    body, rule, index = BROKEN[name]
    assert not real[name]["ok"]
    found = hard(check(body))
    assert found, "the judge passed a stream the real client rejects"
    assert (found[0].rule, found[0].index) == (rule, index), found
    assert found[0].frame is not None and found[0].message


def test_one_version_rejections_name_the_version(real: dict[str, VercelResult]) -> None:
    ai6 = "text across finish-step (ai 6)"
    assert real[ai6]["error"] is None and real[ai6]["strict_error"] is not None
    assert "ai 6 ends every open text and reasoning part at finish-step" in hard(check(BROKEN[ai6][0]))[0].message
    ai7 = "text across a new messageId (ai 7)"
    assert real[ai7]["error"] is not None and real[ai7]["strict_error"] is None
    assert "ai 7 begins a new message" in hard(check(BROKEN[ai7][0]))[0].message


def _schema_in_source(version: str) -> dict[str, set[str]]:
    """Chunk type -> keys besides `type`, read from `uiMessageChunkSchema` in an installed `ai`."""
    path = CLIENTS_DIR / "node_modules" / version / "src" / "ui-message-stream" / "ui-message-chunks.ts"
    if not path.is_file():
        pytest.skip(f"{path} is not installed")
    schema = Path(path).read_text().split("export type")[0]
    found: dict[str, set[str]] = {}
    for block in re.split(r"\n      z\.(?:looseObject|strictObject)\(\{", schema)[1:]:
        keys = set(re.findall(r"^        (\w+):", block, re.MULTILINE)) - {"type"}
        literal = re.search(r"^        type: z\.literal\('([^']+)'\)", block, re.MULTILINE)
        found[literal.group(1) if literal else "data-"] = keys
    return found


def test_schema_table_is_ai7s_schema() -> None:
    assert {kind: set(keys) for kind, keys in CHUNKS.items()} == _schema_in_source("ai")


def test_schema_table_less_its_ai7_parts_is_strict_ai6s_schema() -> None:
    ai6 = {kind: {name for name, key in keys.items() if not key.ai7}
           for kind, keys in CHUNKS.items() if kind not in AI7_TYPES}
    assert ai6 == _schema_in_source("ai-strict")


# Without node: the head of the reply, the messages, the limits.

def test_text_delta_without_start_message() -> None:
    [violation] = hard(check(sse(START, TEXT_DELTA)))
    assert violation == Violation("text-delta-without-start",
                                  "text-delta for text part 't1', which was never started (text-start)",
                                  orjson.dumps(TEXT_DELTA).decode(), 1)


CONTINUED = {"id": "chat", "messageId": "a1", "messages": [
    {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "delete it"}]},
    {"id": "a1", "role": "assistant", "parts": [
        {"type": "step-start"},
        {"type": "tool-search", "toolCallId": "c1", "state": "approval-responded", "input": {},
         "approval": {"id": "ap1", "approved": True}}]}]}
"""What useChat sends once its user answered an approval: the reply goes on with the assistant's message."""


def test_a_reply_that_goes_on_from_the_requests_assistant_message_may_settle_its_tool_calls() -> None:
    body = sse(START, TOOL_OUTPUT, TEXT_START, TEXT_DELTA, TEXT_END, {"type": "finish"})
    assert hard(judge(Answer(200, HEADERS, body, CONTINUED))) == []
    asked = {**CONTINUED, "messages": CONTINUED["messages"][:1]}  # the user's message last: a new message
    assert [v.rule for v in hard(judge(Answer(200, HEADERS, body, asked)))] == ["tool-output-without-call"]
    assert [v.rule for v in hard(check(body))] == ["tool-output-without-call"]  # no request: nothing to go on from


def test_a_reply_that_starts_another_message_does_not_go_on_from_the_requests_in_ai_7() -> None:
    body = sse({"type": "start", "messageId": "a2"}, TOOL_OUTPUT, {"type": "finish"})
    found = hard(judge(Answer(200, HEADERS, body, CONTINUED)))
    assert [v.rule for v in found] == ["tool-output-without-call"] and "ai 7" in found[0].message


def test_a_refused_status_is_all_there_is_to_say() -> None:
    found = check(b'{"error":"nope"}', status=500, headers={"content-type": "application/json"})
    assert [(v.rule, v.frame) for v in found] == [("status", '{"error":"nope"}')]
    assert [v.rule for v in check(b"", status=204)] == ["status"]


def test_head_conventions_are_not_rejections() -> None:
    body = sse(START, TEXT_START, TEXT_DELTA, TEXT_END)
    found = check(body, status=201, headers={"content-type": "application/json"})
    assert [v.rule for v in found] == ["convention-status", "convention-content-type", "convention-stream-header"]
    assert hard(found) == []


def test_inkeep_header_is_accepted_and_the_ai4_header_explained() -> None:
    body = sse(START, TEXT_START, TEXT_END)
    assert check(body, headers={"content-type": "text/event-stream", "x-vercel-ai-data-stream": "v2"}) == []
    [found] = check(body, headers={"content-type": "text/event-stream", "x-vercel-ai-data-stream": "v1"})
    assert found.rule == "convention-stream-header" and "ai 4" in found.message


def test_unfinished_parts_are_reported_where_they_started() -> None:
    found = check(sse(START, TEXT_START, TOOL_START, {"type": "finish"}))
    assert [(v.rule, v.index) for v in found] == [("convention-unfinished-part", 1), ("convention-unfinished-part", 2)]


def test_one_mistake_is_reported_once() -> None:
    found = check(sse(START, *[TEXT_DELTA] * 5, TOOL_OUTPUT, TOOL_OUTPUT))
    assert [(v.rule, v.index) for v in hard(found)] == [("text-delta-without-start", 1),
                                                         ("tool-output-without-call", 6)]


def test_every_key_problem_of_a_chunk_is_reported() -> None:
    found = check(sse({"type": "tool-input-available", "toolName": 3, "extra": 1}))
    assert sorted(v.rule for v in found) == ["missing-key", "missing-key", "unknown-key", "wrong-type"]


def test_stops_after_max_violations() -> None:
    found = check(sse(*[{"type": "nope"}] * (MAX_VIOLATIONS * 2)))
    assert len(found) == MAX_VIOLATIONS
    assert [v.index for v in found] == list(range(MAX_VIOLATIONS))


def test_broken_utf8_is_read_as_the_client_reads_it() -> None:
    body = b'data: {"type":"text-start","id":"t\xff"}\n\n' + DONE
    assert hard(check(body)) == []
