"""What only the HTTP+JSON binding says (`adapters/a2a/rest.py`): bare answers as `application/json`, SSE frames with
no JSON-RPC envelope, AIP-193 errors under specification 1.0.0's statuses, ListTasks' query, and a task started on
one binding and asked about on the other, on any replica. Over real HTTP, in front of the built-in agent speaking
AG-UI; the rules both bindings share run on both in `test_tasks.py` and `test_replicas.py` (`both`)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from a2a_binding import frames
from redis_server import RedisServer
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.server.app import create_app
from tests.adapters.a2a.test_replicas import replicas, running_on
from tests.adapters.a2a.test_tasks import V10, config, message, rpc, send, stream, wait_for, waiting_task

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    """The route's A2A URL: the base of its HTTP+JSON calls."""
    with Served(create_agent_app("ag-ui", pace=0.02)) as agent, Served(create_app(config(agent.url))) as gw:
        yield gw.url + "/a2a"


def post(url: str, body: Any = None, **headers: str) -> httpx.Response:
    sent = {"content-type": "application/json", **V10, **headers}
    return httpx.post(url, content=orjson.dumps(body) if body is not None else None, headers=sent, timeout=20)


def refusal(response: httpx.Response) -> tuple[int, str, str]:
    """An AIP-193 error's HTTP status, `google.rpc.Code` name and ErrorInfo reason, checked for its shape."""
    assert response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    assert set(error) == {"code", "status", "message", "details"} and error["code"] == response.status_code
    assert isinstance(error["message"], str) and error["message"]
    info = error["details"][0]
    assert info["@type"] == ERROR_INFO and info["domain"] == "a2a-protocol.org"
    return response.status_code, error["status"], info["reason"]


def test_a_send_is_answered_with_the_bare_send_message_response_as_application_json(gateway: str) -> None:
    answer = post(gateway + "/message:send", {"message": message("hello rest")})
    task = answer.json()["task"]
    got = httpx.get(f"{gateway}/tasks/{task['id']}", headers=V10)
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json"
    assert set(answer.json()) == {"task"} and task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert got.headers["content-type"] == "application/json" and got.json()["id"] == task["id"]  # a bare Task


