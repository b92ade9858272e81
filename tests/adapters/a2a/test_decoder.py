"""The A2A decoder's rules for artifacts and the task's end: an update that does not `append` replaces the artifact
(A2A's rule), shown to a client that keeps what it was shown; a completed task whose answer was cut short; an
agent on HTTP+JSON asked about its task there, and its AIP-193 errors read."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from adapters.a2a.decode import A2ADecoder
from gateway.core.events import Event, RunError, RunFinished, TextDelta, TextStart

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


def test_an_agent_answering_bare_responses_is_asked_about_its_task_on_http_json() -> None:
    rest, rpc = A2ADecoder(), A2ADecoder()
    rest.feed(b"data: " + orjson.dumps(TASK) + b"\n\n")
    rpc.feed(b"data: " + orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": TASK}) + b"\n\n")
    cancel, subscribe, get = rest.cancel_request(), rest.reattach_request(), rest.reattach_request()
    assert cancel is not None and subscribe is not None and get is not None
    assert [(r.method, r.path, r.body) for r in (cancel, subscribe, get)] == [
        ("POST", "/tasks/t1:cancel", b""), ("POST", "/tasks/t1:subscribe", b""), ("GET", "/tasks/t1", b"")]
    called = rpc.cancel_request()
    assert called is not None and called.path is None and orjson.loads(called.body)["method"] == "CancelTask"


@pytest.mark.parametrize("framed", [False, True], ids=["body", "event-error"])
def test_an_http_json_error_is_the_runs_error_with_its_reason_as_code(framed: bool) -> None:
    error = {"error": {"code": 404, "status": "NOT_FOUND", "message": "Task not found", "details": [
        {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
         "domain": "a2a-protocol.org", "metadata": {}}]}}
    decoder = A2ADecoder()
    body = b"event: error\ndata: " + orjson.dumps(error) + b"\n\n" if framed else orjson.dumps(error)
    events = decoder.feed(body) + decoder.close()
    [failed] = [e for e in events if isinstance(e, RunError)]
    assert failed.code == "task_not_found"
    assert failed.message == "Task not found (HTTP+JSON error 404 NOT_FOUND TASK_NOT_FOUND)"
