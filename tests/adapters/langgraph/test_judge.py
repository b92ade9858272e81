"""LangGraph's judge and the documents the gateway serves LangGraph clients, held to the server's published API
schema: the `openapi.json` that `langgraph-api` 0.16.7 ships (in the langgraph peer's venv, never copied here).
What a real server streams passes the judge (tests/adapters/langgraph/test_upstream.py); a broken stream does not."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from peers_env import LANGGRAPH, _require

from adapters.langgraph.conformance import FRAMES, judge
from adapters.langgraph.encode import LangGraphEncoder
from adapters.langgraph.interrupts import interrupt_item
from adapters.langgraph.threads import RunLog, assistant, state, thread
from gateway.core.conformance import Answer
from gateway.core.events import Interrupt, RunFinished, RunStarted, TextDelta, TextEnd, TextStart
from gateway.core.queries import KeptConversation
from gateway.core.turn import Message, Turn


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    _require(LANGGRAPH)
    found = next(LANGGRAPH.venv.glob("lib/python*/site-packages/openapi.json"))
    return dict(json.loads(found.read_text()))


def _check(schema: dict[str, Any], name: str, value: Any) -> None:
    # The component with the document's components beside it: its `#/components/...` references resolve in it.
    jsonschema.validate(value, {**schema["components"]["schemas"][name], "components": schema["components"]})


def test_every_stream_mode_of_the_schema_is_a_frame_the_judge_knows(schema: dict[str, Any]) -> None:
    modes = schema["components"]["schemas"]["RunCreateStateful"]["properties"]["stream_mode"]["anyOf"][1]["enum"]
    assert set(modes) - {"messages-tuple"} <= FRAMES


def test_threads_state_runs_and_assistants_follow_the_schema(schema: dict[str, Any]) -> None:
    kept = KeptConversation([Message("user", "hi", "m1"), Message("assistant", "hello", "m2")], {"count": 1},
                            ["int-1"])
    _check(schema, "Thread", thread("6f1c1e4e-0b8a-4b5e-9a57-6c4a7d0e8b21", kept))
    _check(schema, "ThreadState", state("6f1c1e4e-0b8a-4b5e-9a57-6c4a7d0e8b21", kept))
    _check(schema, "Assistant", assistant("route0"))
    log = RunLog(Turn(conversation_id="6f1c1e4e-0b8a-4b5e-9a57-6c4a7d0e8b21",
                      run_id="0c6c5c2e-3f5e-4d55-8a7e-2f3d4b5a6c7d", agent="agent"))
    log.feed([RunStarted(), RunFinished()])
    _check(schema, "Run", log.document())
    for event in (Interrupt("int-1", reason="confirm", message="Continue?", payload={"options": ["yes"]}),
                  Interrupt("abc", reason="interrupt", message=None, payload={"question": "Go on?"})):
        _check(schema, "Interrupt", interrupt_item(event))


def test_the_gateways_own_stream_passes_the_judge() -> None:
    encoder = LangGraphEncoder(Turn(conversation_id="t", run_id="r", messages=[Message("user", "hi")]))
    body = encoder.encode([RunStarted(), TextStart("m"), TextDelta("m", "Hi"), TextEnd("m"),
                           Interrupt("int-1", reason="confirm", message="Continue?"), RunFinished(outcome="interrupt")])
    assert judge(Answer(200, encoder.headers, body)) == []


@pytest.mark.parametrize(("body", "rule"), [
    (b'event: values\ndata: {}\n\n', "metadata-first"),
    (b'event: metadata\ndata: {"run_id": "r"}\n\ndata: {"a": 1}\n\n', "frame-name"),
    (b'event: metadata\ndata: {"run_id": "r"}\n\nevent: messages\ndata: {"content": "x"}\n\n', "messages-tuple"),
    (b'event: metadata\ndata: {"run_id": "r"}\n\nevent: messages\ndata: [{"type": "bot", "content": "x"}, {}]\n\n',
     "message-type"),
    (b'event: metadata\ndata: {"run_id": "r"}\n\nevent: updates\ndata: {"__interrupt__": [{"id": "i"}]}\n\n',
     "interrupt-value"),
    (b'event: metadata\ndata: {"run_id": "r"}\n\nevent: error\ndata: {"message": "x"}\n\nevent: values\n'
     b'data: {}\n\n', "frame-after-error"),
    (b'event: metadata\ndata: {"run_id": 1}\n\n', "metadata-run-id"),
    (b'event: metadata\ndata: not json\n\n', "json"),
])
def test_a_broken_stream_breaks_the_rule_that_names_it(body: bytes, rule: str) -> None:
    found = judge(Answer(200, {"content-type": "text/event-stream"}, body))
    assert rule in [v.rule for v in found], found
