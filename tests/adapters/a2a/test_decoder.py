"""The A2A decoder's rules for artifacts and the task's end: an update that does not `append` replaces the artifact
(A2A's rule), shown to a client that keeps what it was shown; a completed task whose answer was cut short."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from adapters.a2a.decode import A2ADecoder
from gateway.core.events import Event, RunFinished, TextDelta, TextStart

TASK = {"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}}
DONE = {"statusUpdate": {"taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}}


def chunk(text: str, append: bool | None = None, last: bool = False, artifact: str = "a1") -> dict[str, Any]:
    update: dict[str, Any] = {"taskId": "t1", "contextId": "c1", "lastChunk": last,
                              "artifact": {"artifactId": artifact, "parts": [{"text": text}]}}
    if append is not None:
        update["append"] = append
    return {"artifactUpdate": update}


def decode(*results: dict[str, Any]) -> list[Event]:
    decoder = A2ADecoder()
    body = b"".join(b"data: " + orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": r}) + b"\n\n"
                    for r in (TASK, *results))
    return decoder.feed(body) + decoder.close()


def messages(events: list[Event]) -> list[str]:
    said: dict[str, str] = {}
    for e in events:
        if isinstance(e, TextStart):
            said[e.message_id] = ""
        elif isinstance(e, TextDelta):
            said[e.message_id] += e.delta
    return list(said.values())


@pytest.mark.parametrize("append", [False, None], ids=["false", "unsaid"])
def test_an_artifact_replaced_as_it_grows_is_one_message_of_its_last_text(append: bool | None) -> None:
    events = decode(chunk("The", append), chunk("The answer", append), chunk("The answer is 42.", append, True), DONE)
    assert messages(events) == ["The answer is 42."]


def test_chunks_that_append_are_joined() -> None:
    assert messages(decode(chunk("The"), chunk(" answer", True), chunk(" is 42.", True, True), DONE)) == [
        "The answer is 42."]


def test_an_artifact_rewritten_after_it_was_shown_is_a_new_message_and_what_was_shown_stays() -> None:
    events = decode(chunk("The answer is"), chunk(" 41.", True), chunk("The answer is 42.", False),
                    chunk("", True, True), DONE)
    assert messages(events) == ["The answer is 41.", "The answer is 42."]


def test_a_replacement_with_less_of_the_text_shown_adds_nothing() -> None:
    assert messages(decode(chunk("The answer is 42."), chunk("The answer", False, True), DONE)) == [
        "The answer is 42."]


def test_an_artifact_replaced_after_its_last_chunk_is_a_new_message() -> None:
    assert messages(decode(chunk("Draft.", None, True), chunk("Draft. Final.", False, True), DONE)) == [
        "Draft.", "Draft. Final."]


def test_a_replaced_artifact_leaves_the_others_alone() -> None:
    events = decode(chunk("One", artifact="a1"), chunk("Two", artifact="a2"), chunk("One more", False, True, "a1"),
                    chunk(" too", True, True, "a2"), DONE)
    assert messages(events) == ["One more", "Two too"]


@pytest.mark.parametrize("where", ["update", "task"])
def test_a_completed_task_cut_short_says_so_in_its_metadata(where: str) -> None:
    cut = {"stopReason": "length"}
    if where == "update":
        events = decode(chunk("The answer is", None, True), {"statusUpdate": {**DONE["statusUpdate"], "metadata": cut}})
    else:
        decoder = A2ADecoder()
        body = {"jsonrpc": "2.0", "id": 1, "result": {"task": {
            "id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}, "metadata": cut,
            "artifacts": [{"artifactId": "a1", "parts": [{"text": "The answer is"}]}]}}}
        events = decoder.feed(orjson.dumps(body)) + decoder.close()
    assert messages(events) == ["The answer is"]
    assert isinstance(events[-1], RunFinished) and events[-1].stop_reason == "length"
