"""Steady text deltas read by their text alone (`gateway.core.steady`) come out as the same events as the frames
read whole: for every dialect that reads them so, on random streams of plausible and odd frames."""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from adapters import registry
from gateway.core.codec import Decoder
from gateway.core.events import Event
from gateway.core.steady import ASCII_STRING, LEARNING_TRIES, NUMBER, FrameAroundText, FrameWithHoles

TEXTS = ["tok ", "", " ", 'a"b', "\\", "é", "日本語", "\n", "\x00", "\x00probe", "😀", "text", "AIMessageChunk",
         "artifact-update", "m1", "</script>", '{"x": 1}', "tok " * 40, "\u2028", "a/b"]
"""Texts a delta may hold: escapes, non-ASCII, empty, and the values of the frames' own fields."""
CRAFTED = Path(__file__).parent / "fixtures" / "crafted"
_ID = re.compile(r"\b(msg|call|run|artifact|reasoning|item|conv|task)_[0-9a-f]{32}\b")


def normalized(events: list[Event]) -> list[str]:
    """The events as text, each id the gateway made up named by the order it first appeared in."""
    seen: dict[str, str] = {}
    return [_ID.sub(lambda m: seen.setdefault(m.group(0), f"<{len(seen)}>"), repr(event)) for event in events]


def decode(dialect: str, body: bytes, cuts: list[int], *, steady: bool) -> list[str]:
    decoder: Decoder = registry.get(dialect).new_decoder()
    if not steady:
        decoder._steady.tries = 0  # type: ignore[attr-defined]
    events: list[Event] = []
    start = 0
    for cut in [*cuts, len(body)]:
        events += decoder.feed(body[start:cut])
        start = cut
    return normalized(events + decoder.close())


def sse(frames: list[Any], event: str | None = None) -> bytes:
    """Frames as a server writes them; each either a value (as JSON) or bytes (as they are)."""
    name = f"event: {event}\n".encode() if event else b""
    return b"".join(name + b"data: " + (f if isinstance(f, bytes) else orjson.dumps(f)) + b"\n\n" for f in frames)


PADDINGS = ["abc", "x", "", "LongerPadding-_09", 'a"b', "é", "\\"]
"""OpenAI's `obfuscation`, random in every frame; the last three are not what it writes (escaped, non-ASCII)."""


def chat_stream(rng: random.Random) -> bytes:
    frames: list[Any] = []
    index = 0
    padded = rng.random() < 0.5
    for _ in range(rng.randint(5, 40)):
        delta: dict[str, Any] = {}
        roll = rng.random()
        if roll < 0.7:
            delta["content"] = rng.choice(TEXTS)
        elif roll < 0.8:
            delta[rng.choice(["reasoning_content", "reasoning"])] = rng.choice(TEXTS)
        elif roll < 0.85:
            delta["tool_calls"] = [{"index": index, "id": f"call_{index}", "function": {
                "name": "f", "arguments": rng.choice(TEXTS)}}]
            index += rng.randint(0, 1)
        elif roll < 0.9:
            delta["refusal"] = rng.choice(TEXTS)
        else:
            delta["content"] = rng.choice(TEXTS)
            delta["role"] = "assistant"
        choice = 1 if rng.random() < 0.05 else 0  # another choice than the run's
        chunk: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m",
                                 "choices": [{"index": choice, "delta": delta, "finish_reason": None}]}
        if padded or rng.random() < 0.05:
            chunk["obfuscation"] = rng.choice(PADDINGS)
        if rng.random() < 0.05:
            chunk["choices"][0]["finish_reason"] = "stop"
        if rng.random() < 0.05:
            chunk["usage"] = {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}
        frames.append(chunk)
    if rng.random() < 0.3:  # a server whose JSON is not orjson's: spaces, and non-ASCII escaped
        frames = [orjson.dumps(f).replace(b'":', b'": ').replace("é".encode(), b"\\u00e9") for f in frames]
    elif padded and rng.random() < 0.3:  # a padding that is not JSON (an invalid escape) in a frame
        spoilt = rng.randrange(len(frames))
        frames[spoilt] = orjson.dumps(frames[spoilt]).replace(b'"obfuscation":"', b'"obfuscation":"\\q')
    return sse([*frames, b"[DONE]"])