def test_a_stream_is_sse_data_frames_of_bare_stream_responses(gateway: str) -> None:
    with httpx.stream("POST", gateway + "/message:stream", content=orjson.dumps({"message": message("hello")}),
                      headers={"content-type": "application/json", **V10}, timeout=20) as response:
        body = response.read()
    events = [e for e in body.split(b"\n\n") if e]
    assert response.headers["content-type"].startswith("text/event-stream")
    assert all(e.startswith(b"data: {") and b"\n" not in e for e in events)  # no event:, no id:, one line each
    results = [orjson.loads(e[6:]) for e in events]
    assert all(len(r) == 1 and next(iter(r)) in ("task", "statusUpdate", "artifactUpdate") for r in results)
    assert results[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def test_errors_are_aip_193_bodies_under_the_statuses_of_specification_1_0_0(gateway: str) -> None:
    done = send(gateway, "hello")
    missing = httpx.get(gateway + "/tasks/no-such-task", headers=V10)
    ended = post(f"{gateway}/tasks/{done['id']}:cancel")
    text = httpx.post(gateway + "/message:send", content=b"hello", headers={"content-type": "text/plain", **V10})
    garbage = httpx.post(gateway + "/message:send", content=b"{not json",
                         headers={"content-type": "application/json", **V10})
    not_subscribable = post(f"{gateway}/tasks/{done['id']}:subscribe")
    no_card = httpx.get(gateway + "/extendedAgentCard", headers=V10)
    assert refusal(missing) == (404, "NOT_FOUND", "TASK_NOT_FOUND")
    assert refusal(ended) == (409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE")
    assert refusal(text) == (415, "INVALID_ARGUMENT", "CONTENT_TYPE_NOT_SUPPORTED")
    assert refusal(garbage) == (400, "INVALID_ARGUMENT", "INVALID_REQUEST")
    assert refusal(not_subscribable) == (400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")  # not an SSE stream
    assert refusal(no_card) == (400, "FAILED_PRECONDITION", "UNSUPPORTED_OPERATION")


def test_invalid_params_name_each_field_as_a_bad_request_violation(gateway: str) -> None:
    no_message = post(gateway + "/message:send", {})
    no_parts = post(gateway + "/message:send", {"message": {**message("x"), "parts": []}})
    negative = httpx.get(gateway + "/tasks/t-1", params={"historyLength": "-1"}, headers=V10)
    for answer, field in ((no_message, "message"), (no_parts, "message.parts")):
        assert refusal(answer) == (400, "INVALID_ARGUMENT", "INVALID_PARAMS")
        bad_request = answer.json()["error"]["details"][1]
        assert bad_request["@type"] == "type.googleapis.com/google.rpc.BadRequest"
        assert [v["field"] for v in bad_request["fieldViolations"]] == [field]  # no `params.`: REST has none
    assert refusal(negative) == (400, "INVALID_ARGUMENT", "INVALID_PARAMS")
    assert "historyLength" in negative.json()["error"]["message"]


def test_a2a_version_is_checked_from_the_header_or_a_gets_query(gateway: str) -> None:
    body = {"message": message("versions")}
    unknown = post(gateway + "/message:send", body, **{"a2a-version": "2.0"})
    old = post(gateway + "/message:send", body, **{"a2a-version": "0.3"})  # 0.3's HTTP+JSON is at other paths
    patch = post(gateway + "/message:send", body, **{"a2a-version": "1.0.3"})
    unstated = httpx.post(gateway + "/message:send", json=body)
    by_query = httpx.get(gateway + "/tasks/t-1", params={"A2A-Version": "2.0"})
    assert refusal(unknown) == refusal(old) == refusal(by_query) == (400, "FAILED_PRECONDITION",
                                                                     "VERSION_NOT_SUPPORTED")
    assert patch.status_code == unstated.status_code == 200  # none stated: served as 1.0, as JSON-RPC's 1.0 methods


def test_an_unknown_path_or_method_is_not_an_a2a_answer(gateway: str) -> None:
    unknown = httpx.post(gateway + "/message:shout", json={}, headers=V10)
    wrong_method = httpx.delete(gateway + "/tasks/t-1", headers=V10)
    assert unknown.status_code == 404 and wrong_method.status_code == 405  # as the SDK's server answers


def test_a_refusal_before_the_body_is_read_is_aip_193_too() -> None:
    with Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(config(agent.url, auth={"keys": ["key-a"]}))) as gw:
        unauthorized = post(gw.url + "/a2a/message:send", {"message": message("hello")})
        allowed = post(gw.url + "/a2a/message:send", {"message": message("hello")}, **{"x-api-key": "key-a"})
    error = unauthorized.json()["error"]
    assert unauthorized.status_code == 401 and error["status"] == "UNAUTHENTICATED"
    assert error["details"][0]["reason"] == "INTERNAL_ERROR"  # A2A has no reason of its own: SDKs raise the message
    assert error["details"][0]["metadata"] == {"code": "unauthorized"}
    assert allowed.status_code == 200


@pytest.mark.parametrize("status", ["input-required", "INPUT_REQUIRED", "TASK_STATE_INPUT_REQUIRED"])
def test_list_tasks_takes_a_state_in_either_spelling(gateway: str, status: str) -> None:
    context = f"ctx-list-{status}"
    waiting = send(gateway, "please interrupt", contextId=context)
    send(gateway, "hello", contextId=context)
    listed = httpx.get(gateway + "/tasks", headers=V10, params={"contextId": context, "status": status}).json()
    everything = httpx.get(gateway + "/tasks", headers=V10, params={"contextId": context, "includeArtifacts": "true",
                                                                   "historyLength": "0"}).json()
    assert [t["id"] for t in listed["tasks"]] == [waiting["id"]]
    assert everything["totalSize"] == 2 and any("artifacts" in t for t in everything["tasks"])
    assert not any("history" in t for t in everything["tasks"])


def test_a_task_started_on_one_binding_is_read_cancelled_and_continued_on_the_other(gateway: str) -> None:
    on_rpc = rpc(gateway, "SendMessage", {"message": message("please interrupt")})["result"]["task"]
    read_on_rest = httpx.get(f"{gateway}/tasks/{on_rpc['id']}", headers=V10).json()
    continued_on_rest = post(gateway + "/message:send", {"message": message("yes", taskId=on_rpc["id"])}).json()
    on_rest = post(gateway + "/message:send", {"message": message("please interrupt")}).json()["task"]
    cancelled_on_rpc = rpc(gateway, "CancelTask", {"id": on_rest["id"]})["result"]
    read_again = httpx.get(f"{gateway}/tasks/{on_rest['id']}", headers=V10).json()
    assert read_on_rest["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert continued_on_rest["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert cancelled_on_rpc["status"]["state"] == read_again["status"]["state"] == "TASK_STATE_CANCELED"


def test_a_subscriber_on_rest_follows_a_task_a_json_rpc_client_continues(gateway: str) -> None:
    task = waiting_task(gateway)
    followed: list[dict[str, Any]] = []

    def follow() -> None:
        followed.extend(frames(gateway, "SubscribeToTask", {"id": task["id"]}))

    thread = threading.Thread(target=follow)
    thread.start()
    wait_for(lambda: followed)
    rpc(gateway, "SendMessage", {"message": message("yes", taskId=task["id"])})
    thread.join(10)
    assert followed[0]["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert followed[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def test_a_task_running_on_one_replica_over_json_rpc_is_cancelled_on_the_other_over_rest(redis: RedisServer) -> None:
    with replicas(redis) as (one, two):
        task_id, results, thread = running_on(one, "hang on")  # JSON-RPC: `stream` outside a `both` test
        running = httpx.get(f"{two}/tasks/{task_id}", headers=V10).json()
        cancelled = post(f"{two}/tasks/{task_id}:cancel").json()
        thread.join(10)
    assert running["status"]["state"] == "TASK_STATE_WORKING"
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED" and not thread.is_alive()
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"


def test_a_browsers_preflight_is_allowed_each_method_a_path_takes() -> None:
    """`:subscribe` and the push configs take two methods each: the preflight for either is answered yes."""
    with Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(config(agent.url, cors={"allow_origins": ["https://app.example"]}))) as gw:
        asked = {"origin": "https://app.example", "access-control-request-method": "POST"}
        subscribe = httpx.options(gw.url + "/a2a/tasks/t-1:subscribe", headers=asked)
        configs = httpx.options(gw.url + "/a2a/tasks/t-1/pushNotificationConfigs", headers=asked)
        delete = httpx.options(gw.url + "/a2a/tasks/t-1/pushNotificationConfigs/c-1",
                               headers={**asked, "access-control-request-method": "DELETE"})
    for preflight in (subscribe, configs, delete):
        assert preflight.status_code == 200, preflight.text
        assert preflight.headers["access-control-allow-origin"] == "https://app.example"


def test_a_stream_the_gateway_cuts_ends_failed_then_with_an_error_event_on_rest_only() -> None:
    """A deadline mid-stream: the task ends failed on both bindings (what GetTask says); HTTP+JSON then has the
    stream's own error, `event: error` with an AIP-193 body, as a2a-sdk's server ends a stream it cannot finish."""
    with Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(config(agent.url, timeouts={"idle": 1}))) as gw:
        url = gw.url + "/a2a"
        with httpx.stream("POST", url + "/message:stream", content=orjson.dumps({"message": message("hang on")}),
                          headers={"content-type": "application/json", **V10}, timeout=20) as response:
            rest = response.read()
        on_rpc: list[dict[str, Any]] = []
        stream(url, "SendStreamingMessage", {"message": message("hang on")}, on_rpc)
    *updates, last = [e for e in rest.split(b"\n\n") if e]
    failed = orjson.loads(updates[-1].removeprefix(b"data: "))
    assert failed["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"
    assert last.startswith(b"event: error\ndata: ")
    error = orjson.loads(last.split(b"\ndata: ", 1)[1])["error"]
    assert (error["code"], error["status"], error["details"][0]["metadata"]) == (
        504, "DEADLINE_EXCEEDED", {"code": "upstream_timeout"})
    assert on_rpc[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED"  # and no error after it
