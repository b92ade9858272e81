"""The Chat Completions decoder on what OpenAI-compatible servers send beyond a plain answer: refusals, finish reasons
that cut an answer short, more choices than one, content as a list of parts."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from adapters.openai_chat.decode import ChatDecoder
from gateway.core.events import Event, RunFinished, TextDelta, TextStart


def chunk(delta: dict[str, Any], finish: str | None = None, index: int = 0) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "model": "m",
            "choices": [{"index": index, "delta": delta, "finish_reason": finish}]}


def decode(*frames: dict[str, Any], done: bool = True) -> tuple[ChatDecoder, list[Event]]:
    decoder = ChatDecoder()
    body = b"".join(b"data: " + orjson.dumps(f) + b"\n\n" for f in frames) + (b"data: [DONE]\n\n" if done else b"")
    return decoder, decoder.feed(body) + decoder.close()


def texts(events: list[Event]) -> list[tuple[bool, str]]:
    """Each message's text, and whether it is a refusal."""
    said: dict[str, list[Any]] = {}
    for e in events:
        if isinstance(e, TextStart):
            said[e.message_id] = [e.refusal, ""]
        elif isinstance(e, TextDelta):
            said[e.message_id][1] += e.delta
    return [(refusal, text) for refusal, text in said.values()]


def test_a_refusal_is_a_message_of_its_own_marked_as_one() -> None:
    _, events = decode(chunk({"role": "assistant", "content": None, "refusal": None}), chunk({"refusal": "I can't "}),
                       chunk({"refusal": "do that."}), chunk({}, "stop"))
    assert texts(events) == [(True, "I can't do that.")]
    _, events = decode(chunk({"content": "Partly. "}), chunk({"refusal": "No more."}), chunk({}, "stop"))
    assert texts(events) == [(False, "Partly. "), (True, "No more.")]


def test_a_refusal_in_one_body_is_the_message() -> None:
    decoder = ChatDecoder()
    body = {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": None,
                                                             "refusal": "I can't do that."}, "finish_reason": "stop"}]}
    events = decoder.feed(orjson.dumps(body)) + decoder.close()
    assert texts(events) == [(True, "I can't do that.")] and isinstance(events[-1], RunFinished)


@pytest.mark.parametrize(("reason", "cut"), [("length", "length"), ("content_filter", "content_filter"),
                                             ("stop", None), ("tool_calls", None)])
def test_a_finish_reason_says_whether_the_answer_was_cut_short(reason: str, cut: str | None) -> None:
    for done in (True, False):  # with `[DONE]`, or a stream that ends after its finish reason
        _, events = decode(chunk({"content": "The answer is"}), chunk({}, reason), done=done)
        assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == cut
    decoder = ChatDecoder()
    body = {"id": "c1", "choices": [{"index": 0, "message": {"role": "assistant", "content": "The answer is"},
                                     "finish_reason": reason}]}
    events = decoder.feed(orjson.dumps(body)) + decoder.close()
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == cut


def test_choices_beyond_the_first_are_left_out_and_counted() -> None:
    decoder, events = decode(chunk({"content": "First "}), chunk({"content": "Second "}, index=1),
                             {"id": "c1", "choices": [{"index": 1, "delta": {"content": "again "}},
                                                      {"index": 0, "delta": {"content": "answer."}}]},
                             chunk({}, "stop", index=1), chunk({}, "length"))
    assert texts(events) == [(False, "First answer.")]
    assert decoder.ignored == 3
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "length"  # the first choice's reason


def test_content_as_a_list_of_parts_is_their_text() -> None:
    _, events = decode(chunk({"content": [{"type": "text", "text": "From "}, {"type": "image_url"}]}),
                       chunk({"content": [{"type": "text", "text": "parts."}, {"type": "refusal", "refusal": "No."}]}),
                       chunk({}, "stop"))
    assert texts(events) == [(False, "From parts."), (True, "No.")]
    decoder = ChatDecoder()
    body = {"id": "c1", "choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": [{"type": "text", "text": "From "}, {"type": "text", "text": "parts."}]}}]}
    assert texts(decoder.feed(orjson.dumps(body)) + decoder.close()) == [(False, "From parts.")]
