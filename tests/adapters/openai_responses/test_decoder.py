"""The Responses decoder on what servers send beyond a plain answer: refusals, text said only in `.done` events,
deltas of items never added, and responses cut short."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from adapters.openai_responses.decode import ResponsesDecoder
from gateway.core.events import Event, Raw, ReasoningDelta, RunFinished, TextDelta, TextEnd, TextStart

WHERE = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
MESSAGE = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}


def decode(*frames: dict[str, Any]) -> list[Event]:
    decoder = ResponsesDecoder()
    body = b"".join(b"event: " + f["type"].encode() + b"\ndata: " + orjson.dumps(f) + b"\n\n" for f in frames)
    return decoder.feed(body + b"data: [DONE]\n\n") + decoder.close()


def run(*frames: dict[str, Any], end: dict[str, Any] | None = None) -> list[Event]:
    return decode({"type": "response.created", "response": {"id": "r1"}}, *frames,
                  end or {"type": "response.completed", "response": {"id": "r1"}})


def texts(events: list[Event]) -> list[tuple[bool, str]]:
    said: dict[str, list[Any]] = {}
    for e in events:
        if isinstance(e, TextStart):
            said[e.message_id] = [e.refusal, ""]
        elif isinstance(e, TextDelta):
            said[e.message_id][1] += e.delta
    return [(refusal, text) for refusal, text in said.values()]


def test_a_refusal_is_a_message_of_its_own_marked_as_one() -> None:
    events = run({"type": "response.output_item.added", "item": MESSAGE},
                 {"type": "response.content_part.added", **WHERE, "part": {"type": "refusal", "refusal": ""}},
                 {"type": "response.refusal.delta", **WHERE, "delta": "I can't "},
                 {"type": "response.refusal.delta", **WHERE, "delta": "do that."},
                 {"type": "response.refusal.done", **WHERE, "refusal": "I can't do that."},
                 {"type": "response.output_item.done", "item": {**MESSAGE, "content": [
                     {"type": "refusal", "refusal": "I can't do that."}]}})
    assert texts(events) == [(True, "I can't do that.")]
    assert sum(isinstance(e, TextEnd) for e in events) == 1


@pytest.mark.parametrize("done", ["response.output_text.done", "response.content_part.done",
                                  "response.output_item.done"])
def test_text_said_only_in_a_done_event_is_the_answer_once(done: str) -> None:
    events = {"response.output_text.done": {"type": done, **WHERE, "text": "Whole."},
              "response.content_part.done": {"type": done, **WHERE, "part": {"type": "output_text", "text": "Whole."}},
              "response.output_item.done": {"type": done, "item": {**MESSAGE, "content": [
                  {"type": "output_text", "text": "Whole."}]}}}
    frames = list(events.values())[list(events).index(done):]  # that event, and the ones after it that repeat it
    assert texts(run({"type": "response.output_item.added", "item": MESSAGE}, *frames)) == [(False, "Whole.")]


def test_text_said_in_deltas_is_not_said_again_by_the_done_events() -> None:
    events = run({"type": "response.output_item.added", "item": MESSAGE},
                 {"type": "response.output_text.delta", **WHERE, "delta": "Who"},
                 {"type": "response.output_text.delta", **WHERE, "delta": "le."},
                 {"type": "response.output_text.done", **WHERE, "text": "Whole."},
                 {"type": "response.output_item.done", "item": {**MESSAGE, "content": [
                     {"type": "output_text", "text": "Whole."}]}})
    assert texts(events) == [(False, "Whole.")]


def test_reasoning_said_only_when_its_item_is_done_is_read() -> None:
    item = {"id": "rs_1", "type": "reasoning", "summary": []}
    events = run({"type": "response.output_item.added", "item": item},
                 {"type": "response.output_item.done", "item": {**item, "content": [
                     {"type": "reasoning_text", "text": "Thinking."}]}})
    assert [e.delta for e in events if isinstance(e, ReasoningDelta)] == ["Thinking."]


def test_deltas_of_an_item_never_added_open_it_and_those_it_cannot_place_are_kept_raw() -> None:
    events = run({"type": "response.output_text.delta", **WHERE, "delta": "Never "},
                 {"type": "response.output_text.delta", **WHERE, "delta": "added."},
                 {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": "{}"},
                 {"type": "response.output_item.done", "item": {**MESSAGE, "content": [
                     {"type": "output_text", "text": "Never added."}]}},
                 {"type": "response.output_text.delta", **WHERE, "delta": " Late."})
    assert texts(events) == [(False, "Never added.")]
    assert [e.event["type"] for e in events if isinstance(e, Raw)] == ["response.function_call_arguments.delta",
                                                                        "response.output_text.delta"]


@pytest.mark.parametrize(("reason", "outcome", "cut"), [("max_output_tokens", "success", "length"),
                                                        ("content_filter", "success", "content_filter"),
                                                        ("cancelled", "cancelled", None),
                                                        ("something_else", "success", None)])
def test_an_incomplete_response_says_why(reason: str, outcome: str, cut: str | None) -> None:
    events = run({"type": "response.output_text.delta", **WHERE, "delta": "The answer is"},
                 end={"type": "response.incomplete", "response": {"id": "r1", "status": "incomplete",
                                                                  "incomplete_details": {"reason": reason}}})
    assert isinstance(events[-1], RunFinished) and (events[-1].outcome, events[-1].stop_reason) == (outcome, cut)
    decoder = ResponsesDecoder()
    body = {"id": "r1", "object": "response", "status": "incomplete", "incomplete_details": {"reason": reason},
            "output": [{**MESSAGE, "content": [{"type": "output_text", "text": "The answer is"}]}]}
    events = decoder.feed(orjson.dumps(body)) + decoder.close()
    assert isinstance(events[-1], RunFinished) and (events[-1].outcome, events[-1].stop_reason) == (outcome, cut)
    assert texts(events) == [(False, "The answer is")]
