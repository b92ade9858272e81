"""MCP 2026-07-28 at the gateway's `/mcp`, beside the handshake era: the official clients of that era (`mcp` 2.3.0's
Python `Client(mode="auto")`, `tests/peers/mcp_modern_client.py`, and `@modelcontextprotocol/client` 2.4.0's
TypeScript `Client` with `versionNegotiation: auto`, `tests/clients/mcp-modern-run.mjs`) against the built-in agent:
discovery without a session, a tool per route, progress, a second turn, and an agent's question asked as
`input_required` and answered by the client's retry; and over raw HTTP what the era asks a server to refuse (a
missing envelope, headers that disagree with the body, a version not served, the methods it removed).
Install first: `.venv/bin/python tests/peers_env.py`; the TypeScript client needs `@modelcontextprotocol/client`
in tests/clients (its tests are skipped without it).
"""

from __future__ import annotations

import base64
import itertools
import json
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import orjson
import pytest
from node_clients import CLIENTS_DIR
from peers_env import MCP, PEERS_DIR

from tests.adapters.mcp.gateway_face import HELPER, Face, served, team
from tests.adapters.mcp.gateway_face import one as one_step

KEY, OTHER_KEY = "sk-team-0123456789abcdef", "sk-team-fedcba9876543210"
VERSION = "2026-07-28"
TIMEOUT = 30.0
TS_CLIENT = CLIENTS_DIR / "node_modules" / "@modelcontextprotocol" / "client" / "package.json"

Run = dict[str, Any]
"""What a client printed: `opened` (the version and server it connected to), `steps`, `error` (it could not)."""


def python_client(url: str, plan: list[dict[str, Any]], key: str | None = None) -> Run:
    if not MCP.installed():
        raise RuntimeError("the mcp peer venv is missing: run `.venv/bin/python tests/peers_env.py`")
    command = [str(MCP.python), str(PEERS_DIR / "mcp_modern_client.py"), url, json.dumps(plan)]
    return _run(command + (["--key", key] if key else []), PEERS_DIR)


def typescript_client(url: str, plan: list[dict[str, Any]], key: str | None = None) -> Run:
    if not TS_CLIENT.is_file():
        pytest.skip("@modelcontextprotocol/client (2.4.0, the TypeScript SDK of 2026-07-28) is not in "
                    "tests/clients/node_modules: add it to tests/clients/package.json and "
                    "`npm ci --prefix tests/clients`")
    command = ["node", "mcp-modern-run.mjs", url, json.dumps(plan)]
    return _run(command + (["--key", key] if key else []), CLIENTS_DIR)


def _run(command: list[str], cwd: Any) -> Run:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT * 4, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    said = [line for line in done.stderr.splitlines() if line.strip()]
    return {"opened": lines[0] if lines else {}, "steps": lines[1:],
            "error": (said[-1] if said else f"exited with {done.returncode}") if done.returncode else None}


CLIENTS = {"python": python_client, "typescript": typescript_client}
Send = Callable[..., Run]


@pytest.fixture(params=sorted(CLIENTS))
def send(request: pytest.FixtureRequest) -> Send:
    return CLIENTS[request.param]


class World(Face):
    """The gateway's `/mcp`, asked in 2026-07-28's raw HTTP."""

    def __init__(self, gateway: str, agent: str) -> None:
        super().__init__(gateway, agent, TIMEOUT)
        self.ids = itertools.count(1)

    def post(self, method: str, params: dict[str, Any] | None = None, *, meta: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None, **envelope: Any) -> httpx.Response:
        """A 2026-07-28 request with its envelope and the headers that agree with it, unless told otherwise."""
        params = dict(params or {})
        params["_meta"] = meta if meta is not None else {
            "io.modelcontextprotocol/protocolVersion": VERSION,
            "io.modelcontextprotocol/clientCapabilities": envelope.pop("capabilities", {}),
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"}, **envelope}
        sent = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                "mcp-protocol-version": VERSION, "mcp-method": method}
        if "name" in params:
            sent["mcp-name"] = params["name"]
        sent.update(headers or {})
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        return self.http.post(self.url, content=orjson.dumps(message),
                              headers={k: v for k, v in sent.items() if v is not None})


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with served([HELPER, team(KEY, OTHER_KEY)], World) as opened:
        yield opened


