"""A2A agents called over gRPC (`adapters/a2a/grpc_calls.py`, `grpc_decode.py`, the `UpstreamTransport` the pool
serves): a2a-sdk 1.3.0's own gRPC server (`tests/peers/a2a_agent.py` with `A2A_PEER_GRPC=1`, the card listing GRPC
first) and the gateway's own gRPC listener as upstreams; which binding the card and a route's pin choose; the
decoder's reading of statuses and text chunks. The parametrised upstream scenarios are in
`test_peers_through_gateway.py`. Install first: `.venv/bin/python tests/peers_env.py`."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import Reply, post, request_body, user_message
from peers_env import a2a_upstream, run_a2a_client
from servers import Served, closed_port, free_port
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

import adapters.a2a as a2a
from adapters.a2a import grpc_calls, proto
from adapters.a2a.grpc_decode import A2AProtoDecoder, status_frame
from adapters.a2a.grpc_wire import frame, stream_response
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.core.events import Interrupt, RunError, RunFinished, TextDelta
from gateway.core.transports import Unusable
from gateway.server.app import create_app

KEY = "k-upstream-grpc"
ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def grpc_peer() -> Iterator[str]:
    with a2a_upstream(grpc=True) as url:
        yield url


def gateway(url: str, variant: str | None = None, headers: dict[str, str] | None = None, **route: Any) -> Served:
    upstream = {"url": url, "dialect": "a2a", "variant": variant, "headers": headers or {}}
    return Served(create_app(GatewayConfig.model_validate({
        "store": {"url": "memory://"}, "routes": [{"name": "front", "upstream": upstream, **route}]})))


def ask(base: str, text: str, conversation: str, **extra: Any) -> Reply:
    with httpx.Client(timeout=30) as http:
        body = request_body("ag-ui", [user_message("ag-ui", text)], conversation, **extra)
        return Reply("ag-ui", post(http, base + "/agui", body))


def calls(url: str) -> dict[str, int]:
    return dict(httpx.get(url + "/bindings").json())


# -- which binding


def test_a_card_that_lists_grpc_first_is_called_over_grpc(grpc_peer: str) -> None:
    card = httpx.get(grpc_peer + "/.well-known/agent-card.json").json()
    assert [i["protocolBinding"] for i in card["supportedInterfaces"]][:2] == ["GRPC", "JSONRPC"]
    before = calls(grpc_peer)
    with gateway(grpc_peer) as gw:
        reply = ask(gw.url, "hello there", "pick-grpc")
    after = calls(grpc_peer)
    assert "echo: hello there" in reply.text and isinstance(reply.events[-1], RunFinished)
    assert after["grpc"] > before["grpc"] and after["jsonrpc"] == before["jsonrpc"]


@pytest.mark.parametrize(("pin", "binding"), [("jsonrpc", "jsonrpc"), ("send", "jsonrpc"), ("rest", "rest")])
def test_a_route_pinned_to_another_binding_is_not_called_over_grpc(grpc_peer: str, pin: str, binding: str) -> None:
    before = calls(grpc_peer)
    with gateway(grpc_peer, pin) as gw:
        reply = ask(gw.url, f"hello {pin}", f"pin-{pin}")
    after = calls(grpc_peer)
    assert f"echo: hello {pin}" in reply.text and isinstance(reply.events[-1], RunFinished)
    assert after[binding] > before[binding] and after["grpc"] == before["grpc"]


def test_read_card_takes_the_first_interface_the_gateway_speaks_or_the_pinned_one() -> None:
    card = {"supportedInterfaces": [
        {"url": "agent:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "team a"},
        {"url": "http://agent/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0.1"},
        {"url": "http://agent/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": "http://agent/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]}
    read = a2a.read_card
    assert read(card, "http://agent") == a2a.Endpoint("agent:50051/team%20a", "grpc")
    assert read(card, "http://agent", "rest") == a2a.Endpoint("http://agent/rest", "rest")
    assert read(card, "http://agent", "jsonrpc") == a2a.Endpoint("http://agent/rpc", None)
    assert read(card, "http://agent", "0.3") == a2a.Endpoint("http://agent/rpc", "0.3")
    assert read({**card, "capabilities": {"streaming": False}}, "http://agent") == \
        a2a.Endpoint("agent:50051/team%20a", "grpc-send")
    assert read({"url": "http://agent/old", "preferredTransport": "JSONRPC"}, "http://agent") == \
        a2a.Endpoint("http://agent/old", "0.3")


def test_a_grpc_only_card_without_grpcio_is_refused_with_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """grpcio is installed here: its absence is what `missing()` would say without it."""
    line = "grpcio is not installed: pip install 'agent-gateway[grpc]'"
    monkeypatch.setattr(grpc_calls, "missing", lambda: line)
    only_grpc = {"supportedInterfaces": [{"url": "agent:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}]}
    with pytest.raises(Unusable, match=r"offers gRPC only.*pip install 'agent-gateway\[grpc\]'"):
        a2a.read_card(only_grpc, "http://agent")
    also_jsonrpc = {"supportedInterfaces": [*only_grpc["supportedInterfaces"],
                                            {"url": "http://agent/", "protocolBinding": "JSONRPC"}]}
    assert a2a.read_card(also_jsonrpc, "http://agent") == a2a.Endpoint("http://agent/", None)


@pytest.fixture(scope="module")
def only_grpc() -> Iterator[str]:
    """An agent whose card offers gRPC alone."""
    card = {"name": "g", "supportedInterfaces": [{"url": "127.0.0.1:1", "protocolBinding": "GRPC",
                                                  "protocolVersion": "1.0"}]}
    app = Starlette(routes=[Route("/.well-known/agent-card.json", lambda request: JSONResponse(card))])
    with Served(app) as served:
        yield served.url


def test_a_run_to_a_grpc_only_agent_without_grpcio_is_refused_in_the_clients_error(
        monkeypatch: pytest.MonkeyPatch, only_grpc: str) -> None:
    monkeypatch.setattr(grpc_calls, "missing", lambda: "grpcio is not installed: pip install 'agent-gateway[grpc]'")
    with gateway(only_grpc) as gw:
        reply = ask(gw.url, "hello", "refused")
    assert reply.error is not None and "pip install 'agent-gateway[grpc]'" in reply.error.message
    assert "offers gRPC only" in reply.error.message


def test_serve_check_without_grpcio_fails_a_route_whose_agent_offers_only_grpc(tmp_path: Path, only_grpc: str) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(orjson.dumps({"store": {"url": "memory://"}, "routes": [
        {"name": "front", "upstream": {"url": only_grpc, "dialect": "a2a"}}]}).decode())
    hide_grpc = "import sys; sys.modules['grpc'] = None; from gateway.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", hide_grpc, "serve", "--config", str(path), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    assert "front: upstream FAILED (the agent's card offers gRPC only, and grpcio is not installed: pip install " \
        "'agent-gateway[grpc]')" in done.stdout.splitlines(), done.stdout + done.stderr
    assert done.returncode == 1


# -- over gRPC


def test_an_approval_the_agent_asks_over_grpc_is_answered(grpc_peer: str) -> None:
    with gateway(grpc_peer) as gw:
        asked = ask(gw.url, "approve the deletion", "approve-grpc")
        interrupt = next(e for e in asked.events if isinstance(e, Interrupt))
        answered = ask(gw.url, "approve the deletion", "approve-grpc",
                       resume=[{"interruptId": interrupt.id, "status": "resolved", "payload": {"approved": True}}])
    assert interrupt.message == "Delete /tmp/demo? (approve/deny)" and interrupt.reason == "input_required"
    assert answered.text == "Resumed with yes", answered.events


def test_a_crash_mid_stream_is_the_grpc_status_as_the_clients_error(grpc_peer: str) -> None:
    with gateway(grpc_peer) as gw:
        reply = ask(gw.url, "crash now", "crash-grpc")
    assert "partial answer..." in reply.text
    assert reply.error is not None and "scripted crash" in reply.error.message and "(gRPC " in reply.error.message


def test_an_a2a_client_reaches_a_grpc_agent_through_the_gateway(grpc_peer: str) -> None:
    with gateway(grpc_peer, client_dialects=["a2a"]) as gw:
        run = run_a2a_client(gw.url + "/a2a", "hello from a2a", context_id="ctx-a2a-grpc")
    assert run.error is None, run.error
    text = "".join(p.get("text", "") for r in run.responses if "artifactUpdate" in r
                   for p in r["artifactUpdate"]["artifact"]["parts"])
    assert "echo: hello from a2a" in text


def test_the_gateway_calls_another_gateways_grpc_listener_with_the_routes_key() -> None:
    """Gateway B pinned to gRPC in front of gateway A's listener (`a2a.grpc_port`, the route named by the card's
    tenant), its upstream key sent as `authorization` metadata; a wrong key is A's refusal, as B's client's error."""
    with Served(create_agent_app("ag-ui")) as agent:
        inner = GatewayConfig.model_validate({
            "store": {"url": "memory://"}, "a2a": {"grpc_port": free_port()},
            "routes": [{"name": name, "paths": [f"/{name}/a2a"], "client_dialects": ["a2a"], "auth": {"keys": [KEY]},
                        "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"}}
                       for name in ("other", "assistant")]})
        with Served(create_app(inner)) as first:
            card = httpx.get(first.url + "/assistant/a2a/.well-known/agent-card.json").json()
            with gateway(first.url + "/assistant/a2a", "grpc", {"Authorization": f"Bearer {KEY}"}) as keyed:
                reply = ask(keyed.url, "hello through two gateways", "two-gateways")
            with gateway(first.url + "/assistant/a2a", "grpc", {"Authorization": "Bearer wrong"}) as wrong:
                refused = ask(wrong.url, "hello", "wrong-key")
    grpc_interface = next(i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
    assert grpc_interface["tenant"] == "assistant"
    assert "You said: hello through two gateways" in reply.text and isinstance(reply.events[-1], RunFinished)
    assert refused.error is not None and "(gRPC UNAUTHENTICATED)" in refused.error.message


def test_an_idle_deadline_ends_a_grpc_run_and_cancels_its_task(grpc_peer: str) -> None:
    """The core's deadlines hold over gRPC: the idle one ends the run, and `CancelTask` goes over gRPC."""
    with gateway(grpc_peer, timeouts={"idle": 1.0}) as gw:
        reply = ask(gw.url, "hang around", "idle-grpc")
    assert "Let me think about that" in reply.text
    assert reply.error is not None and reply.error.code == "upstream_timeout", reply.events
    deadline, states = time.monotonic() + 10, [""]
    while time.monotonic() < deadline and states != ["TASK_STATE_CANCELED"]:
        time.sleep(0.1)
        listed = httpx.post(grpc_peer + "/", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
                            headers={"a2a-version": "1.0", "x-test-probe": "1"}).json()["result"]["tasks"]
        states = [t["status"]["state"] for t in listed if "hang around" in orjson.dumps(t).decode()]
    assert states == ["TASK_STATE_CANCELED"]


def test_a_grpc_upstream_that_cannot_be_reached_is_a_502() -> None:
    with gateway(f"http://127.0.0.1:{closed_port()}", "grpc") as gw:
        response = httpx.post(gw.url + "/agui", json=request_body("ag-ui", [user_message("ag-ui", "hi")], "down"),
                              timeout=30)
    assert response.status_code == 502 and response.json()["error"]["message"].startswith("upstream unreachable")


def test_a_grpc_exchange_is_recorded(grpc_peer: str, tmp_path: Path) -> None:
    with gateway(grpc_peer, record={"dir": str(tmp_path)}) as gw:
        reply = ask(gw.url, "hello recorded", "recorded-grpc")
    assert "echo: hello recorded" in reply.text
    [recording] = list(tmp_path.rglob("*.jsonl*")) or list(tmp_path.rglob("*"))[:1]
    assert b"hello recorded" in recording.read_bytes()


@pytest.mark.parametrize("ended", [False, True], ids=["subscribed", "read-whole"])
def test_a_grpc_stream_that_breaks_off_mid_task_is_reattached_over_grpc(ended: bool) -> None:
    """`tests/dropping_grpc_agent.py`, in a process of its own (grpc.aio keeps to one event loop a process):
    the stream breaks off after "Hello " (UNAVAILABLE), and the rest comes from `SubscribeToTask` (or `GetTask`)."""
    port = free_port()
    command = [sys.executable, str(ROOT / "tests" / "dropping_grpc_agent.py"), str(port),
               *(["--ended"] if ended else [])]
    agent = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert agent.stdout is not None and agent.stdout.readline().strip() == "serving"
        with gateway(f"http://127.0.0.1:{port}/team", "grpc") as gw:
            reply = ask(gw.url, "hello", f"drop-grpc-{ended}")
    finally:
        agent.terminate()
        said, _ = agent.communicate(timeout=10)
    assert reply.error is None and isinstance(reply.events[-1], RunFinished), reply.events
    assert reply.text == "Hello world"  # what came before the break, then only the rest
    assert said.split() == ["SendStreamingMessage:team", "SubscribeToTask:team", *(["GetTask:team"] if ended else [])]


# -- the decoder


def _decoded(*frames: bytes) -> list[Any]:
    decoder = A2AProtoDecoder()
    events = decoder.feed(b"".join(frames))
    return events + decoder.close()


def _update(text: str, *, append: bool, last: bool = False) -> bytes:
    return frame(stream_response("artifact-update", {
        "taskId": "t1", "contextId": "c1", "append": append, "lastChunk": last,
        "artifact": {"artifactId": "a1", "name": "response", "parts": [{"text": text}]}}))


def test_the_decoder_reads_a_text_stream_chunk_by_chunk() -> None:
    task = frame(stream_response("task", {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING"}}))
    done = frame(stream_response("status-update", {"taskId": "t1", "contextId": "c1",
                                                   "status": {"state": "TASK_STATE_COMPLETED"}}))
    pieces = [task, _update("Hel", append=False), _update("lo ", append=True), _update("world", append=True, last=True),
              done]
    decoder = A2AProtoDecoder()
    events = [e for piece in pieces for cut in (piece[:3], piece[3:]) for e in decoder.feed(cut)] + decoder.close()
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == "Hello world"
    assert isinstance(events[-1], RunFinished) and events[-1].outcome == "success"


def test_a_failed_calls_status_is_the_runs_error_with_its_reason() -> None:
    schema = proto.loaded()
    info = schema.ErrorInfo(reason="TASK_NOT_FOUND", domain="a2a-protocol.org")
    status = schema.Status(code=5, message="Task t9 not found")
    status.details.add(type_url="type.googleapis.com/google.rpc.ErrorInfo", value=info.SerializeToString())
    events = _decoded(status_frame(status.SerializeToString()))
    error = events[-1]
    assert isinstance(error, RunError)
    assert error.message == "Task t9 not found (gRPC NOT_FOUND)" and error.code == "task_not_found"


def test_an_oversized_message_fails_the_run() -> None:
    decoder = A2AProtoDecoder(max_event_bytes=64)
    events = decoder.feed(_update("x" * 200, append=False))
    assert isinstance(events[-1], RunError) and events[-1].code == "upstream_event_too_large"


def test_the_decoder_reads_what_the_json_rpc_decoder_reads_from_the_same_responses() -> None:
    """The text chunks read off their bytes (after the first of a size) give what reading each whole gives: for
    chunks of one size and of several, another task's chunk on the stream, a second artifact, a status message."""
    def chunk(text: str, artifact: str = "a1", task: str = "t1", *, append: bool = True,
              last: bool = False) -> tuple[str, dict[str, Any]]:
        return "artifact-update", {"taskId": task, "contextId": "c1", "append": append, "lastChunk": last,
                                   "artifact": {"artifactId": artifact, "name": "response", "parts": [{"text": text}]}}

    responses = [("task", {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"}}),
                 chunk("tok0 ", append=False), *[chunk(f"tok{i} ") for i in range(1, 30)], chunk("é ", task="t2"),
                 chunk(" \x01"), chunk("a"), chunk("b"), chunk("end", last=True),
                 chunk("second ", "a2", append=False), chunk("artifact", "a2", last=True),
                 ("status-update", {"taskId": "t1", "contextId": "c1", "status": {
                     "state": "TASK_STATE_COMPLETED", "message": {"role": "ROLE_AGENT", "messageId": "m1",
                                                                 "parts": [{"text": "done"}]}}})]
    json_decoder, proto_decoder = a2a.A2ADecoder(), A2AProtoDecoder()
    from_json = [e for kind, value in responses
                 for e in json_decoder.feed(b"data: " + orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {
                     {"artifact-update": "artifactUpdate", "status-update": "statusUpdate"}.get(kind, kind): value}})
                     + b"\n\n")] + json_decoder.close()
    from_proto = [e for kind, value in responses for e in proto_decoder.feed(frame(stream_response(kind, value)))] + \
        proto_decoder.close()

    def shown(events: list[Any]) -> list[tuple[str, str]]:
        return [(type(e).__name__, getattr(e, "delta", "")) for e in events]

    assert shown(from_proto) == shown(from_json)
    assert "".join(e.delta for e in from_proto if isinstance(e, TextDelta)).startswith("tok0 tok1 ")
    assert proto_decoder.ignored == json_decoder.ignored == 1


def test_agent_gateway_check_talks_to_an_agent_whose_card_prefers_grpc(grpc_peer: str) -> None:
    """`agent-gateway check` calls the agent as the gateway would, over gRPC: the answers read, not judged as
    JSON-RPC's."""
    import asyncio

    from gateway.check import check

    before = calls(grpc_peer)
    report = asyncio.run(check(grpc_peer, "a2a", ["text"], timeout=20))
    [result] = report.results
    assert result.outcome == "pass", result
    assert calls(grpc_peer)["grpc"] > before["grpc"]
