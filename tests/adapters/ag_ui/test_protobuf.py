"""AG-UI over protobuf, both ways, against the packages that define it: `@ag-ui/proto` 1.0.0 reads every event the
gateway writes as it reads its own, the real `@ag-ui/client` asking for protobuf gets it and ends with what it ends
with over SSE, and an upstream that answers in protobuf (`@ag-ui/encoder`'s own negotiation) is read."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from helpers import FIXTURES, ROOT, sse_payloads
from node_clients import CLIENTS_DIR, run_agui
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters.ag_ui import proto
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app

EVERYTHING = FIXTURES / "ag-ui" / "agui10_everything.sse"


def events_of(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(p) for p in sse_payloads(path.read_bytes())]


def test_the_package_reads_every_event_the_gateway_writes_and_the_gateway_reads_the_packages() -> None:
    events = [e for path in sorted((FIXTURES / "ag-ui").glob("*.sse")) for e in events_of(path)
              if isinstance(e, dict) and e.get("type") in proto._schema().arm_of_type]
    payload = [{"frame": proto.encode(e).hex(), "event": e} for e in events]
    result = subprocess.run(["node", "proto-roundtrip.mjs"], input=json.dumps(payload).encode(), cwd=CLIENTS_DIR,
                            capture_output=True, timeout=60, check=True)
    answers = json.loads(result.stdout)
    assert len(answers) == len(events) > 300
    for event, answer in zip(events, answers, strict=True):
        assert answer["error"] is None and answer["decoded"] == event, event
        assert proto.decode(bytes.fromhex(answer["encoded"])[4:]) == event


def recorded_agent(path: Path) -> Starlette:
    body = path.read_bytes()

    async def respond(request: Request) -> Response:
        return Response(body, media_type="text/event-stream")

    return Starlette(routes=[Route("/agui", respond, methods=["POST"])])


class EncoderServer:
    def __init__(self, url: str, process: subprocess.Popen[bytes]) -> None:
        self.url = url
        self.process = process

    def served(self) -> str:
        """The content type of the next answer it gave."""
        assert self.process.stdout is not None
        return str(json.loads(self.process.stdout.readline())["served"])


@pytest.fixture(scope="module")
def encoder_server() -> Iterator[EncoderServer]:
    """`@ag-ui/encoder`'s own server, answering every run with the corpus's every-family stream."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        json.dump(events_of(EVERYTHING), file)
    process = subprocess.Popen(["node", "agui-proto-server.mjs", file.name], cwd=CLIENTS_DIR, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE)
    try:
        assert process.stdout is not None
        port = json.loads(process.stdout.readline())["port"]
        yield EncoderServer(f"http://127.0.0.1:{port}/agui", process)
    finally:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.close()
        process.wait(10)
        process.stdout.close()
        Path(file.name).unlink()


@pytest.fixture(scope="module")
def gateway(encoder_server: EncoderServer) -> Iterator[str]:
    timeouts = {"first_event": 10, "idle": 10, "total": 30}
    with Served(create_agent_app("ag-ui")) as agent, Served(recorded_agent(EVERYTHING)) as recorded:
        config = GatewayConfig.model_validate({"routes": [
            {"name": "agent", "paths": ["/agent"], "client_dialects": ["ag-ui"],
             "upstream": {"url": f"{agent.url}/agui", "dialect": "ag-ui"}, "timeouts": timeouts},
            {"name": "recorded", "paths": ["/recorded"], "client_dialects": ["ag-ui"],
             "upstream": {"url": f"{recorded.url}/agui", "dialect": "ag-ui"}, "timeouts": timeouts},
            {"name": "encoder", "paths": ["/encoder"], "client_dialects": ["ag-ui"],
             "upstream": {"url": encoder_server.url, "dialect": "ag-ui", "variant": "proto"}, "timeouts": timeouts},
        ]})
        with Served(create_app(config, store=MemoryStore())) as served:
            yield served.url


GO = [{"id": "u1", "role": "user", "content": "go"}]


def seen(step: dict[str, Any]) -> dict[str, Any]:
    assert step["error"] is None and step["warnings"] == [], (step["error"], step["warnings"])
    return {key: step[key] for key in ("types", "messages", "state", "finished")}


def test_the_real_client_asking_for_protobuf_gets_it_and_ends_as_it_does_over_sse(gateway: str) -> None:
    over = {transport: run_agui({"url": f"{gateway}/recorded", "threadId": f"every-{transport}", "proto": transport,
                                 "steps": [{"messages": GO}]})["steps"][0]
            for transport in (True, False)}
    assert over[True]["contentTypes"] == [proto.MEDIA_TYPE]
    assert over[False]["contentTypes"] == ["text/event-stream; charset=utf-8"]
    assert seen(over[True]) == seen(over[False])
    assert {"ACTIVITY_SNAPSHOT", "SUBAGENT_STARTED", "REASONING_ENCRYPTED_VALUE"} <= set(over[True]["types"])