def one(run: Run) -> dict[str, Any]:
    return one_step(run["steps"], run["error"])


def messages_in(answer: httpx.Response) -> list[dict[str, Any]]:
    if answer.headers["content-type"].startswith("application/json"):
        return [answer.json()]
    return [orjson.loads(line[6:]) for line in answer.content.splitlines() if line.startswith(b"data: ")]


def result_of(answer: httpx.Response) -> dict[str, Any]:
    last = messages_in(answer)[-1]
    assert "result" in last, last
    result: dict[str, Any] = last["result"]
    return result


# The SDKs of 2026-07-28


def test_a_2026_client_discovers_the_gateway_and_speaks_2026_without_a_session(world: World, send: Send) -> None:
    run = send(world.url, [{"list": True}])
    assert run["opened"]["protocolVersion"] == VERSION
    assert run["opened"]["serverInfo"]["name"] == "agent-gateway"
    assert run["opened"].get("sessionId") is None
    tools = one(run)["tools"]
    assert [tool["name"] for tool in tools] == ["helper"]  # the keyed route is not this caller's
    assert tools[0]["description"] == "A helpful agent"


def test_a_key_opens_its_route_as_a_tool_for_a_2026_client(world: World, send: Send) -> None:
    run = send(world.url, [{"list": True}, {"call": "team", "arguments": {"message": "hello"}}], key=KEY)
    assert run["error"] is None, run["error"]
    listed, called = run["steps"]
    assert [tool["name"] for tool in listed["tools"]] == ["helper", "team"]
    assert called["isError"] is False and "You said: hello" in called["content"][0]


def test_a_2026_call_streams_progress_with_the_text_so_far_and_ends_in_its_result(world: World, send: Send) -> None:
    called = one(send(world.url, [{"call": "helper", "arguments": {"message": "hello there"}}]))
    assert called["isError"] is False
    assert called["content"] == ["You said: hello there. (turn 1)"]
    messages = [message for _, _, message in called["progress"]]
    assert len(messages) > 3 and messages[-1] == called["content"][0]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(messages))
    assert called["structured"]["conversation_id"]


def test_a_second_2026_call_with_the_conversation_id_continues_the_conversation(world: World, send: Send) -> None:
    first = one(send(world.url, [{"call": "helper", "arguments": {"message": "hello"}}]))
    conversation = first["structured"]["conversation_id"]
    second = one(send(world.url, [{"call": "helper", "arguments": {"message": "again",
                                                                   "conversation_id": conversation}}]))
    assert second["content"] == ["You said: again. (turn 2)"]
    assert second["structured"]["conversation_id"] == conversation


@pytest.mark.parametrize("approve", [True, False])
def test_an_approval_is_asked_as_input_required_and_the_answer_resumes_the_run(world: World, send: Send,
                                                                              approve: bool) -> None:
    called = one(send(world.url, [{"call": "helper", "arguments": {"message": "please approve the deletion"},
                                   "elicit": [{"action": "accept", "content": {"approve": approve}}]}]))
    [asked] = called["elicited"]
    assert asked["message"] == "Delete /tmp/demo?"
    assert asked["requestedSchema"]["properties"]["approve"]["type"] == "boolean"
    assert called["isError"] is False
    [said] = called["content"]
    assert said.startswith("Resumed int-") and said.endswith(f'{{"approved":{str(approve).lower()}}}.')


def test_an_approval_declined_is_answered_no(world: World, send: Send) -> None:
    called = one(send(world.url, [{"call": "helper", "arguments": {"message": "please approve the deletion"},
                                   "elicit": [{"action": "decline"}]}]))
    assert called["content"][0].endswith('{"approved":false}.')


