"""A2A's gRPC binding, served (`adapters/a2a/grpc_server.py`): the gateway's A2A routes on `a2a.grpc_port`, read by
a2a-sdk 1.3.0's own gRPC client (`tests/peers/a2a_client.py --binding grpc`) and by grpcio's (the statuses and
their `grpc-status-details-bin` trailer, as the SDK's clients read them). Install first: `.venv/bin/python
tests/peers_env.py`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import httpx
import orjson
import pytest
from peers_env import follow_a2a_tasks, run_a2a_client, run_a2a_tasks
from servers import Served, free_port

from adapters.a2a import proto
from adapters.a2a.grpc_errors import DETAILS
from adapters.a2a.grpc_server import RPCS
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.server.app import create_app

ROOT = Path(__file__).resolve().parents[3]
V10 = (("a2a-version", "1.0"),)
KEY = "k-grpc-test"


@dataclass
class Gateway:
    url: str
    """The HTTP base."""
    target: str
    """Where gRPC is served: `127.0.0.1:port`."""


def config(agent: Served, grpc_port: int | None, *, routes: tuple[str, ...] = ("assistant",),
           keys: list[str] | None = None) -> GatewayConfig:
    return GatewayConfig.model_validate({
        "store": {"url": "memory://"}, "a2a": {"grpc_port": grpc_port},
        "routes": [{"name": name, "paths": [f"/{name}/a2a"], "client_dialects": ["a2a"],
                    "upstream": {"url": agent.url + "/agui", "dialect": "ag-ui"},
                    **({"auth": {"keys": keys}} if keys else {})} for name in routes]})


@contextmanager
def gateway(agent: Served, **options: Any) -> Iterator[Gateway]:
    port = free_port()
    with Served(create_app(config(agent, port, **options))) as served:
        yield Gateway(served.url, f"127.0.0.1:{port}")


@pytest.fixture(scope="module")
def agent() -> Iterator[Served]:
    with Served(create_agent_app("ag-ui")) as served:
        yield served


@pytest.fixture(scope="module")
def gw(agent: Served) -> Iterator[Gateway]:
    with gateway(agent) as served:
        yield served


@dataclass
class Called:
    answers: list[dict[str, Any]] = field(default_factory=list)
    code: str | None = None
    message: str = ""
    details: list[dict[str, Any]] = field(default_factory=list)
    """The `google.rpc.Status` trailer's details, as JSON (`@type` and the fields)."""


def call(target: str, method: str, request: dict[str, Any], metadata: tuple[tuple[str, str], ...] = V10,
         timeout: float = 10) -> Called:
    """One call with grpcio's own client, its answers (or its status) as JSON."""
    schema = proto.loaded()
    request_type, answer_type = RPCS[method]
    message = schema.json_format.ParseDict(request, getattr(schema, request_type)())
    answer_class = getattr(schema, answer_type or "StreamResponse")
    called = Called()
    with grpc.insecure_channel(target) as channel:
        make = channel.unary_stream if answer_type is None else channel.unary_unary
        stub = make(f"/{proto.SERVICE}/{method}", request_serializer=lambda m: m.SerializeToString(),
                    response_deserializer=answer_class.FromString)
        try:
            answers = stub(message, metadata=metadata, timeout=timeout)
            for answer in answers if answer_type is None else [answers]:
                called.answers.append(schema.json_format.MessageToDict(answer))
        except grpc.RpcError as error:
            called.code, called.message = error.code().name, error.details()
            for key, value in error.trailing_metadata() or ():
                if key == DETAILS:
                    status = schema.Status.FromString(value)
                    assert status.code == error.code().value[0] and status.message == error.details()
                    called.details = [_detail(schema, any_) for any_ in status.details]
    return called


def _detail(schema: proto.Schema, packed: Any) -> dict[str, Any]:
    name = packed.type_url.rpartition("/")[2]
    value = getattr(schema, name.rpartition(".")[2]).FromString(packed.value)
    return {"@type": name, **schema.json_format.MessageToDict(value)}


def hello(text: str = "hello", **message: Any) -> dict[str, Any]:
    return {"message": {"messageId": f"m-{time.monotonic_ns()}", "role": "ROLE_USER", "parts": [{"text": text}],
                        **message}}