def a2a_stream(rng: random.Random) -> bytes:
    frames: list[Any] = [{"jsonrpc": "2.0", "id": 1, "result": {"kind": "task", "id": "t1", "contextId": "c1",
                                                                 "status": {"state": "working"}}}]
    artifact = "a1"
    for _ in range(rng.randint(5, 40)):
        roll = rng.random()
        parts: list[Any] = [{"kind": "text", "text": rng.choice(TEXTS)}]
        if roll < 0.05:
            artifact = rng.choice(["a1", "a2", "a3"])
        elif roll < 0.1:
            parts.append({"kind": "data", "data": {"x": 1}})
        elif roll < 0.13:
            parts = [{"text": rng.choice(TEXTS)}]  # 1.0's part: no kind
        update: dict[str, Any] = {"kind": "artifact-update", "taskId": rng.choice(["t1"] * 9 + ["t2"]),
                                  "contextId": "c1", "artifact": {"artifactId": artifact, "parts": parts},
                                  "append": rng.random() > 0.05, "lastChunk": rng.random() < 0.05}
        if rng.random() < 0.03:
            del update["append"]  # unsaid: a replacement too
        if roll > 0.95:
            update = {"kind": "status-update", "taskId": "t1", "contextId": "c1", "final": False, "status": {
                "state": "working", "message": {"kind": "message", "role": "agent", "messageId": "m1",
                                                "parts": [{"kind": "text", "text": rng.choice(TEXTS)}]}}}
        frames.append({"jsonrpc": "2.0", "id": 1, "result": update})
    if rng.random() < 0.5:  # the task as it stands, its artifacts whole: only what was not passed on is new
        frames.append({"jsonrpc": "2.0", "id": 1, "result": {"kind": "task", "id": "t1", "contextId": "c1",
                                                             "status": {"state": "working"}, "artifacts": [
            {"artifactId": "a1", "parts": [{"kind": "text", "text": "".join(TEXTS)}]}]}})
    frames.append({"jsonrpc": "2.0", "id": 1, "result": {"kind": "status-update", "taskId": "t1", "contextId": "c1",
                                                         "final": True, "status": {"state": "completed"}}})
    return sse(frames)


def langgraph_stream(rng: random.Random) -> bytes:
    body = sse([{"run_id": "r1", "attempt": 1}], "metadata")
    message = "m1"
    for _ in range(rng.randint(5, 40)):
        chunk: dict[str, Any] = {"content": rng.choice(TEXTS), "additional_kwargs": {}, "response_metadata": {},
                                 "type": "AIMessageChunk", "name": None, "id": message, "tool_calls": [],
                                 "invalid_tool_calls": [], "usage_metadata": None, "tool_call_chunks": []}
        roll = rng.random()
        if roll < 0.05:
            message = rng.choice(["m1", "m2", "m3"])
            chunk["id"] = message
        elif roll < 0.1:
            chunk["tool_call_chunks"] = [{"name": "f", "args": "{}", "id": "c1", "index": 0}]
        elif roll < 0.13:
            chunk["usage_metadata"] = {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3}
        elif roll < 0.16:
            chunk["additional_kwargs"] = {"reasoning_content": rng.choice(TEXTS)}
        elif roll < 0.2:
            chunk["chunk_position"] = "last"
        if roll > 0.95:
            body += sse([{"messages": [{"type": "human", "content": "hi", "id": "h1"}]}], "values")
        event = "messages|sub:1" if roll > 0.9 else "messages"
        body += sse([[chunk, {"langgraph_node": "agent"}]], event)
    return body + sse([{"messages": []}], "values")