def test_a_question_is_asked_as_one_text_field_and_the_answer_is_its_text(world: World, send: Send) -> None:
    called = one(send(world.url, [{"call": "helper", "arguments": {"message": "an interrupt, please"},
                                   "elicit": [{"action": "accept", "content": {"answer": "yes"}}]}]))
    [asked] = called["elicited"]
    assert asked["message"] == "Continue?" and list(asked["requestedSchema"]["properties"]) == ["answer"]
    assert called["content"][0].endswith(': "yes".')


def test_an_unknown_tool_is_a_protocol_error_for_a_2026_client(world: World, send: Send) -> None:
    [step] = send(world.url, [{"call": "team", "arguments": {"message": "hi"}}])["steps"]  # keyed: not this caller's
    assert "Unknown tool: team" in step["error"]


@pytest.mark.parametrize("arguments", [{}, {"message": 42}])
def test_a_2026_call_without_a_text_message_is_a_tool_error_saying_what_to_give(world: World, send: Send,
                                                                               arguments: dict[str, Any]) -> None:
    called = one(send(world.url, [{"call": "helper", "arguments": arguments}]))
    assert called["isError"] is True
    [said] = called["content"]
    assert "message" in said and "what the user says to the agent, as a text" in said


def test_a_2026_client_without_elicitation_gets_the_question_in_a_complete_result(world: World, send: Send) -> None:
    called = one(send(world.url, [{"call": "helper", "arguments": {"message": "please approve the deletion"}}]))
    [said] = called["content"]
    question, how_to_answer = said.split("\n\n")
    assert question == "Delete /tmp/demo?"
    assert f'conversation_id "{called["structured"]["conversation_id"]}"' in how_to_answer
    [interrupt] = called["structured"]["interrupts"]
    assert interrupt["toolCallId"] and interrupt["id"].startswith("int-")


# The era's wire, as a server must answer it


def test_server_discover_names_the_versions_capabilities_and_server_without_a_session(world: World) -> None:
    answer = world.post("server/discover")
    assert answer.status_code == 200 and "mcp-session-id" not in answer.headers
    result = result_of(answer)
    assert result["resultType"] == "complete"
    assert result["supportedVersions"][0] == VERSION and "2025-11-25" in result["supportedVersions"]
    assert result["capabilities"]["tools"] == {"listChanged": False}
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "agent-gateway"
    assert result["ttlMs"] == 0 and result["cacheScope"] == "private"


def test_tools_list_is_private_to_the_callers_key_and_typed(world: World) -> None:
    anonymous = result_of(world.post("tools/list"))
    keyed = result_of(world.post("tools/list", headers={"authorization": f"Bearer {KEY}"}))
    assert [tool["name"] for tool in anonymous["tools"]] == ["helper"]
    assert [tool["name"] for tool in keyed["tools"]] == ["helper", "team"]
    assert keyed["cacheScope"] == "private" and keyed["ttlMs"] == 0 and keyed["resultType"] == "complete"


def test_a_request_without_the_envelope_is_refused_naming_what_is_missing(world: World) -> None:
    answer = world.post("tools/list", meta={"io.modelcontextprotocol/protocolVersion": VERSION})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32602 and "io.modelcontextprotocol/clientCapabilities" in error["message"]
    assert world.post("tools/list", meta={}).json()["error"]["code"] == -32602


@pytest.mark.parametrize(("headers", "why"), [
    ({"mcp-method": "tools/list"}, "mcp-method"),
    ({"mcp-method": None}, "mcp-method"),
    ({"mcp-name": "team"}, "mcp-name"),
    ({"mcp-name": None}, "mcp-name"),
])
def test_headers_that_disagree_with_the_body_are_refused(world: World, headers: dict[str, str | None],
                                                         why: str) -> None:
    answer = world.post("tools/call", {"name": "helper", "arguments": {"message": "hi"}}, headers=headers)
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32020 and why in error["message"]