# -- the card


def test_the_card_lists_grpc_after_json_rpc_naming_the_route_as_tenant(gw: Gateway) -> None:
    card = httpx.get(gw.url + "/assistant/a2a/.well-known/agent-card.json", timeout=10).json()
    bindings = [(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]]
    assert bindings == [("JSONRPC", "1.0"), ("GRPC", "1.0"), ("JSONRPC", "0.3")]
    grpc_interface = card["supportedInterfaces"][1]
    assert grpc_interface == {"url": gw.target, "protocolBinding": "GRPC", "protocolVersion": "1.0",
                              "tenant": "assistant"}  # a gRPC target: no scheme; the host the card was asked at


def test_without_a_grpc_port_the_card_lists_no_grpc(agent: Served) -> None:
    with Served(create_app(config(agent, None))) as served:
        card = httpx.get(served.url + "/assistant/a2a/.well-known/agent-card.json", timeout=10).json()
    assert "GRPC" not in {i["protocolBinding"] for i in card["supportedInterfaces"]}


def test_serve_check_says_in_one_line_why_grpc_is_not_served_without_grpcio(tmp_path: Path, agent: Served) -> None:
    path = tmp_path / "gateway.yaml"
    path.write_text(orjson.dumps(config(agent, free_port()).model_dump(mode="json", exclude_unset=True)).decode())
    hide_grpc = "import sys; sys.modules['grpc'] = None; from gateway.cli import main; sys.exit(main())"
    done = subprocess.run([sys.executable, "-c", hide_grpc, "serve", "--config", str(path), "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, check=False)
    by_flag = subprocess.run([sys.executable, "-c", hide_grpc, "serve", "--upstream", agent.url + "/agui",
                              "--upstream-dialect", "ag-ui", "--store", "memory://", "--a2a-grpc-port",
                              str(free_port()), "--check"], cwd=ROOT, capture_output=True, text=True, timeout=60,
                             check=False)
    note = "note: a2a.grpc_port is set but grpcio is not installed: pip install 'agent-gateway[grpc]'"
    assert note in done.stdout.splitlines(), done.stdout + done.stderr
    assert note in by_flag.stdout.splitlines(), by_flag.stdout + by_flag.stderr  # `--a2a-grpc-port` sets it too


# -- calls


def test_a_task_started_over_grpc_is_read_over_json_rpc(gw: Gateway) -> None:
    run = run_a2a_client(gw.url + "/assistant/a2a", "hello", binding="grpc", context_id="ctx-grpc-1")
    assert run.error is None, run.error
    assert not run.requests[1:]  # after the card, nothing over HTTP: the calls went over gRPC
    task_id = run.responses[0]["task"]["id"]
    got = httpx.post(gw.url + "/assistant/a2a", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask",
                                                      "params": {"id": task_id}}, timeout=10).json()["result"]
    assert got["contextId"] == "ctx-grpc-1" and got["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "You said: hello." in "".join(p["text"] for a in got["artifacts"] for p in a["parts"])
    over_grpc = call(gw.target, "GetTask", {"id": task_id})
    assert over_grpc.answers == [got]


def test_the_sdks_grpc_client_follows_a_running_task_and_asks_about_tasks(agent: Served) -> None:
    """SubscribeToTask on a task started over JSON-RPC (it streams on as it runs), then GetTask, ListTasks and
    CancelTask as the SDK's gRPC transport sends them."""
    with Served(create_agent_app("ag-ui", pace=0.05)) as slow, gateway(slow) as gw:
        url = gw.url + "/assistant/a2a"
        started: list[dict[str, Any]] = []
        streaming = threading.Thread(target=lambda: started.extend(
            run_a2a_client(url, "slow please", context_id="ctx-grpc-follow").responses))
        streaming.start()
        deadline = time.monotonic() + 10
        while not (tasks := call(gw.target, "ListTasks", {"contextId": "ctx-grpc-follow"}).answers[0].get("tasks")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        task_id = tasks[0]["id"]
        with follow_a2a_tasks(url, "subscribe", {"id": task_id}, binding="grpc") as subscriber:
            assert subscriber.first(), subscriber.done()
            error = subscriber.done()
        streaming.join(30)
        got = run_a2a_tasks(url, "get", {"id": task_id}, binding="grpc")
        listed = run_a2a_tasks(url, "list", {"contextId": "ctx-grpc-follow"}, binding="grpc")
        cancel = run_a2a_tasks(url, "cancel", {"id": task_id}, binding="grpc")
    assert error is None, error
    answers = subscriber.answers
    assert answers[0]["task"]["id"] == task_id
    assert answers[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert any("artifactUpdate" in a for a in answers)  # what the task said after the subscriber came
    assert started[0]["task"]["id"] == task_id  # the task the JSON-RPC client started
    assert got.error is None and got.answers[0]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert got.answers[0]["contextId"] == "ctx-grpc-follow"
    assert [t["id"] for t in listed.answers[0]["tasks"]] == [task_id]
    assert cancel.error is not None and cancel.error.startswith("TaskNotCancelableError")


def test_queries_over_grpc(gw: Gateway) -> None:
    sent = call(gw.target, "SendMessage", hello("list me", contextId="ctx-grpc-list"))
    task = sent.answers[0]["task"]
    listed = call(gw.target, "ListTasks", {"contextId": "ctx-grpc-list"})
    cancel = call(gw.target, "CancelTask", {"id": task["id"]})
    assert [t["id"] for t in listed.answers[0]["tasks"]] == [task["id"]]
    assert cancel.code == "FAILED_PRECONDITION" and cancel.details[0]["reason"] == "TASK_NOT_CANCELABLE"
    push = call(gw.target, "CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": "http://127.0.0.1:9/"})
    assert push.code == "UNIMPLEMENTED" and push.details[0]["reason"] == "PUSH_NOTIFICATION_NOT_SUPPORTED"


def test_an_unknown_task_is_not_found_with_its_reason(gw: Gateway) -> None:
    missing = call(gw.target, "GetTask", {"id": "task-nobody-made"})
    assert missing.code == "NOT_FOUND"
    assert missing.details == [{"@type": "google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
                                "domain": "a2a-protocol.org", "metadata": {"status": "404"}}]
    sdk = run_a2a_client(gw.url + "/assistant/a2a", "hi", binding="grpc", task_id="task-nobody-made")
    assert sdk.error is not None and sdk.error.startswith("TaskNotFoundError")  # the SDK reads the reason


def test_a_version_the_gateway_does_not_speak_is_unimplemented(gw: Gateway) -> None:
    refused = call(gw.target, "SendMessage", hello(), metadata=(("a2a-version", "99.0"),))
    assert refused.code == "UNIMPLEMENTED" and refused.details[0]["reason"] == "VERSION_NOT_SUPPORTED"


def test_a_message_with_no_parts_is_an_invalid_argument_naming_the_field(gw: Gateway) -> None:
    refused = call(gw.target, "SendMessage", {"message": {"messageId": "m-1", "role": "ROLE_USER"}})
    assert refused.code == "INVALID_ARGUMENT"
    info, bad = refused.details
    assert (info["@type"], info["reason"], info["domain"]) == ("google.rpc.ErrorInfo", "INVALID_PARAMS",
                                                                 "a2a-protocol.org")
    assert bad["@type"] == "google.rpc.BadRequest"
    assert [v["field"] for v in bad["fieldViolations"]] == ["message.parts"]


def test_a_route_with_keys_wants_one_over_grpc_too(agent: Served) -> None:
    with gateway(agent, keys=[KEY]) as keyed:
        refused = call(keyed.target, "SendMessage", hello())
        sdk_without = run_a2a_client(keyed.url + "/assistant/a2a", "hi", binding="grpc")
        sdk_with = run_a2a_client(keyed.url + "/assistant/a2a", "hi", binding="grpc", key=KEY)
        wrong = call(keyed.target, "SendMessage", hello(), metadata=(*V10, ("authorization", "Bearer nope")))
    assert refused.code == "UNAUTHENTICATED" and wrong.code == "UNAUTHENTICATED"
    assert sdk_without.error is not None
    assert sdk_with.error is None and sdk_with.responses[-1]["statusUpdate"]["status"]["state"] == \
        "TASK_STATE_COMPLETED"


def test_the_tenant_names_the_route_when_there_are_several(agent: Served) -> None:
    with gateway(agent, routes=("one", "two")) as two:
        one = call(two.target, "SendMessage", {**hello(), "tenant": "one"})
        other = call(two.target, "SendMessage", {**hello(), "tenant": "two"})
        unnamed = call(two.target, "SendMessage", hello())
        task_id = one.answers[0]["task"]["id"]
        elsewhere = call(two.target, "GetTask", {"id": task_id, "tenant": "two"})
        here = call(two.target, "GetTask", {"id": task_id, "tenant": "one"})
        sdk = run_a2a_client(two.url + "/two/a2a", "hi", binding="grpc")
    assert other.code is None and here.code is None
    assert unnamed.code == "INVALID_ARGUMENT" and "one, two" in unnamed.message
    assert elsewhere.code == "NOT_FOUND"  # each route keeps its own tasks
    assert sdk.error is None  # the card's tenant, sent back by the SDK


def test_a_client_cancelling_its_stream_is_a_client_leaving(agent: Served) -> None:
    with Served(create_agent_app("ag-ui", pace=0.05)) as slow, gateway(slow) as gw:
        cut = call(gw.target, "SendStreamingMessage", hello("slow please"), timeout=0.5)
        deadline = time.monotonic() + 5
        while (gone := httpx.get(slow.url + "/_disconnects").json()) < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert cut.code == "DEADLINE_EXCEEDED" and cut.answers  # it had started
    assert gone >= 1  # the upstream's run was cut, not left running


# -- draining


def test_a_draining_gateway_lets_a_grpc_stream_finish_and_takes_no_new_call(tmp_path: Path) -> None:
    port, grpc_port = free_port(), free_port()
    with Served(create_agent_app("ag-ui", pace=0.05)) as slow:
        path = tmp_path / "gateway.yaml"
        configured = config(slow, None).model_dump(mode="json", exclude_unset=True)
        path.write_text(orjson.dumps({**configured, "drain_seconds": 10}).decode())
        log = (tmp_path / "gateway.log").open("ab")
        process = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--config", str(path), "--port",
                                    str(port), "--a2a-grpc-port", str(grpc_port), "--log-format", "human"],
                                   cwd=tmp_path, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=log,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            target = f"127.0.0.1:{grpc_port}"
            deadline = time.monotonic() + 20
            while call(target, "GetTask", {"id": "warm-up"}, timeout=1).code != "NOT_FOUND":
                assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "gateway.log").read_text()
                time.sleep(0.1)
            streamed: list[Called] = []
            reader = threading.Thread(target=lambda: streamed.append(
                call(target, "SendStreamingMessage", hello("slow please"), timeout=30)))
            reader.start()
            time.sleep(0.5)
            process.send_signal(signal.SIGTERM)
            time.sleep(0.5)
            late = call(target, "GetTask", {"id": "too-late"}, timeout=2)
            reader.join(30)
            assert process.wait(15) == 0
        finally:
            if process.poll() is None:
                process.kill()
            process.wait()
            log.close()
    (stream,) = streamed
    assert stream.code is None, stream
    assert stream.answers[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert late.code == "UNAVAILABLE"
    assert "Traceback" not in (tmp_path / "gateway.log").read_text()


def test_a_grpc_port_in_use_is_one_line_at_start_not_a_traceback(gw: Gateway) -> None:
    """Another gateway's gRPC port is taken even though gRPC servers share theirs (SO_REUSEPORT) between workers;
    the gateway's own HTTP port is not a gRPC port."""
    taken = gw.target.rpartition(":")[2]
    http_port = str(free_port())
    said = {}
    for name, grpc_port in (("another's", taken), ("its own HTTP", http_port)):
        done = subprocess.run([sys.executable, "-m", "gateway", "serve", "--upstream", "http://127.0.0.1:9/agui",
                               "--upstream-dialect", "ag-ui", "--store", "memory://", "--port", http_port,
                               "--a2a-grpc-port", grpc_port, "--log-format", "human"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        said[name] = done.stderr.strip().splitlines()[-1]
    assert said["another's"].endswith(f"127.0.0.1:{taken} is in use: try another a2a.grpc_port")
    assert said["its own HTTP"].endswith(f"a2a.grpc_port {http_port} needs a port of its own, not the gateway's or "
                                         "the metrics'")
