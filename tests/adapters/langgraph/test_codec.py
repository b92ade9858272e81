"""The LangGraph dialect's own pieces: requests both ways, the decoder on what real servers send, the encoder."""

from __future__ import annotations

import uuid

import orjson
import pytest

from adapters.langgraph import DIALECT
from adapters.langgraph.decode import LangGraphDecoder
from adapters.langgraph.encode import LangGraphEncoder
from adapters.langgraph.request import build_request, parse_request, thread_uuid
from gateway.core.codec import UpstreamRequest
from gateway.core.errors import InvalidRequest
from gateway.core.events import (
    Interrupt,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.turn import ANY_OPEN_INTERRUPT, Message, Resume, Turn


def frames(*parts: tuple[str, object]) -> bytes:
    return b"".join(b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n" for name, data in parts)


def chunk(content: object = "", message_id: str = "m1", **fields: object) -> list[object]:
    return [{"type": "AIMessageChunk", "id": message_id, "content": content, "tool_call_chunks": [], **fields}, {}]


def test_a_thread_is_the_gateways_id_as_a_uuid_a_uuid_as_it_is_and_anything_else_a_stable_one() -> None:
    assert thread_uuid("conv_0123456789abcdef0123456789abcdef") == "01234567-89ab-cdef-0123-456789abcdef"
    given = str(uuid.uuid4())
    assert thread_uuid(given) == given
    assert thread_uuid("my-thread") == thread_uuid("my-thread") != thread_uuid("my-thread-2")
    uuid.UUID(thread_uuid("my-thread"))


def test_an_upstream_run_sends_only_what_is_new_and_an_answer_as_command_resume() -> None:
    turn = Turn([Message("user", "hi"), Message("assistant", "hello")], history="delta", conversation_id="t",
                agent="my-graph")
    request = build_request(turn)
    body = orjson.loads(request.body)
    assert request.path == f"/threads/{thread_uuid('t')}/runs/stream" and body["if_not_exists"] == "create"
    assert body["assistant_id"] == "my-graph" and body["input"]["messages"] == [{"type": "human", "content": "hi"}]
    one = orjson.loads(build_request(Turn(history="delta", conversation_id="t",
                                          resume=[Resume("i1", payload={"ok": 1})])).body)
    assert one["command"] == {"resume": {"ok": 1}} and "input" not in one
    two = orjson.loads(build_request(Turn(history="delta", conversation_id="t",
                                          resume=[Resume("i1", payload=1), Resume("i2", payload=2)])).body)
    assert two["command"] == {"resume": {"i1": 1, "i2": 2}}


def test_a_clients_resume_names_its_interrupts_by_id_or_answers_whatever_waits() -> None:
    plain = parse_request({"assistant_id": "a", "command": {"resume": {"approved": True}}})
    assert [(r.interrupt_id, r.payload) for r in plain.resume] == [(ANY_OPEN_INTERRUPT, {"approved": True})]
    mapped = parse_request({"assistant_id": "a", "command": {"resume": {"e92e9bf94ef92c5855d760aec43eb6b9": "yes"}}})
    assert [(r.interrupt_id, r.payload) for r in mapped.resume] == [("e92e9bf94ef92c5855d760aec43eb6b9", "yes")]


@pytest.mark.parametrize(("body", "says"), [
    ({"input": {}}, "assistant_id"),
    ({"assistant_id": "a", "stream_mode": ["tokens"]}, "stream_mode: 'tokens' is not one of"),
    ({"assistant_id": "a", "input": {"messages": [{"kind": "x"}]}}, "input.messages[0]"),
    ({"assistant_id": "a", "input": {"messages": 3}}, "input.messages: must be a list"),
])
def test_a_bad_run_is_refused_naming_the_field(body: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidRequest) as refused:
        parse_request(body)
    assert says in refused.value.message


def test_tool_call_chunks_are_one_call_by_index_and_the_whole_message_after_them_adds_nothing() -> None:
    decoder = LangGraphDecoder()
    decoder.sent(UpstreamRequest(b"", path="/threads/t1/runs/stream"))
    calls = [{"name": "get_weather", "id": "c1", "args": "", "index": 0},
             {"name": None, "id": None, "args": '{"city":', "index": 0},
             {"name": None, "id": None, "args": '"Paris"}', "index": 0}]
    body = frames(("metadata", {"run_id": "r1"}),
                  *[("messages", chunk(tool_call_chunks=[piece])) for piece in calls],
                  ("messages", chunk(chunk_position="last", usage_metadata={"input_tokens": 3, "output_tokens": 4,
                                                                            "total_tokens": 7})),
                  ("messages", [{"type": "ai", "id": "m1", "content": "", "tool_calls": [
                      {"name": "get_weather", "args": {"city": "Paris"}, "id": "c1"}]}, {}]),
                  ("messages", [{"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "sunny"}, {}]))
    events = decoder.feed(body) + decoder.close()
    assert [e.name for e in events if isinstance(e, ToolCallStart)] == ["get_weather"]
    assert "".join(e.delta for e in events if isinstance(e, ToolCallArgs)) == '{"city":"Paris"}'
    assert [(e.tool_call_id, e.content) for e in events if isinstance(e, ToolResult)] == [("c1", "sunny")]
    assert [e.total_tokens for e in events if isinstance(e, Usage)] == [7]
    assert isinstance(events[-1], RunFinished)


def test_the_body_ending_ends_the_run_and_a_broken_connection_is_joined_from_the_last_id() -> None:
    decoder = LangGraphDecoder()
    decoder.sent(UpstreamRequest(b"", path="/threads/t1/runs/stream"))
    decoder.feed(b'event: metadata\ndata: {"run_id": "r1"}\nid: 7-0\n\n' + frames(("messages", chunk("Hi"))))
    assert decoder.reattach_request(broke=False) is None  # a stream that ended has ended
    join = decoder.reattach_request(broke=True)
    assert join is not None and join.method == "GET" and join.path == "/threads/t1/runs/r1/stream"
    assert join.headers["last-event-id"] == "7-0"
    assert decoder.reattach_request(broke=True) is None  # once
    cancel = decoder.cancel_request()
    assert cancel is not None and cancel.path == "/threads/t1/runs/r1/cancel"


def test_an_error_frame_is_the_runs_error_and_a_cancelled_one_its_cancel() -> None:
    failed = LangGraphDecoder().feed(frames(("error", {"error": "ValueError", "message": "boom"})))
    assert isinstance(failed[-1], RunError) and failed[-1].message == "boom"
    cancelled = LangGraphDecoder().feed(frames(("error", {"error": "CancelledError", "message": "x"})))
    assert isinstance(cancelled[-1], RunFinished) and cancelled[-1].outcome == "cancelled"


def test_an_interrupt_keeps_the_graphs_value_and_reads_its_question() -> None:
    events = LangGraphDecoder().feed(frames(("updates", {"__interrupt__": [
        {"value": {"question": "Continue?"}, "id": "i1"}]})))
    interrupt = next(e for e in events if isinstance(e, Interrupt))
    assert (interrupt.id, interrupt.message, interrupt.payload) == ("i1", "Continue?", {"question": "Continue?"})


def test_text_streams_as_deltas_of_one_message() -> None:
    events = LangGraphDecoder().feed(frames(*[("messages", chunk(word)) for word in ("a ", "b")]))
    assert [(e.message_id, e.delta) for e in events if isinstance(e, TextDelta)] == [("m1", "a "), ("m1", "b")]


def test_messages_streamed_at_once_each_stay_one_message_from_start_to_end() -> None:
    """Parallel nodes' chunks interleave (A, B, A): A is not ended by B's chunks, nor opened again after its end."""
    events = LangGraphDecoder().feed(frames(
        ("messages", chunk("Hello ", "A")), ("messages", chunk("Bonjour ", "B")), ("messages", chunk("world.", "A")),
        ("messages", chunk("le monde.", "B")), ("messages", chunk("", "A", chunk_position="last")),
        ("messages", chunk("", "B", chunk_position="last")), ("end", None)))
    lifecycle = [(type(e).__name__, e.message_id) for e in events if isinstance(e, TextStart | TextEnd)]
    assert lifecycle == [("TextStart", "A"), ("TextStart", "B"), ("TextEnd", "A"), ("TextEnd", "B")]
    said: dict[str, str] = {}
    for e in events:
        if isinstance(e, TextDelta):
            said[e.message_id] = said.get(e.message_id, "") + e.delta
    assert said == {"A": "Hello world.", "B": "Bonjour le monde."}


def test_a_tool_result_ends_the_message_that_made_the_call_and_no_other() -> None:
    call = {"name": "search", "id": "c1", "args": "{}", "index": 0}
    events = LangGraphDecoder().feed(frames(
        ("messages", chunk("Searching. ", "A", tool_call_chunks=[call])), ("messages", chunk("Meanwhile ", "B")),
        ("messages", [{"type": "tool", "id": "t1", "tool_call_id": "c1", "content": "found"}, {}]),
        ("messages", chunk("more.", "B")), ("end", None)))
    lifecycle = [(type(e).__name__, e.message_id) for e in events if isinstance(e, TextStart | TextEnd)]
    assert lifecycle == [("TextStart", "A"), ("TextStart", "B"), ("TextEnd", "A"), ("TextEnd", "B")]


@pytest.mark.parametrize(("said", "cut"), [({"finish_reason": "length"}, "length"),
                                           ({"finish_reason": "content_filter"}, "content_filter"),
                                           ({"stop_reason": "max_tokens"}, "length"),
                                           ({"finish_reason": "stop"}, None), ({}, None)])
def test_a_models_finish_reason_on_its_last_chunk_says_whether_the_answer_was_cut_short(
        said: dict[str, str], cut: str | None) -> None:
    events = LangGraphDecoder().feed(frames(("messages", chunk("The answer is")), ("messages", chunk(" forty")),
                                            ("messages", chunk("", response_metadata=said)), ("end", None)))
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "The answer is forty"
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == cut


def test_messages_written_at_once_are_each_one_whole_message_in_the_threads_values() -> None:
    body = LangGraphEncoder(None).encode([
        RunStarted(thread_id="t", run_id="r"), TextStart("A"), TextDelta("A", "Hello "), TextStart("B"),
        TextDelta("B", "Bonjour "),
        TextDelta("A", "world."), TextDelta("B", "le monde."), TextEnd("A"), TextEnd("B"), RunFinished()])
    values = [orjson.loads(block.split(b"data: ", 1)[1]) for block in body.split(b"\n\n")
              if block.startswith(b"id: ") and b"\nevent: values\n" in block]
    assert [(m["id"], m["content"]) for m in values[-1]["messages"]] == [("A", "Hello world."),
                                                                         ("B", "Bonjour le monde.")]


def test_a_stream_of_values_alone_reads_the_runs_new_messages_once() -> None:
    """LangGraph's default stream mode is `values` alone: the run's answer is in the messages after its first."""
    before = [{"type": "human", "id": "h0", "content": "hi"}, {"type": "ai", "id": "a0", "content": "earlier"},
              {"type": "human", "id": "h1", "content": "again"}]
    answer = {"type": "ai", "id": "a1", "content": "the answer", "tool_calls": []}
    events = LangGraphDecoder().feed(frames(("values", {"messages": before}),
                                            ("values", {"messages": [*before, answer]}),
                                            ("values", {"messages": [*before, answer]})))
    assert [(e.message_id, e.delta) for e in events if isinstance(e, TextDelta)] == [("a1", "the answer")]
    streamed = LangGraphDecoder().feed(frames(("values", {"messages": before}), ("messages", chunk("the answer", "a1")),
                                              ("values", {"messages": [*before, answer]})))
    assert [e.delta for e in streamed if isinstance(e, TextDelta)] == ["the answer"]


def test_only_a_body_that_names_an_assistant_is_langgraphs() -> None:
    assert DIALECT.sniff({"assistant_id": "a", "input": {}}) == 2
    assert DIALECT.sniff({"messages": []}) == 0