def test_a_version_header_that_disagrees_with_the_envelope_is_a_header_mismatch(world: World) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-01-01",
            "io.modelcontextprotocol/clientCapabilities": {}}
    answer = world.post("tools/list", meta=meta)
    assert answer.status_code == 400 and answer.json()["error"]["code"] == -32020


def test_the_era_is_the_version_headers_a_handshake_version_is_served_as_2025(world: World) -> None:
    assert world.post("ping").status_code == 404
    handshake = world.post("ping", headers={"mcp-protocol-version": "2025-11-25"})
    assert handshake.status_code == 200 and handshake.json()["result"] == {}


def test_header_values_are_read_with_whitespace_around_and_base64_sentinels_decoded(world: World) -> None:
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {}}}})
    host, port = world.url.split("/")[2].split(":")
    with socket.create_connection((host, int(port)), timeout=TIMEOUT) as raw:  # httpx sends no such header
        raw.sendall(b"POST /mcp HTTP/1.1\r\nHost: " + host.encode() + b"\r\nContent-Type: application/json\r\n"
                    b"MCP-Protocol-Version: \t2026-07-28 \r\nMcp-Method:   tools/list\t\r\nConnection: close\r\n"
                    b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        answer = b"".join(iter(lambda: raw.recv(65536), b""))
    assert answer.startswith(b"HTTP/1.1 200") and b'"resultType":"complete"' in answer
    encoded = f"=?base64?{base64.b64encode(b'helper').decode()}?="
    decoded = world.post("tools/call", {"name": "helper", "arguments": {"message": "hi"}},
                         headers={"mcp-name": encoded})
    assert decoded.status_code == 200 and "You said: hi" in result_of(decoded)["content"][0]["text"]
    broken = world.post("tools/call", {"name": "helper", "arguments": {"message": "hi"}},
                        headers={"mcp-name": "=?base64?!!!?="})
    assert broken.status_code == 400 and broken.json()["error"]["code"] == -32020


def test_a_version_not_served_is_refused_with_the_versions_that_are(world: World) -> None:
    meta = {"io.modelcontextprotocol/protocolVersion": "2027-01-01",
            "io.modelcontextprotocol/clientCapabilities": {}}
    answer = world.post("server/discover", meta=meta, headers={"mcp-protocol-version": "2027-01-01"})
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == -32022
    assert error["data"]["requested"] == "2027-01-01" and VERSION in error["data"]["supported"]


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_get_and_delete_under_the_2026_header_are_not_allowed(world: World, method: str) -> None:
    answer = world.http.request(method, world.url, headers={"mcp-protocol-version": VERSION,
                                                            "mcp-session-id": "anything"})
    assert answer.status_code == 405 and answer.headers["allow"] == "POST"


@pytest.mark.parametrize("method", ["ping", "initialize", "logging/setLevel", "resources/list"])
def test_methods_this_era_removed_or_the_gateway_does_not_serve_are_not_found(world: World, method: str) -> None:
    answer = world.post(method)
    assert answer.status_code == 404
    assert answer.json()["error"] == {"code": -32601, "message": "Method not found", "data": method}


def test_a_notification_is_accepted_and_a_posted_response_refused(world: World) -> None:
    headers = {"content-type": "application/json", "mcp-protocol-version": VERSION}
    note = world.http.post(world.url, content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
                           headers=headers)
    assert note.status_code == 202
    posted = world.http.post(world.url, content=b'{"jsonrpc":"2.0","id":3,"result":{}}', headers=headers)
    assert posted.status_code == 400 and posted.json()["error"]["code"] == -32600


def test_an_unknown_tool_is_invalid_params(world: World) -> None:
    answer = world.post("tools/call", {"name": "team", "arguments": {"message": "hi"}})  # keyed: not this caller's
    assert answer.status_code == 400 and answer.json()["error"]["code"] == -32602


def test_a_2026_client_that_closes_the_calls_stream_cancels_the_run_upstream(world: World) -> None:
    before = world.disconnects()
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "helper", "arguments": {"message": "please be slow"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": 1}}})
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": VERSION, "mcp-method": "tools/call", "mcp-name": "helper"}
    with world.http.stream("POST", world.url, content=body, headers=headers) as stream:
        assert b"notifications/progress" in next(stream.iter_bytes())
    deadline = time.monotonic() + 5
    while world.disconnects() == before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert world.disconnects() == before + 1


def test_log_lines_go_only_to_a_request_whose_envelope_names_a_log_level(world: World) -> None:
    call = {"name": "helper", "arguments": {"message": "weather in Paris?"}}
    quiet = messages_in(world.post("tools/call", call))
    assert not [m for m in quiet if m.get("method") == "notifications/message"]
    logged = [m["params"] for m in messages_in(world.post("tools/call", call, **{
        "io.modelcontextprotocol/logLevel": "info"})) if m.get("method") == "notifications/message"]
    assert [list(line["data"]) for line in logged] == [["toolCall"], ["toolResult"]]


# input_required over raw HTTP: what the retry must carry, and whose conversation it reaches


def ask_approval(world: World, key: str = KEY) -> tuple[dict[str, Any], dict[str, Any]]:
    """A call whose agent asks for approval, by a client that takes forms: its params and the result."""
    params = {"name": "team", "arguments": {"message": "please approve the deletion"}}
    answer = world.post("tools/call", params, capabilities={"elicitation": {}},
                        headers={"authorization": f"Bearer {key}"})
    result = result_of(answer)
    assert result["resultType"] == "input_required", result
    return params, result


def retry(world: World, params: dict[str, Any], responses: Any, state: Any, key: str = KEY) -> httpx.Response:
    return world.post("tools/call", {**params, "inputResponses": responses, "requestState": state},
                      capabilities={"elicitation": {}}, headers={"authorization": f"Bearer {key}"})


def test_input_required_asks_each_interrupt_by_its_id_with_an_opaque_state(world: World) -> None:
    _, result = ask_approval(world)
    [(key, request)] = result["inputRequests"].items()
    assert key.startswith("int-") and request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "form" and request["params"]["requestedSchema"]["required"] == ["approve"]
    assert isinstance(result["requestState"], str) and "content" not in result


def test_a_retry_must_answer_what_was_asked_with_the_state_it_was_given(world: World) -> None:
    params, result = ask_approval(world)
    [key] = result["inputRequests"]
    accept = {key: {"action": "accept", "content": {"approve": True}}}
    for responses, state in [(accept, "forged"), (accept, None), ({}, result["requestState"]),
                             ({"other": {"action": "accept", "content": {}}}, result["requestState"]),
                             ({key: {"action": "accept", "content": {"approve": "yes"}}}, result["requestState"])]:
        answer = retry(world, params, responses, state)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == -32602, (responses, state)
    elsewhere = world.post("tools/call", {"name": "helper", "arguments": {"message": "hi"}, "inputResponses": accept,
                                          "requestState": result["requestState"]})
    assert elsewhere.status_code == 400 and "another tool" in elsewhere.json()["error"]["message"]
    resumed = retry(world, params, accept, result["requestState"])
    assert result_of(resumed)["content"][0]["text"] == f'Resumed {key}: {{"approved":true}}.'


def test_another_keys_retry_with_the_same_state_does_not_answer_the_callers_interrupt(world: World) -> None:
    params, result = ask_approval(world)
    [key] = result["inputRequests"]
    accept = {key: {"action": "accept", "content": {"approve": True}}}
    stolen = result_of(retry(world, params, accept, result["requestState"], key=OTHER_KEY))
    assert "Resumed" not in orjson.dumps(stolen).decode()
    mine = result_of(retry(world, params, accept, result["requestState"]))
    assert mine["content"][0]["text"] == f'Resumed {key}: {{"approved":true}}.'