def test_an_approval_and_its_answer_over_protobuf(gateway: str) -> None:
    asked, answered = run_agui({"url": f"{gateway}/agent", "threadId": "proto-approve", "proto": True, "steps": [
        {"messages": [{"role": "user", "content": "please approve"}]},
        {"resume": [{"status": "resolved", "payload": {"approved": True}}]},
    ]})["steps"]
    assert asked["contentTypes"] == [proto.MEDIA_TYPE] and seen(asked)["finished"]["outcome"] == "interrupt"
    interrupt = asked["pendingInterrupts"][0]
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"]
    assert seen(answered)["finished"]["outcome"] == "success"
    assert answered["newMessages"][-1]["content"].startswith(f"Resumed {interrupt['id']}")


def test_a_client_that_names_no_protobuf_gets_sse(gateway: str) -> None:
    body = {"threadId": "t", "runId": "r", "protocolVersion": "1.0", "messages": [
        {"id": "u", "role": "user", "content": "hello"}]}
    for accept in ("*/*", "text/event-stream", f"text/event-stream, {proto.MEDIA_TYPE};q=0.5", None):
        headers = {"accept": accept} if accept else {}
        reply = httpx.post(f"{gateway}/agent", json=body, headers=headers, timeout=30)
        assert reply.headers["content-type"].startswith("text/event-stream"), accept


PROTO_BEFORE_1_0 = frozenset({
    "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS",
    "TOOL_CALL_END", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT", "RAW", "CUSTOM", "RUN_STARTED",
    "RUN_FINISHED", "RUN_ERROR", "STEP_STARTED", "STEP_FINISHED", "SUBAGENT_STARTED", "SUBAGENT_FINISHED",
    "SUBAGENT_ERROR"})
"""The events of `@ag-ui/proto` 0.0.59's schema, the last before 1.0: its `decode` throws on any other arm."""


def frames_of(body: bytes) -> list[dict[str, Any]]:
    framer = proto.ProtoFramer(1 << 20)
    events = [proto.decode(message) for message in framer.feed(body)]
    assert framer.pending == 0
    return events


def test_a_client_before_1_0_reading_protobuf_gets_what_its_schema_has_and_no_reasoning(gateway: str) -> None:
    """A client before 1.0 (no `protocolVersion`) asking for protobuf reads its own schema, which has no reasoning
    events (`THINKING_*` are SSE's): a run that reasons is its answer alone, the reasoning left out."""
    body = {"threadId": "proto-legacy", "runId": "r1", "messages": [{"id": "u1", "role": "user",
                                                                     "content": "think about it"}]}
    reply = httpx.post(f"{gateway}/agent", json=body, headers={"accept": proto.MEDIA_TYPE}, timeout=30)
    assert reply.headers["content-type"] == proto.MEDIA_TYPE
    events = frames_of(reply.content)
    assert {e["type"] for e in events} <= PROTO_BEFORE_1_0, [e["type"] for e in events]
    assert events[-1]["type"] == "RUN_FINISHED"
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def test_an_upstream_answering_in_protobuf_is_read(gateway: str, encoder_server: EncoderServer) -> None:
    (step,) = run_agui({"url": f"{gateway}/encoder", "threadId": "from-proto", "steps": [{"messages": GO}]})["steps"]
    assert encoder_server.served() == proto.MEDIA_TYPE  # asked for, and answered in, protobuf
    (direct,) = run_agui({"url": f"{gateway}/recorded", "threadId": "from-sse", "steps": [{"messages": GO}]})["steps"]
    assert seen(step) == seen(direct)


def test_the_schema_in_the_tree_is_what_the_pinned_package_gives() -> None:
    result = subprocess.run([sys.executable, "scripts/generate-agui-proto", "--check"], cwd=ROOT, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr


def test_the_ag_ui_judge_reads_a_protobuf_answer_as_the_client_does() -> None:
    from adapters.ag_ui import judge
    from gateway.core.conformance import Answer

    body = b"".join(proto.encode(e) for e in events_of(EVERYTHING))
    headers = {"content-type": proto.MEDIA_TYPE}
    assert judge(Answer(200, headers, body)) == []
    cut = judge(Answer(200, headers, body[:-3]))
    assert {v.rule for v in cut} == {"protobuf-truncated", "no-terminal-event"}
    unknown = proto.frame(b"\x08\x01")  # a field the envelope does not have: no event of this version
    first = proto.encode(events_of(EVERYTHING)[0])
    assert judge(Answer(200, headers, first + unknown))[0].rule == "protobuf"


def test_a_run_lost_midway_ends_in_the_wire_format_of_its_reply() -> None:
    """A follower's reply is the run's, as the run's own client asked for it: the error for a run lost with its
    replica is written in that reply's wire format (its head's content type), not in SSE into a protobuf stream."""
    from adapters import registry
    from gateway.runs.tape import TapeLost
    from gateway.server.resumable import _lost_run_error

    lost = _lost_run_error(registry.get("ag-ui"))
    gone = TapeLost("the run's replica is gone")
    in_proto = lost({"content-type": proto.MEDIA_TYPE}, gone)
    event = proto.decode(in_proto[4:])
    assert event["type"] == "RUN_ERROR" and event["code"] == "resume_unavailable", event
    in_sse = lost({"content-type": "text/event-stream"}, gone)
    assert [orjson.loads(p)["type"] for p in sse_payloads(in_sse)] == ["RUN_ERROR"]
