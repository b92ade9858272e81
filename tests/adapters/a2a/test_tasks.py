"""The gateway as an A2A 1.0 agent, to the letter of the specification: paths with and without a trailing slash,
the card (schema, caching, the 0.3 fields a 0.3 client asks for), versions, JSON-RPC error codes, the rules a task
keeps, `ListTasks`, `SubscribeToTask` and push notification configs. Over real HTTP, in front of the built-in agent
speaking AG-UI; `test_replicas.py` has the same across replicas, `test_clients.py` through the SDKs. A test marked
`both` runs on JSON-RPC and on HTTP+JSON (`a2a_binding`: the same calls, answers read back as JSON-RPC's);
`test_rest.py` has what only HTTP+JSON says."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from email.utils import formatdate
from typing import Any

import a2a_binding
import httpx
import orjson
import pytest
from servers import Served

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.server.app import create_app

V10 = {"a2a-version": "1.0"}
CARD_FIELDS = {"name", "description", "supportedInterfaces", "version", "capabilities", "defaultInputModes",
               "defaultOutputModes", "skills", "provider", "documentationUrl", "iconUrl", "securitySchemes",
               "securityRequirements", "signatures"}
"""Every field the A2A 1.0 schema allows an agent card (`additionalProperties: false`)."""


def config(upstream: str, **route: Any) -> GatewayConfig:
    """A2A clients in front of an AG-UI agent at `upstream` (its base URL)."""
    return GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
        {"name": "tasks", "paths": ["/a2a"], "client_dialects": ["a2a"],
         "upstream": {"url": upstream + "/agui", "dialect": "ag-ui"}, **route}]})


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with Served(create_agent_app("ag-ui", pace=0.02)) as agent, Served(create_app(config(agent.url))) as gw:
        yield gw.url


BINDING = {"now": "jsonrpc"}
"""The binding `rpc` and `stream` call on: JSON-RPC, unless a test marked `both` runs on HTTP+JSON."""


@pytest.fixture
def binding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(BINDING, "now", request.param)
    return str(request.param)


def both(test: Any) -> Any:
    """Run `test` on JSON-RPC and on HTTP+JSON: what it asks with `rpc` and `stream` holds on either binding."""
    return pytest.mark.parametrize("binding", ["jsonrpc", "http-json"], indirect=True)(
        pytest.mark.usefixtures("binding")(test))


def rpc(url: str, method: str, params: Any, headers: dict[str, str] | None = None, rpc_id: Any = 1
        ) -> dict[str, Any]:
    if BINDING["now"] == "http-json":
        return a2a_binding.call(url, method, params, headers)
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
    response = httpx.post(url, content=orjson.dumps(body), headers={"content-type": "application/json", **V10,
                                                                    **(headers or {})}, timeout=20)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def message(text: str, message_id: str | None = None, **fields: str) -> dict[str, Any]:
    return {"messageId": message_id or f"m-{uuid.uuid4().hex[:8]}", "role": "ROLE_USER", "parts": [{"text": text}],
            **fields}


def send(url: str, text: str, message_id: str | None = None, **fields: str) -> dict[str, Any]:
    answer = rpc(url, "SendMessage", {"message": message(text, message_id, **fields)})
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


def waiting_task(url: str) -> dict[str, Any]:
    task = send(url, "please interrupt")
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    return task


def error_of(answer: dict[str, Any]) -> tuple[int, str | None]:
    error = answer["error"]
    info = next((d for d in error.get("data") or () if d.get("@type", "").endswith("ErrorInfo")), {})
    return error["code"], info.get("reason")


def stream(url: str, method: str, params: Any, into: list[dict[str, Any]], rpc_id: Any = 9) -> None:
    """The JSON-RPC results of a streamed answer (HTTP+JSON's responses), appended as they come."""
    if BINDING["now"] == "http-json":
        for frame in a2a_binding.frames(url, method, params):
            into.append(frame)
        return
    body = {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params}
    with httpx.stream("POST", url, content=orjson.dumps(body), timeout=20,
                      headers={"content-type": "application/json", **V10}) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                frame = orjson.loads(line[6:])
                assert frame["id"] == rpc_id
                into.append(frame.get("result") or frame)


def state_of(result: dict[str, Any]) -> str:
    [(kind, value)] = result.items()
    return str(value.get("status", {}).get("state", kind))


# -- paths ---------------------------------------------------------------------------------------------------------


def test_every_path_answers_with_and_without_a_trailing_slash_and_never_redirects(gateway: str) -> None:
    task = send(gateway + "/a2a/", "hello slash")
    card = httpx.get(gateway + "/a2a/.well-known/agent-card.json/", timeout=10)
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert card.status_code == 200 and card.json()["name"] == "tasks"


def test_the_built_in_agent_takes_a_post_to_its_path_with_a_slash() -> None:
    with Served(create_agent_app("a2a")) as agent:
        answer = rpc(agent.url + "/a2a/", "SendMessage", {"message": message("hello agent")})
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- the card ------------------------------------------------------------------------------------------------------


def test_the_card_holds_only_what_the_1_0_schema_allows_and_0_3_fields_when_asked(gateway: str) -> None:
    card = httpx.get(gateway + "/.well-known/agent-card.json", timeout=10).json()
    asked_by_header = httpx.get(gateway + "/.well-known/agent-card.json", headers={"a2a-version": "0.3"}).json()
    asked_by_url = httpx.get(gateway + "/a2a/.well-known/agent-card.json?A2A-Version=0.3").json()
    assert set(card) <= CARD_FIELDS, set(card) - CARD_FIELDS
    assert [(i["protocolBinding"], i["protocolVersion"]) for i in card["supportedInterfaces"]] == [
        ("JSONRPC", "1.0"), ("HTTP+JSON", "1.0"), ("JSONRPC", "0.3")]
    assert card["capabilities"] == {"streaming": True, "pushNotifications": False}
    for old in (asked_by_header, asked_by_url):
        assert (old["url"], old["preferredTransport"], old["protocolVersion"]) == (
            gateway + "/a2a", "JSONRPC", "0.3")
        assert {k: v for k, v in old.items() if k in CARD_FIELDS} == card


def test_the_card_is_cached_by_etag_and_date_and_varies_by_what_it_is_built_from(gateway: str) -> None:
    first = httpx.get(gateway + "/a2a/.well-known/agent-card.json", timeout=10)
    etag, modified = first.headers["etag"], first.headers["last-modified"]
    again = httpx.get(gateway + "/a2a/.well-known/agent-card.json", headers={"if-none-match": etag})
    weak_match = httpx.get(gateway + "/a2a/.well-known/agent-card.json",
                           headers={"if-none-match": f'"other", {etag.removeprefix("W/")}'})
    dated = httpx.get(gateway + "/a2a/.well-known/agent-card.json", headers={"if-modified-since": modified})
    stale = httpx.get(gateway + "/a2a/.well-known/agent-card.json",
                      headers={"if-modified-since": formatdate(time.time() - 86400, usegmt=True)})
    other = httpx.get(gateway + "/a2a/.well-known/agent-card.json", headers={"if-none-match": 'W/"nope"'})
    assert first.headers["cache-control"] == "public, max-age=300"
    assert {v.strip().lower() for v in first.headers["vary"].split(",")} == {"a2a-version", "host"}
    assert [again.status_code, weak_match.status_code, dated.status_code] == [304, 304, 304]
    assert again.content == b"" and again.headers["etag"] == etag
    assert [stale.status_code, other.status_code] == [200, 200] and other.json() == first.json()


def test_a_card_whose_url_is_configured_does_not_vary_by_host() -> None:
    with Served(create_app(config("http://127.0.0.1:9", agent={"url": "https://agents.example/a2a"}))) as gw:
        card = httpx.get(gw.url + "/a2a/.well-known/agent-card.json", timeout=10)
    assert card.headers["vary"].lower() == "a2a-version"
    assert card.json()["supportedInterfaces"][0]["url"] == "https://agents.example/a2a"


# -- versions, media types, error codes ---------------------------------------------------------------------------


def test_a_version_the_gateway_does_not_speak_is_version_not_supported(gateway: str) -> None:
    refused = rpc(gateway + "/a2a", "SendMessage", {"message": message("v99")}, {"a2a-version": "99.0"})
    patch = rpc(gateway + "/a2a", "SendMessage", {"message": message("v1.0.1")}, {"a2a-version": "1.0.1"})
    other = rpc(gateway + "/a2a", "SendMessage", {"message": message("v0.3")}, {"a2a-version": "0.3"})
    unstated = rpc(gateway + "/a2a", "GetTask", {"id": "none"}, {"a2a-version": ""})
    assert error_of(refused) == (-32009, "VERSION_NOT_SUPPORTED") and "1.0 and 0.3" in refused["error"]["message"]
    assert patch["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"  # a patch number is not considered
    assert other["error"]["code"] == -32601 and "message/send" in other["error"]["message"]
    assert error_of(unstated) == (-32001, "TASK_NOT_FOUND")


def test_json_rpc_errors_have_the_codes_the_specification_maps(gateway: str) -> None:
    url = gateway + "/a2a"
    no_version = httpx.post(url, json={"id": 1, "method": "SendMessage", "params": {}}).json()
    no_method = httpx.post(url, json={"jsonrpc": "2.0", "id": "x", "params": {}}).json()
    bad_id = httpx.post(url, json={"jsonrpc": "2.0", "id": True, "method": "GetTask", "params": {"id": "t"}}).json()
    text_plain = httpx.post(url, content=b"{'not': 'json'}", headers={"content-type": "text/plain", **V10}).json()
    negative = rpc(url, "GetTask", {"id": "t", "historyLength": -1})
    no_params = rpc(url, "SendMessage", None)
    assert [no_version["error"]["code"], no_method["error"]["code"], bad_id["error"]["code"]] == [-32600] * 3
    assert no_method["id"] == "x" and bad_id["id"] is None
    assert error_of(text_plain) == (-32005, "CONTENT_TYPE_NOT_SUPPORTED")
    assert negative["error"]["code"] == -32602 and "historyLength" in negative["error"]["message"]
    assert no_params["error"]["code"] == -32602
    for answer in (no_version, text_plain, negative):
        assert isinstance(answer["error"]["data"], list) and answer["error"]["data"][0]["@type"].endswith(
            "google.rpc.ErrorInfo")


def test_application_a2a_json_is_taken_as_json(gateway: str) -> None:
    body = {"jsonrpc": "2.0", "id": 4, "method": "SendMessage", "params": {"message": message("a2a+json")}}
    answer = httpx.post(gateway + "/a2a", content=orjson.dumps(body),
                        headers={"content-type": "application/a2a+json", **V10}).json()
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


# -- task rules ----------------------------------------------------------------------------------------------------


@both
def test_a_message_to_a_task_that_does_not_exist_is_task_not_found(gateway: str) -> None:
    answer = rpc(gateway + "/a2a", "SendMessage", {"message": message("to nobody", taskId="does-not-exist-123")})
    assert error_of(answer) == (-32001, "TASK_NOT_FOUND")


@both
def test_a_message_to_a_finished_task_is_refused_and_its_task_is_unchanged(gateway: str) -> None:
    task = send(gateway + "/a2a", "hello")
    answer = rpc(gateway + "/a2a", "SendMessage", {"message": message("again", taskId=task["id"])})
    got = rpc(gateway + "/a2a", "GetTask", {"id": task["id"]})["result"]
    assert error_of(answer) == (-32004, "UNSUPPORTED_OPERATION") and "has ended (completed)" in \
        answer["error"]["message"]
    assert got["status"]["state"] == "TASK_STATE_COMPLETED"


@both
def test_a_task_id_with_another_tasks_context_is_refused(gateway: str) -> None:
    task = waiting_task(gateway + "/a2a")
    answer = rpc(gateway + "/a2a", "SendMessage",
                 {"message": message("yes", taskId=task["id"], contextId="someone-elses-context")})
    assert answer["error"]["code"] == -32602 and task["contextId"] in answer["error"]["message"]


@both
def test_a_message_naming_only_its_task_continues_it_in_the_tasks_context(gateway: str) -> None:
    task = waiting_task(gateway + "/a2a")
    answered = send(gateway + "/a2a", "yes", taskId=task["id"])
    assert answered["id"] == task["id"] and answered["contextId"] == task["contextId"]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    texts = [p.get("text") for m in answered["history"] for p in m["parts"]]
    assert texts[0] == "please interrupt" and "yes" in texts  # the whole task: what both requests made


@both
def test_cancel_of_a_task_waiting_for_input_makes_it_canceled_for_good(gateway: str) -> None:
    task = waiting_task(gateway + "/a2a")
    cancelled = rpc(gateway + "/a2a", "CancelTask", {"id": task["id"]})["result"]
    got = rpc(gateway + "/a2a", "GetTask", {"id": task["id"]})["result"]
    again = rpc(gateway + "/a2a", "CancelTask", {"id": task["id"]})
    answer = rpc(gateway + "/a2a", "SendMessage", {"message": message("yes", taskId=task["id"])})
    assert cancelled["status"]["state"] == got["status"]["state"] == "TASK_STATE_CANCELED"
    assert error_of(again) == (-32002, "TASK_NOT_CANCELABLE")
    assert answer["error"]["code"] == -32004


@both
def test_cancel_of_a_running_task_answers_and_keeps_it_canceled(gateway: str) -> None:
    results: list[dict[str, Any]] = []
    streaming = threading.Thread(target=stream, args=(gateway + "/a2a", "SendStreamingMessage",
                                                      {"message": message("hang on")}, results))
    streaming.start()
    deadline = time.monotonic() + 10
    while not any("artifactUpdate" in r for r in results) and time.monotonic() < deadline:
        time.sleep(0.02)
    task_id = results[0]["task"]["id"]
    cancelled = rpc(gateway + "/a2a", "CancelTask", {"id": task_id})["result"]
    streaming.join(10)
    got = rpc(gateway + "/a2a", "GetTask", {"id": task_id})["result"]
    assert cancelled["status"]["state"] == got["status"]["state"] == "TASK_STATE_CANCELED"
    assert state_of(results[-1]) == "TASK_STATE_CANCELED"  # the stream itself ends so
    assert "Let me think" in "".join(p["text"] for a in got["artifacts"] for p in a["parts"])


@both
def test_get_task_shows_a_running_task_as_it_stands_and_cuts_its_history(gateway: str) -> None:
    results: list[dict[str, Any]] = []
    streaming = threading.Thread(target=stream, args=(gateway + "/a2a", "SendStreamingMessage",
                                                      {"message": message("go slow")}, results))
    streaming.start()
    deadline = time.monotonic() + 10
    while sum("artifactUpdate" in r for r in results) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    task_id = results[0]["task"]["id"]
    running = rpc(gateway + "/a2a", "GetTask", {"id": task_id})["result"]
    none = rpc(gateway + "/a2a", "GetTask", {"id": task_id, "historyLength": 0})["result"]
    streaming.join(10)
    assert running["status"]["state"] == "TASK_STATE_WORKING" and running["artifacts"][0]["parts"][0]["text"]
    assert "history" not in none and len(running["history"]) == 1


@both
def test_return_immediately_answers_the_task_at_once_and_the_task_goes_on_to_its_end(gateway: str) -> None:
    started = time.monotonic()
    answer = rpc(gateway + "/a2a", "SendMessage", {"message": message("hang on"),
                                                  "configuration": {"returnImmediately": True}})
    took = time.monotonic() - started
    task = answer["result"]["task"]
    time.sleep(0.3)
    running = rpc(gateway + "/a2a", "GetTask", {"id": task["id"]})["result"]
    cancelled = rpc(gateway + "/a2a", "CancelTask", {"id": task["id"]})["result"]
    assert task["status"]["state"] == "TASK_STATE_WORKING" and took < 5  # the agent would hang for an hour
    assert running["status"]["state"] == "TASK_STATE_WORKING" and "Let me think" in running["artifacts"][0][
        "parts"][0]["text"]
    assert cancelled["status"]["state"] == "TASK_STATE_CANCELED"


def test_a_03_client_reads_and_follows_tasks_in_03(gateway: str) -> None:
    task = waiting_task(gateway + "/a2a")
    got = rpc(gateway + "/a2a", "tasks/get", {"id": task["id"]}, {"a2a-version": "0.3"})["result"]
    followed: list[dict[str, Any]] = []
    body = {"jsonrpc": "2.0", "id": 5, "method": "tasks/resubscribe", "params": {"id": task["id"]}}

    def resubscribe() -> None:
        with httpx.stream("POST", gateway + "/a2a", json=body, headers={"a2a-version": "0.3"}, timeout=20) as answer:
            followed.extend(orjson.loads(line[6:])["result"] for line in answer.iter_lines()
                            if line.startswith("data: "))

    thread = threading.Thread(target=resubscribe)
    thread.start()
    time.sleep(0.5)
    send(gateway + "/a2a", "yes", taskId=task["id"])
    thread.join(10)
    assert got["kind"] == "task" and got["status"]["state"] == "input-required"
    assert got["history"][0]["kind"] == "message" and got["history"][0]["role"] == "user"
    assert followed[0]["kind"] == "task" and followed[-1]["kind"] == "status-update"
    assert followed[-1]["status"]["state"] == "completed" and followed[-1]["final"] is True


# -- ListTasks -----------------------------------------------------------------------------------------------------


@both
def test_list_tasks_pages_the_callers_tasks_newest_first_with_filters(gateway: str) -> None:
    context = f"ctx-list-{uuid.uuid4().hex[:6]}"
    made = [send(gateway + "/a2a", f"hello {n}", contextId=context)["id"] for n in range(5)]
    waiting = send(gateway + "/a2a", "please interrupt", contextId=context)["id"]
    seen: list[str] = []
    token = ""
    pages = 0
    while True:
        page = rpc(gateway + "/a2a", "ListTasks", {"contextId": context, "pageSize": 2, "pageToken": token,
                                                   "includeArtifacts": pages == 0})["result"]
        assert page["totalSize"] == 6 and page["pageSize"] == 2 and len(page["tasks"]) <= 2
        with_artifacts = ["artifacts" in t for t in page["tasks"]]
        assert any(with_artifacts) if pages == 0 else not any(with_artifacts)
        seen += [t["id"] for t in page["tasks"]]
        pages += 1
        token = page["nextPageToken"]
        if not token:
            break
    waiting_only = rpc(gateway + "/a2a", "ListTasks", {"context_id": context,
                                                       "status": "TASK_STATE_INPUT_REQUIRED"})["result"]
    later = rpc(gateway + "/a2a", "ListTasks", {"contextId": context,
                                                "statusTimestampAfter": "2999-01-01T00:00:00Z"})["result"]
    bad = rpc(gateway + "/a2a", "ListTasks", {"pageToken": "made-up"})
    assert seen == [waiting, *reversed(made)] and pages == 3
    assert [t["id"] for t in waiting_only["tasks"]] == [waiting] and waiting_only["nextPageToken"] == ""
    assert later == {"tasks": [], "nextPageToken": "", "pageSize": 50, "totalSize": 0}
    assert bad["error"]["code"] == -32602


@both
def test_list_tasks_never_shows_another_keys_tasks() -> None:
    with Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(config(agent.url, auth={"keys": ["key-a", "key-b"]}))) as gw:
        url = gw.url + "/a2a"
        mine = rpc(url, "SendMessage", {"message": message("mine")}, {"x-api-key": "key-a"})["result"]["task"]
        listed_a = rpc(url, "ListTasks", {}, {"x-api-key": "key-a"})["result"]
        listed_b = rpc(url, "ListTasks", {}, {"x-api-key": "key-b"})["result"]
        get_b = rpc(url, "GetTask", {"id": mine["id"]}, {"x-api-key": "key-b"})
    assert [t["id"] for t in listed_a["tasks"]] == [mine["id"]]
    assert listed_b["tasks"] == [] and listed_b["totalSize"] == 0
    assert error_of(get_b) == (-32001, "TASK_NOT_FOUND")


# -- SubscribeToTask -----------------------------------------------------------------------------------------------


@both
def test_every_subscriber_gets_the_task_and_then_every_update_to_its_end(gateway: str) -> None:
    sent: list[dict[str, Any]] = []
    streaming = threading.Thread(target=stream, args=(gateway + "/a2a", "SendStreamingMessage",
                                                      {"message": message("go slow")}, sent))
    streaming.start()
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        time.sleep(0.01)
    task_id = sent[0]["task"]["id"]
    subscribers = [[] for _ in range(3)]  # type: list[list[dict[str, Any]]]
    threads = [threading.Thread(target=stream, args=(gateway + "/a2a", "SubscribeToTask", {"id": task_id}, into, n))
               for n, into in enumerate(subscribers)]
    for thread in threads:
        thread.start()
    for thread in (*threads, streaming):
        thread.join(15)
    texts = "".join(p["text"] for r in sent if "artifactUpdate" in r for p in r["artifactUpdate"]["artifact"]["parts"])
    for got in subscribers:
        assert "task" in got[0] and got[0]["task"]["id"] == task_id
        assert state_of(got[-1]) == "TASK_STATE_COMPLETED"
        seen = "".join(p["text"] for a in got[0]["task"].get("artifacts", ()) for p in a["parts"]) + "".join(
            p["text"] for r in got[1:] if "artifactUpdate" in r for p in r["artifactUpdate"]["artifact"]["parts"])
        assert seen == texts  # the snapshot and the updates after it: nothing lost, nothing twice


@both
def test_a_subscriber_to_a_waiting_task_follows_the_message_that_continues_it(gateway: str) -> None:
    task = waiting_task(gateway + "/a2a")
    got: list[dict[str, Any]] = []
    subscribed = threading.Thread(target=stream, args=(gateway + "/a2a", "SubscribeToTask", {"id": task["id"]}, got))
    subscribed.start()
    time.sleep(0.5)
    send(gateway + "/a2a", "yes", taskId=task["id"])
    subscribed.join(10)
    assert not subscribed.is_alive()
    assert state_of(got[0]) == "TASK_STATE_INPUT_REQUIRED" and state_of(got[-1]) == "TASK_STATE_COMPLETED"


@both
def test_subscribing_to_no_task_or_a_finished_one_is_refused(gateway: str) -> None:
    done = send(gateway + "/a2a", "hello")
    missing = rpc(gateway + "/a2a", "SubscribeToTask", {"id": "no-such-task"})
    finished = rpc(gateway + "/a2a", "SubscribeToTask", {"id": done["id"]})
    assert error_of(missing) == (-32001, "TASK_NOT_FOUND")
    assert error_of(finished) == (-32004, "UNSUPPORTED_OPERATION")


# -- push notifications --------------------------------------------------------------------------------------------


@both
def test_push_notification_configs_are_not_supported_while_push_is_off(gateway: str) -> None:
    task = send(gateway + "/a2a", "hello")
    for method, params in [("CreateTaskPushNotificationConfig", {"taskId": task["id"], "url": "http://x/"}),
                           ("GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "c"}),
                           ("ListTaskPushNotificationConfigs", {"taskId": task["id"]}),
                           ("DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "c"})]:
        assert error_of(rpc(gateway + "/a2a", method, params)) == (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")


class Receiver:
    """A webhook on 127.0.0.1 that records each delivery, failing the first `failures` of them with a 500."""

    def __init__(self, failures: int = 0) -> None:
        self.deliveries: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.failures = failures

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        status = 200
        if self.failures:
            self.failures -= 1
            status = 500
        else:
            self.deliveries.append(({k.decode(): v.decode() for k, v in scope["headers"]}, orjson.loads(body)))
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    def states(self) -> list[str]:
        return [state_of(d) for _, d in self.deliveries if "statusUpdate" in d]


def wait_for(check: Any, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)


@both
def test_push_delivers_a_tasks_updates_to_its_webhook_with_its_token_and_credentials() -> None:
    receiver = Receiver(failures=1)  # the first delivery fails, and is retried
    with Served(receiver) as hook, Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(config(agent.url, push={"allow_hosts": ["127.0.0.1"]}))) as gw:
        url = gw.url + "/a2a"
        card = httpx.get(gw.url + "/.well-known/agent-card.json").json()
        task = waiting_task(url)
        hook_config = {"taskId": task["id"], "id": "hook-1", "url": hook.url + "/hook", "token": "tok-1",
                       "authentication": {"scheme": "Bearer", "credentials": "cred-1"}}
        created = rpc(url, "CreateTaskPushNotificationConfig", hook_config)["result"]
        got = rpc(url, "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "hook-1"})["result"]
        listed = rpc(url, "ListTaskPushNotificationConfigs", {"task_id": task["id"]})["result"]
        elsewhere = rpc(url, "CreateTaskPushNotificationConfig", {**hook_config, "url": "http://10.0.0.1/hook"})
        send(url, "yes", taskId=task["id"])
        wait_for(lambda: "TASK_STATE_COMPLETED" in receiver.states())
        deleted = rpc(url, "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "hook-1"})
        deleted_again = rpc(url, "DeleteTaskPushNotificationConfig", {"taskId": task["id"], "id": "hook-1"})
        gone = rpc(url, "GetTaskPushNotificationConfig", {"taskId": task["id"], "id": "hook-1"})
    assert card["capabilities"]["pushNotifications"] is True
    assert created == got == listed["configs"][0] == hook_config
    assert elsewhere["error"]["code"] == -32602 and "10.0.0.1" in elsewhere["error"]["message"]
    assert receiver.states()[0] == "TASK_STATE_WORKING" and receiver.states()[-1] == "TASK_STATE_COMPLETED"
    headers, first = receiver.deliveries[0]
    assert headers["x-a2a-notification-token"] == "tok-1" and headers["authorization"] == "Bearer cred-1"
    assert first["statusUpdate"]["taskId"] == task["id"]
    assert "result" in deleted and "result" in deleted_again and error_of(gone)[0] == -32001


@both
def test_push_configs_come_with_the_message_too_and_deliveries_are_bounded() -> None:
    receiver = Receiver()
    push = {"allow_hosts": ["127.0.0.1"], "max_notifications": 2}
    with Served(receiver) as hook, Served(create_agent_app("ag-ui")) as agent, \
            Served(create_app(config(agent.url, push=push))) as gw:
        answer = rpc(gw.url + "/a2a", "SendMessage", {"message": message("go slow"), "configuration": {
            "taskPushNotificationConfig": {"url": hook.url + "/hook"}}})
        wait_for(lambda: len(receiver.deliveries) >= 2)
        time.sleep(0.5)
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert len(receiver.deliveries) == 2  # many more updates than that: the rest were not sent


@both
def test_a_message_carrying_a_push_config_on_a_route_without_push_is_refused(gateway: str) -> None:
    answer = rpc(gateway + "/a2a", "SendMessage", {"message": message("hello"), "configuration": {
        "taskPushNotificationConfig": {"url": "http://127.0.0.1:9/hook"}}})
    assert error_of(answer) == (-32003, "PUSH_NOTIFICATION_NOT_SUPPORTED")


# -- an interrupt that declares the shape of its answer ------------------------------------------------------------

APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"]}


class ScriptedAgent:
    """An AG-UI agent in a few lines: each run's events, as `events` makes them from what the run was given."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        events = self.events(orjson.loads(body))
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"text/event-stream")]})
        await send({"type": "http.response.body", "body": b"".join(b"data: " + orjson.dumps(e) + b"\n\n"
                                                                   for e in events)})

    def events(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        raise NotImplementedError


class SchemaAgent(ScriptedAgent):
    """An AG-UI agent whose interrupt declares a `responseSchema`, and that fails a run answered otherwise, as
    real ones do; an answer that fits is echoed."""

    def __init__(self) -> None:
        self.payloads: list[Any] = []

    def events(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        started = {"type": "RUN_STARTED", "threadId": run["threadId"], "runId": run["runId"]}
        if run.get("resume"):
            payload = run["resume"][0].get("payload")
            self.payloads.append(payload)
            fits = isinstance(payload, dict) and isinstance(payload.get("approved"), bool)
            events = [started, {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                      {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m",
                       "delta": f"got {orjson.dumps(payload).decode()}"},
                      {"type": "TEXT_MESSAGE_END", "messageId": "m"},
                      {"type": "RUN_FINISHED", "threadId": run["threadId"], "runId": run["runId"]} if fits else
                      {"type": "RUN_ERROR", "message": "ResumeEntry payload does not match the responseSchema"}]
        else:
            events = [started, {"type": "RUN_FINISHED", "threadId": run["threadId"], "runId": run["runId"],
                                "outcome": {"type": "interrupt", "interrupts": [
                                    {"id": "int-1", "reason": "approval", "message": "Delete /tmp/demo?",
                                     "responseSchema": APPROVAL}]}}]
        return events


@both
def test_an_answer_is_shaped_as_the_interrupts_schema_asks_else_asked_again_and_never_fails_the_task() -> None:
    agent = SchemaAgent()
    with Served(agent) as upstream, Served(create_app(config(upstream.url))) as gw:
        url = gw.url + "/a2a"
        asked = send(url, "clean up")
        data = next(p["data"] for p in asked["status"]["message"]["parts"] if "data" in p)
        maybe = rpc(url, "SendMessage", {"message": message("maybe", taskId=asked["id"])})
        still = rpc(url, "GetTask", {"id": asked["id"]})["result"]
        yes = send(url, "Yes", taskId=asked["id"])
        again = send(url, "clean up again")
        as_data = rpc(url, "SendMessage", {"message": {**message("", taskId=again["id"]), "parts": [
            {"data": {"approved": False, "reason": "not now"}}]}})["result"]["task"]
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED" and data["responseSchema"] == APPROVAL
    asked_again = maybe["result"]["task"]  # the answer refused, saying what is asked: the task asks again
    assert asked_again["id"] == asked["id"] and asked_again["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert any('"approved"' in p.get("text", "") and "yes or no" in p.get("text", "")
               for p in asked_again["status"]["message"]["parts"])
    assert still["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # the task waits on: the answer never went up
    assert yes["status"]["state"] == as_data["status"]["state"] == "TASK_STATE_COMPLETED"
    assert agent.payloads == [{"approved": True}, {"approved": False, "reason": "not now"}]


@both
@pytest.mark.parametrize(("said", "approved"), [("Yes, go ahead.", True), ("no thanks", False),
                                                ("absolutely not", False), ("sure, do it", True)])
def test_an_approval_answered_in_plain_words_is_that_yes_or_no(said: str, approved: bool) -> None:
    agent = SchemaAgent()
    with Served(agent) as upstream, Served(create_app(config(upstream.url))) as gw:
        url = gw.url + "/a2a"
        asked = send(url, "clean up")
        answered = send(url, said, taskId=asked["id"])
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert agent.payloads == [{"approved": approved}]


# -- a task waiting on a tool the client runs --------------------------------------------------------------------


class ClientToolAgent(ScriptedAgent):
    """An AG-UI agent that calls a tool it does not run (`ask_user`) and ends its run there, as an agent with tools
    for the frontend does; given the tool's result, it says what came back."""

    def __init__(self) -> None:
        self.tool_messages: list[dict[str, Any]] = []

    def events(self, run: dict[str, Any]) -> list[dict[str, Any]]:
        events: list[dict[str, Any]] = [{"type": "RUN_STARTED", "threadId": run["threadId"], "runId": run["runId"]}]
        answered = [m for m in run["messages"] if m.get("role") == "tool"]
        if answered:
            self.tool_messages += answered
            said = f"you said {answered[-1]['content']}"
            events += [{"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                       {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": said},
                       {"type": "TEXT_MESSAGE_END", "messageId": "m"}]
        else:
            events += [{"type": "TOOL_CALL_START", "toolCallId": "call-1", "toolCallName": "ask_user"},
                       {"type": "TOOL_CALL_ARGS", "toolCallId": "call-1", "delta": '{"question":"Which file?"}'},
                       {"type": "TOOL_CALL_END", "toolCallId": "call-1"}]
        events.append({"type": "RUN_FINISHED", "threadId": run["threadId"], "runId": run["runId"]})
        return events


@both
def test_a_tool_result_sent_to_a_task_waiting_on_the_client_s_tool_continues_it() -> None:
    """What ADK's RemoteA2aAgent sends after running a call the remote agent left it: a `function_response` data
    part naming the call, on the waiting task."""
    agent = ClientToolAgent()
    with Served(agent) as upstream, Served(create_app(config(upstream.url))) as gw:
        url = gw.url + "/a2a"
        asked = send(url, "clean up")
        call = next(p["data"] for p in asked["status"]["message"]["parts"] if "data" in p)
        waiting = rpc(url, "GetTask", {"id": asked["id"]})["result"]
        answer = {**message("", taskId=asked["id"], contextId=asked["contextId"]), "parts": [
            {"data": {"id": call["id"], "name": call["name"], "response": {"result": "notes.txt"}},
             "metadata": {"adk_type": "function_response"}}]}
        done = rpc(url, "SendMessage", {"message": answer})["result"]["task"]
    assert asked["status"]["state"] == waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert call["name"] == "ask_user"
    assert done["id"] == asked["id"] and done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert done["artifacts"][-1]["parts"] == [{"text": "you said notes.txt"}]
    assert [(m["toolCallId"], m["content"]) for m in agent.tool_messages] == [("call-1", "notes.txt")]
