"""AG-UI 1.0's families through the LangGraph dialect: the everything corpus (`tests/fixtures/ag-ui/
agui10_everything.sse`) as a LangGraph client gets it, what is counted dropped, and what the LangGraph decoder reads
back from it; the same corpus through the gateway to the real `@langchain/langgraph-sdk` and `langgraph-sdk`
clients."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from helpers import FIXTURES, decode
from node_clients import run_langgraph
from peers_env import run_langgraph_client
from servers import Served

from adapters import registry
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.events import (
    ActivitySnapshot,
    EncryptedValue,
    Interrupt,
    InterruptResolved,
    RunFinished,
    RunStarted,
    SubagentError,
    SubagentFinished,
    SubagentStarted,
    TextStart,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.core.turn import ContentPart, Turn
from gateway.server.app import create_app
from tests.adapters.vercel.test_ai_sdk_versions import recorded_agent

EVERYTHING = FIXTURES / "ag-ui" / "agui10_everything.sse"
MODES = ["values", "messages-tuple", "updates", "custom"]


def frames(body: bytes) -> list[tuple[str, Any]]:
    out = []
    for block in body.decode().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "event" in lines:
            out.append((lines["event"], orjson.loads(lines["data"])))
    return out


def written(events: list[Any], modes: list[str] | None = None) -> tuple[list[tuple[str, Any]], dict[str, int]]:
    turn = Turn(metadata={"langgraph": {"stream_mode": modes or MODES}})
    encoder = registry.get("langgraph").new_encoder(turn)
    return frames(encoder.encode(events)), dict(encoder.dropped)


def test_the_everything_corpus_as_a_langgraph_client_gets_it() -> None:
    got, dropped = written(decode("ag-ui", EVERYTHING.read_bytes()))
    assert got[0] == ("metadata", {"run_id": "run-corpus", "attempt": 1, "metadata": {"traceId": "t-1"}})
    custom = [value for event, value in got if event == "custom"]
    assert custom == [
        {"name": "activity", "id": "act-1", "data": {"activityType": "plan", "content": {"status": "started"}}},
        {"name": "subagent", "id": "sub-x", "data": {"subagentRunId": "sub-x", "name": "helper", "status": "running"}},
        {"name": "subagent", "id": "sub-x",
         "data": {"subagentRunId": "sub-x", "name": "helper", "status": "success", "result": "ok"}},
        {"name": "activity", "id": "act-1", "data": {"activityType": "plan", "content": {"status": "done"}}},
        {"name": "progress", "data": {"pct": 100}}]
    chunks = [value[0] for event, value in got if event == "messages"]
    encrypted = [c for c in chunks if c["id"] == "r1" and c["content"][0].get("extras")]
    assert encrypted[0]["content"] == [{"type": "reasoning", "reasoning": "",
                                        "extras": {"encrypted_content": "opaque"}}]
    usage = next(c for c in chunks if c["usage_metadata"] is not None)
    assert usage["id"] == "m1" and usage["response_metadata"] == {"model_name": "m"}
    assert usage["usage_metadata"] == {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8,
                                       "input_token_details": {"cache_read": 2},
                                       "output_token_details": {"reasoning": 1}}
    last = [value for event, value in got if event == "values"][-1]
    assert last["phase"] == "done" and last["items"] == 2
    helper, done = last["messages"]
    assert helper["content"] == "Helper here."
    assert helper["response_metadata"] == {"agent_gateway": {"subagent_run_id": "sub-x"}}
    assert done["content"] == "All done." and done["usage_metadata"] == usage["usage_metadata"]
    assert done["response_metadata"] == {"agent_gateway": {"metadata": {"lang": "en"}}, "model_name": "m"}
    assert dropped == {"step": 2}  # steps, as before: LangGraph's nodes are not the run's steps


def test_the_langgraph_decoder_reads_the_families_back() -> None:
    original = decode("ag-ui", EVERYTHING.read_bytes())
    encoder = registry.get("langgraph").new_encoder(Turn(metadata={"langgraph": {"stream_mode": MODES}}))
    back = decode("langgraph", encoder.encode(original))
    assert [type(e).__name__ for e in back if isinstance(e, ActivitySnapshot | SubagentStarted | SubagentFinished)] \
        == ["ActivitySnapshot", "SubagentStarted", "SubagentFinished", "ActivitySnapshot"]
    assert next(e for e in back if isinstance(e, ActivitySnapshot)).content == {"status": "started"}
    assert [e.value for e in back if isinstance(e, EncryptedValue)] == ["opaque"]
    texts = {e.message_id: e for e in back if isinstance(e, TextStart)}
    assert texts["m-x"].subagent_run_id == "sub-x" and texts["m1"].metadata == {"lang": "en"}
    assert next(e for e in back if isinstance(e, Usage)) == Usage(input_tokens=5, output_tokens=3, total_tokens=8,
                                                                  model="m", reasoning_tokens=1, cached_input_tokens=2)
    assert isinstance(back[0], RunStarted) and back[0].metadata == {"traceId": "t-1"}
    assert isinstance(back[-1], RunFinished)


def test_what_langgraph_has_no_place_for_is_counted() -> None:
    events = [
        RunStarted(thread_id="t", run_id="r"),
        Usage(input_tokens=1, output_tokens=1),  # before any AI message
        SubagentStarted("sub-1", "helper"),
        ToolCallStart("c1", "search", parent_message_id="m1", subagent_run_id="sub-1", metadata={"k": 1}),
        EncryptedValue("tool-call", "c1", "sealed"),
        ToolResult("c1", [ContentPart("text", text="see"), ContentPart("image", url="https://x/i.png")],
                   message_id="t1", denied=True, metadata={"k": 2}),
        Interrupt("int-1", payload="yes or no?", expires_at="2026-12-01T00:00:00Z"),
        Interrupt("int-2", reason="approval", message="Go?", expires_at="2026-12-01T00:00:00Z"),
        InterruptResolved("int-2"),
        SubagentError("sub-1", "it broke"),
        RunFinished(outcome="interrupt")]
    got, dropped = written(events)
    assert dropped == {"usage": 1, "subagent": 1, "metadata": 1, "encrypted_value": 1, "interrupt_expiry": 1,
                       "interrupt_resolved": 1}
    tool = next(value[0] for event, value in got if event == "messages" and value[0]["type"] == "tool")
    assert tool["status"] == "error" and tool["response_metadata"] == {"agent_gateway": {"metadata": {"k": 2}}}
    assert tool["content"] == [{"type": "text", "text": "see"},
                               {"type": "image_url", "image_url": {"url": "https://x/i.png"}}]
    asked = [value["__interrupt__"][0] for event, value in got if event == "updates" and "__interrupt__" in value]
    assert asked[1]["value"]["expires_at"] == "2026-12-01T00:00:00Z"
    waiting = [value for event, value in got if event == "values"][-1]["__interrupt__"]
    assert [item["id"] for item in waiting] == ["int-1"]  # int-2 was answered in the run
    failed = [value for event, value in got if event == "custom"][-1]
    assert failed == {"name": "subagent", "id": "sub-1",
                      "data": {"subagentRunId": "sub-1", "name": "helper", "status": "error", "message": "it broke"}}
    back = decode("langgraph", b"".join(f"event: {e}\ndata: ".encode() + orjson.dumps(v) + b"\n\n" for e, v in got))
    result = next(e for e in back if isinstance(e, ToolResult))
    assert result.metadata == {"k": 2} and [p.type for p in result.content] == ["text", "image"]
    assert next(e for e in back if isinstance(e, Interrupt) and e.id == "int-2").expires_at == "2026-12-01T00:00:00Z"
    assert next(e for e in back if isinstance(e, SubagentError)).message == "it broke"


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with Served(recorded_agent(EVERYTHING)) as agui10:
        routes = [{"name": "agui10", "paths": ["/lg"], "client_dialects": ["langgraph"],
                   "upstream": {"url": f"{agui10.url}/agui", "dialect": "ag-ui"},
                   "timeouts": {"first_event": 10, "idle": 10, "total": 30}}]
        config = GatewayConfig.model_validate({"routes": routes})
        with Served(create_app(config, store=MemoryStore())) as served:
            yield f"{served.url}/lg"


def test_the_js_client_gets_the_families(gateway: str) -> None:
    steps = run_langgraph(gateway, [{"op": "thread"}, {"op": "stream", "text": "everything", "modes": MODES}])
    parts = steps[1]["parts"]
    assert "error" not in steps[1], steps[1]
    custom = [p["data"] for p in parts if p["event"] == "custom"]
    assert [c["name"] for c in custom] == ["activity", "subagent", "subagent", "activity", "progress"]
    assert custom[3]["data"]["content"] == {"status": "done"}
    last = [p["data"] for p in parts if p["event"] == "values"][-1]
    assert last["messages"][-1]["usage_metadata"]["output_token_details"] == {"reasoning": 1}
    helper = next(m for m in last["messages"] if m.get("id") == "m-x")
    assert helper["response_metadata"]["agent_gateway"] == {"subagent_run_id": "sub-x"}


def test_the_python_client_gets_the_families(gateway: str) -> None:
    thread = run_langgraph_client(gateway, "create-thread")
    assert thread.error is None, thread.error
    run = run_langgraph_client(gateway, "stream", thread=thread.parts[0]["thread_id"], text="everything", mode=MODES)
    assert run.error is None, run.error
    custom = [p["data"] for p in run.parts if p["event"] == "custom"]
    assert [c["name"] for c in custom] == ["activity", "subagent", "subagent", "activity", "progress"]
    chunks = [p["data"][0] for p in run.parts if p["event"] == "messages"]
    assert any(c.get("usage_metadata") and c["usage_metadata"]["input_token_details"] == {"cache_read": 2}
               for c in chunks)