def responses_stream(rng: random.Random) -> bytes:
    sequence = 0

    padded = rng.random() < 0.5

    def event(frame: dict[str, Any]) -> bytes:
        nonlocal sequence
        sequence += rng.choice([1, 1, 1, 1, 2, 0]) if rng.random() < 0.9 else 1000
        padding = {"obfuscation": rng.choice(PADDINGS)} if padded else {}
        data = orjson.dumps({"type": frame["type"], "sequence_number": sequence, **frame, **padding})
        if rng.random() < 0.02:
            data = data.replace(b'"sequence_number":', b'"sequence_number":0')  # a leading zero: not JSON
        return f"event: {frame['type']}\n".encode() + b"data: " + data + b"\n\n"

    body = event({"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}})
    items = ["msg_1"]
    body += event({"type": "response.output_item.added", "item": {"type": "message", "id": "msg_1"}})
    for _ in range(rng.randint(5, 40)):
        roll = rng.random()
        if roll < 0.05:
            item = f"msg_{len(items) + 1}"
            items.append(item)
            body += event({"type": "response.output_item.added", "item": {"type": "message", "id": item}})
        elif roll < 0.1:
            body += event({"type": "response.output_item.done", "item": {"type": "message", "id": items[-1]}})
        elif roll < 0.15:
            body += event({"type": "response.reasoning_text.delta", "item_id": items[-1], "delta": "r"})
        elif roll < 0.18:
            body += event({"type": "response.refusal.delta", "item_id": items[-1], "delta": rng.choice(TEXTS)})
        elif roll < 0.21:
            body += event({"type": "response.output_text.done", "item_id": items[-1], "text": rng.choice(TEXTS)})
        body += event({"type": "response.output_text.delta", "item_id": rng.choice(items[-2:]), "output_index": 0,
                       "content_index": 0, "delta": rng.choice(TEXTS), "logprobs": []})
    return body + event({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}})


def agui_stream(rng: random.Random) -> bytes:
    """Text of one message or another, with chunk streams, tool calls, reasoning and odd values among it."""
    frames: list[Any] = [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}]
    for _ in range(rng.randint(1, 40)):
        roll, message = rng.random(), rng.choice(["m1", "m1", "m1", "m2"])
        if roll < 0.05:
            frames.append({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"})
        elif roll < 0.09:
            frames.append({"type": "TEXT_MESSAGE_END", "messageId": message})
        elif roll < 0.14:
            frames.append({"type": "TEXT_MESSAGE_CHUNK", "messageId": message, "delta": rng.choice(TEXTS)})
        elif roll < 0.17:
            frames.append({"type": "TOOL_CALL_CHUNK", "toolCallId": "c1", "toolCallName": "f", "delta": "{}"})
        elif roll < 0.20:
            frames.append({"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": rng.choice(TEXTS)})
        elif roll < 0.23:
            frames.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": rng.choice(TEXTS),
                           "metadata": {"k": 1}})
        elif roll < 0.25:
            frames.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": rng.choice([1, None])})
        else:
            frames.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": rng.choice(TEXTS)})
    frames.append({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"})
    encoded = [orjson.dumps(f) for f in frames]
    if rng.random() < 0.3:  # another server's spacing and escapes
        encoded = [f.replace(b'":', b'": ').replace("é".encode(), b"\\u00e9") for f in encoded]
    return sse(encoded)


def agkit_stream(rng: random.Random) -> bytes:
    """AG-Kit's text between tool calls and interrupts, odd values, and AG-UI's events among them."""
    frames: list[Any] = []
    for _ in range(rng.randint(1, 40)):
        roll = rng.random()
        if roll < 0.05:
            frames.append({"type": "tool-call-start", "toolCallId": "c1", "toolCallName": "f"})
        elif roll < 0.08:
            frames.append({"type": "tool-call-end", "toolCallId": "c1"})
        elif roll < 0.10:
            frames.append({"type": "interrupt", "id": "i1", "reason": "ask", "payload": {}})
        elif roll < 0.13:
            frames.append({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m9", "delta": rng.choice(TEXTS)})
        elif roll < 0.15:
            frames.append({"type": "text", "content": rng.choice([1, None, ["x"]])})
        elif roll < 0.18:
            frames.append({"type": "text", "content": rng.choice(TEXTS), "extra": 1})
        else:
            frames.append({"type": "text", "content": rng.choice(TEXTS)})
    return sse([*[orjson.dumps(f) for f in frames], b"[DONE]"])


STREAMS: dict[str, Callable[[random.Random], bytes]] = {
    "openai-chat": chat_stream, "a2a": a2a_stream, "langgraph": langgraph_stream,
    "openai-responses": responses_stream, "ag-ui": agui_stream, "ag-kit": agkit_stream}


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_random_streams_read_by_their_steady_text_give_the_events_they_give_read_whole(dialect: str) -> None:
    rng = random.Random(f"steady-{dialect}")
    for case in range(300):
        body = STREAMS[dialect](rng)
        cuts = sorted(rng.sample(range(1, len(body)), min(len(body) - 1, rng.randint(0, 12))))
        whole = decode(dialect, body, cuts, steady=False)
        assert decode(dialect, body, cuts, steady=True) == whole, (case, body[:2000])


@pytest.mark.parametrize("dialect", sorted(STREAMS))
def test_a_steady_streams_tokens_are_not_read_whole(dialect: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The test above would pass with nothing read by its text: here, of 50 tokens, 49 are."""
    decoder = registry.get(dialect).new_decoder()
    steady_texts: list[str] = []
    read = type(decoder).on_steady_text  # type: ignore[attr-defined]

    def counted(self: Any, text: str, out: Any) -> None:
        steady_texts.append(text)
        read(self, text, out)

    monkeypatch.setattr(type(decoder), "on_steady_text", counted)
    frames = {"openai-chat": lambda i: {"id": "x", "choices": [{"index": 0, "delta": {"content": f"t{i}"},
                                                                "finish_reason": None}]},
              "a2a": lambda i: {"jsonrpc": "2.0", "id": 1, "result": {
                  "kind": "artifact-update", "taskId": "t1", "contextId": "c1", "append": True, "lastChunk": False,
                  "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": f"t{i}"}]}}},
              "langgraph": lambda i: [{"content": f"t{i}", "type": "AIMessageChunk", "id": "m1"}, {}],
              "openai-responses": lambda i: {"type": "response.output_text.delta", "sequence_number": i + 2,
                                             "item_id": "msg_1", "delta": f"t{i}"},
              "ag-ui": lambda i: {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"t{i}"},
              "ag-kit": lambda i: {"type": "text", "content": f"t{i}"}}[dialect]
    event = "messages" if dialect == "langgraph" else None
    body = sse([frames(i) for i in range(50)], event)
    if dialect == "openai-responses":
        decoder.feed(sse([{"type": "response.created", "sequence_number": 0, "response": {"id": "r"}},
                          {"type": "response.output_item.added", "sequence_number": 1,
                           "item": {"type": "message", "id": "msg_1"}}]))
    events = decoder.feed(body)
    assert steady_texts == [f"t{i}" for i in range(1, 50)]
    assert [e.delta for e in events if type(e).__name__ == "TextDelta"] == [f"t{i}" for i in range(50)]


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses"])
def test_openais_padding_in_every_frame_does_not_stop_its_text_being_read_alone(dialect: str) -> None:
    decoder = registry.get(dialect).new_decoder()
    if dialect == "openai-responses":
        decoder.feed(sse([{"type": "response.created", "sequence_number": 0, "response": {"id": "r"}},
                          {"type": "response.output_item.added", "sequence_number": 1,
                           "item": {"type": "message", "id": "msg_1"}}]))
        frames = [{"type": "response.output_text.delta", "sequence_number": i + 2, "item_id": "msg_1",
                   "output_index": 0, "content_index": 0, "delta": f"t{i}", "logprobs": [],
                   "obfuscation": "Zx9" * (i % 5)} for i in range(40)]
    else:
        frames = [{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt",
                   "choices": [{"index": 0, "delta": {"content": f"t{i}"}, "logprobs": None, "finish_reason": None}],
                   "obfuscation": "Zx9" * (i % 5)} for i in range(40)]
    events = decoder.feed(sse(frames))
    assert isinstance(decoder._steady.shape, FrameWithHoles)  # type: ignore[attr-defined]
    assert decoder._steady.tries == LEARNING_TRIES  # type: ignore[attr-defined]
    assert [e.delta for e in events if type(e).__name__ == "TextDelta"] == [f"t{i}" for i in range(40)]


def test_a_number_past_any_float_fails_the_run_read_by_its_text_as_read_whole() -> None:
    body = (CRAFTED / "openai-responses" / "responses_long_number.sse").read_bytes()
    whole = decode("openai-responses", body, [], steady=False)
    assert decode("openai-responses", body, [], steady=True) == whole
    assert whole[-1].startswith("RunError(") and "invalid JSON" in whole[-1]


def test_an_upstream_that_writes_something_new_in_every_frame_is_learnt_from_a_few_times_only() -> None:
    decoder = registry.get("openai-chat").new_decoder()
    frames = [{"id": "x", "created": i, "choices": [{"index": 0, "delta": {"content": f"t{i}"},
                                                      "finish_reason": None}]} for i in range(40)]
    events = decoder.feed(sse(frames))
    assert decoder._steady.tries == 0  # type: ignore[attr-defined]
    assert len([e for e in events if type(e).__name__ == "TextDelta"]) == 40
    assert LEARNING_TRIES < 40


@pytest.mark.parametrize(("frame", "text"), [
    (b'{"a":1,"t":"xyz","b":[2]}', "xyz"),
    (b'{"a":1,"t":"\\u00e9\\"","b":[2]}', 'é"'),
    (b'{"a":1,"t":"","b":[2]}', ""),
    (b'{"a":1,"t":3,"b":[2]}', None),
    (b'{"a":1,"t":"x","y":"z","b":[2]}', None),
    (b'{"a":1,"t":"x"  ,"b":[2]}', "x"),
    (b'{"a":2,"t":"x","b":[2]}', None),
    (b'{"a":1,"t":"x","b":[3]}', None),
    (b'{"a":1,"t":"x","b":[2]', None),
])
def test_a_frame_is_read_by_its_text_only_where_all_else_is_the_same_bytes(frame: bytes, text: str | None) -> None:
    assert FrameAroundText(b'{"a":1,"t":', b',"b":[2]}').text_of(frame) == text


@pytest.mark.parametrize(("frame", "text"), [
    (b'{"n":7,"t":"x"}', "x"),
    (b'{"n":12345,"t":"x"}', "x"),
    (b'{"n":0,"t":"x"}', "x"),
    (b'{"n":07,"t":"x"}', None),
    (b'{"n":-7,"t":"x"}', None),
    (b'{"n":7.5,"t":"x"}', None),
    (b'{"n":,"t":"x"}', None),
    (b'{"n":7,"u":"x"}', None),
    (b'{"n":7,"t":}', None),
    (b'{"n":1234567890123456789,"t":"x"}', "x"),
    (b'{"n":12345678901234567890,"t":"x"}', None),  # longer than a sequence number: read whole
    (b'{"n":' + b"1" * 400 + b',"t":"x"}', None),  # longer than any float: reading it whole fails the run
])
def test_a_sequence_number_may_differ_and_nothing_else(frame: bytes, text: str | None) -> None:
    assert FrameWithHoles([(b'{"n":', NUMBER), (b',"t":', None)], b"}").text_of(frame) == text


@pytest.mark.parametrize(("frame", "text"), [
    (b'{"t":"x","o":"abc"}', "x"),
    (b'{"t":"x","o":""}', "x"),
    (rb'{"t":"x\"y","o":"Zz9-_"}', 'x"y'),
    (rb'{"t":"x","o":"a\"b"}', None),
    ('{"t":"x","o":"é"}'.encode(), None),
    (b'{"t":"x","o":3}', None),
    (b'{"t":"x","o":"a","p":1}', None),
    (rb'{"t":"x\q","o":"a"}', None),
])
def test_a_padding_may_differ_and_nothing_else(frame: bytes, text: str | None) -> None:
    assert FrameWithHoles([(b'{"t":', None), (b',"o":', ASCII_STRING)], b"}").text_of(frame) == text
