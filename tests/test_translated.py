"""A resumable run followed in another dialect than the one that started it (`gateway/server/stream/translated.py`):
an AG-UI run dropped on one replica and followed on the other, over one real Redis, by a client of each dialect the
route serves, each getting the whole text as its own dialect writes it.

The gateways and the upstream (the built-in agent, paced so a run lasts a while) are real servers on 127.0.0.1.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from e2e import request_body, user_message
from faults import GatewayProcess
from node_clients import node_clients_available, run_a2a_tasks_js, run_agui, verify_agui, verify_vercel
from openai import OpenAI
from peers_env import LANGGRAPH, run_langgraph_client
from redis_server import RedisServer
from servers import Served
from test_resume import PACE, agent_calls, agui_body, frames, read_some, wait_until

from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.runs.tape import PIECE_COST, TAPE_COST
from gateway.server.app import create_app

TEXT = "".join(f"tick {i}. " for i in range(1, 21))
"""What the paced agent answers "slow please" with."""
PATHS = {"ag-ui": "/agui", "vercel": "/api/chat", "openai-responses": "/v1/responses", "a2a": "/a2a",
         "langgraph": "/langgraph"}


def config(agent: str, store: str, **route: Any) -> GatewayConfig:
    """One resumable route serving every follower's dialect, each on its own path."""
    return GatewayConfig.model_validate({"store": {"url": store}, "routes": [
        {"name": "chat", "paths": list(PATHS.values()), "client_dialects": list(PATHS), "resumable": True,
         "upstream": {"url": f"{agent}/send-message", "dialect": "ag-kit"}, **route}]})


@contextmanager
def replicas(store: str, **route: Any) -> Iterator[tuple[str, str, str]]:
    """The paced agent and two gateways in front of it, sharing `store`."""
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-kit", pace=PACE)))
        one, two = (stack.enter_context(Served(create_app(config(agent.url, store, **route)))).url for _ in range(2))
        yield agent.url, one, two


@pytest.fixture(scope="module")
def redis() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


def dropped_agui_run(gateway: str, thread: str, key: str | None = None) -> list[dict[str, Any]]:
    """An AG-UI run started on `gateway`, its client gone after a few events."""
    headers = {"authorization": f"Bearer {key}"} if key else None
    return frames(read_some(f"{gateway}{PATHS['ag-ui']}", agui_body(thread), 4, headers))


def get_some(url: str, count: int) -> bytes:
    """GET a follower's stream, read `count` SSE events, then drop the connection."""
    received = b""
    with httpx.Client(timeout=10) as http, http.stream("GET", url) as response:
        assert response.status_code == 200
        for chunk in response.iter_raw():
            received += chunk
            if received.count(b"\n\n") >= count:
                break
    return b"".join(block + b"\n\n" for block in received.split(b"\n\n")[:count])


def vercel_text(body: bytes) -> str:
    return "".join(chunk.get("delta", "") for chunk in _chunks(body) if chunk.get("type") == "text-delta")


def _chunks(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(frame["data"]) for frame in frames(body) if frame["data"] != "[DONE]"]


def test_an_agui_run_dropped_on_one_replica_is_followed_whole_by_an_ai_sdk_client_on_the_other(
        redis: RedisServer) -> None:
    with replicas(redis.url) as (agent, one, two):
        dropped_agui_run(one, "thread-v1")
        followed = httpx.get(f"{two}{PATHS['vercel']}/thread-v1/stream", timeout=10)
        assert followed.status_code == 200
        assert followed.headers["x-vercel-ai-ui-message-stream"] == "v1"
        assert b"RUN_STARTED" not in followed.content and followed.content.endswith(b"data: [DONE]\n\n")
        assert vercel_text(followed.content) == TEXT
        assert len(agent_calls(agent)) == 1
        if node_clients_available():
            verdict = verify_vercel({"followed": followed.content})["followed"]
            assert verdict["ok"], verdict
            assert [p["text"] for p in verdict["message"]["parts"] if p["type"] == "text"] == [TEXT]


def test_an_ai_sdk_run_is_followed_by_an_agui_client_that_comes_back_with_last_event_id_for_the_rest(
        redis: RedisServer) -> None:
    """Positions are the follower's own: the `id:` of its translated reply, the same on every replica."""
    with replicas(redis.url) as (agent, one, two):
        body = orjson.dumps(request_body("vercel", [user_message("vercel", "slow please")], conversation="chat-a1"))
        read_some(f"{one}{PATHS['vercel']}", body, 4)
        first = get_some(f"{two}{PATHS['ag-ui']}/chat-a1/stream", 6)
        rest = httpx.get(f"{one}{PATHS['ag-ui']}/chat-a1/stream", timeout=10,
                         headers={"last-event-id": frames(first)[-1]["id"]})
        assert rest.status_code == 200
        events = frames(first) + frames(rest.content)
        assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
        decoded = [orjson.loads(e["data"]) for e in events]
        assert decoded[0]["type"] == "RUN_STARTED" and decoded[-1]["type"] == "RUN_FINISHED"
        assert decoded[0]["threadId"] == decoded[-1]["threadId"] == "chat-a1"
        assert decoded[0]["runId"] == decoded[-1]["runId"]  # the run's, whichever replica translated it
        assert "".join(e.get("delta", "") for e in decoded) == TEXT
        assert len(agent_calls(agent)) == 1
        if node_clients_available():
            verdict = verify_agui({"followed": first + rest.content})["followed"]
            assert verdict["ok"], verdict
            assert [m["content"] for m in verdict["messages"] if m["role"] == "assistant"] == [TEXT]


def test_an_agui_run_is_streamed_to_an_openai_sdk_client_as_a_response_and_resumed_from_starting_after(
        redis: RedisServer) -> None:
    """`GET /v1/responses/{id}?stream=true&starting_after=N` (the `openai` SDK's `responses.retrieve`), the id
    being the conversation the AG-UI client named, on the replica that does not run it."""
    with replicas(redis.url) as (agent, one, two):
        dropped_agui_run(one, "thread-o1")
        openai = OpenAI(base_url=f"{two}/v1", api_key="unused", max_retries=0)
        first = []
        for event in openai.responses.retrieve("thread-o1", stream=True):
            first.append(event)
            if len(first) == 8:
                break  # the client goes away, and comes back for what follows the last event it had
        rest = list(openai.responses.retrieve("thread-o1", stream=True, starting_after=first[-1].sequence_number))
        events = first + rest
        assert [e.sequence_number for e in events] == list(range(1, len(events) + 1))
        assert events[0].type == "response.created" and events[-1].type == "response.completed"
        assert events[-1].response.id == "thread-o1" and events[-1].response.output_text == TEXT
        assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == TEXT
        assert len(agent_calls(agent)) == 1


def test_another_callers_follower_of_any_dialect_is_refused_as_a_resume_of_the_same_dialect_is(
        redis: RedisServer) -> None:
    with replicas(redis.url, auth={"keys": ["alice", "mallory"]}) as (_agent, one, two):
        dropped_agui_run(one, "thread-p1", key="alice")
        mallory = {"authorization": "Bearer mallory"}
        same_dialect = httpx.get(f"{two}{PATHS['ag-ui']}/thread-p1/stream", headers=mallory, timeout=10)
        assert same_dialect.status_code == 204  # no run of hers runs there
        assert httpx.get(f"{two}{PATHS['vercel']}/thread-p1/stream", headers=mallory, timeout=10).status_code == 204
        responses = httpx.get(f"{two}/v1/responses/thread-p1", params={"stream": "true"}, headers=mallory, timeout=10)
        assert responses.status_code == 404 and responses.json()["error"]["code"] == "response_not_found"
        subscribe = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "thread-p1"}}
        a2a = httpx.post(f"{two}{PATHS['a2a']}", json=subscribe, headers={**mallory, "a2a-version": "1.0"}, timeout=10)
        assert a2a.json()["error"]["code"] == -32001  # TaskNotFoundError, as for a task of another caller's
        join = httpx.get(f"{two}{PATHS['langgraph']}/threads/thread-p1/runs/run-p1/stream", headers=mallory,
                         timeout=10)
        assert join.status_code == 404
        alice = httpx.get(f"{two}{PATHS['vercel']}/thread-p1/stream", headers={"authorization": "Bearer alice"},
                          timeout=10)
        assert alice.status_code == 200 and vercel_text(alice.content) == TEXT


@pytest.mark.skipif(not node_clients_available(), reason="needs `npm ci --prefix tests/clients`")
def test_an_agui_run_is_followed_by_the_a2a_sdks_subscribe_as_a_task_of_the_id_it_named(redis: RedisServer) -> None:
    """`SubscribeToTask` (`@a2a-js/sdk`'s `resubscribeTask`) naming the conversation the AG-UI client named."""
    with replicas(redis.url) as (agent, one, two):
        dropped_agui_run(one, "thread-a2")
        followed = run_a2a_tasks_js(f"{two}{PATHS['a2a']}/", "subscribe", {"id": "thread-a2"})
        assert followed["error"] is None, followed["error"]
        answers = followed["answers"]
        assert answers[0]["task"]["id"] == answers[0]["task"]["contextId"] == "thread-a2"
        assert answers[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        text = "".join(part.get("text", "") for answer in answers if "artifactUpdate" in answer
                       for part in answer["artifactUpdate"]["artifact"]["parts"])
        assert text == TEXT
        assert len(agent_calls(agent)) == 1


@pytest.mark.skipif(not LANGGRAPH.installed(), reason="needs the langgraph peer: python tests/peers_env.py")
def test_an_agui_run_is_joined_by_langgraphs_sdk_on_the_thread_of_its_conversation(redis: RedisServer) -> None:
    """`client.runs.join_stream(thread_id, run_id)` (`langgraph-sdk`), the thread being the AG-UI client's; the
    thread has no LangGraph run of that id, so the run running in its conversation is joined."""
    with replicas(redis.url) as (agent, one, two):
        dropped_agui_run(one, "thread-l1")
        joined = run_langgraph_client(f"{two}{PATHS['langgraph']}", "join", thread="thread-l1", run="run-l1")
        assert joined.error is None, joined.error
        assert joined.events("metadata")[0]["run_id"] == "run-l1"
        assert joined.text == TEXT
        assert len(agent_calls(agent)) == 1


def started(gateway: str, dialect: str, conversation: str) -> None:
    """A run started on `gateway` by a client of `dialect` in `conversation`, its client gone after a few events."""
    body = request_body(dialect, [user_message(dialect, "slow please")], conversation=conversation, agent="chat")
    if dialect == "openai-responses":
        body["conversation"] = conversation
    path = PATHS[dialect] + (f"/threads/{conversation}/runs/stream" if dialect == "langgraph" else "")
    read_some(f"{gateway}{path}", orjson.dumps(body), 3, {"a2a-version": "1.0"} if dialect == "a2a" else None)


@pytest.mark.skipif(not node_clients_available(), reason="needs `npm ci --prefix tests/clients`")
@pytest.mark.parametrize(("source", "follower"), [(source, follower) for follower in ("ag-ui", "vercel")
                                                   for source in ("ag-ui", "vercel", "a2a", "openai-responses",
                                                                  "langgraph") if source != follower])
def test_a_run_started_in_any_dialect_is_followed_whole_at_its_conversations_stream_in_the_paths_dialect(
        redis: RedisServer, source: str, follower: str) -> None:
    """`GET {path}/{conversation}/stream`, checked by the follower dialect's real client."""
    with replicas(redis.url) as (_agent, one, two):
        started(one, source, f"{source}-c1")
        followed = httpx.get(f"{two}{PATHS[follower]}/{source}-c1/stream", timeout=15)
        assert followed.status_code == 200
        if follower == "vercel":
            verdict = verify_vercel({"followed": followed.content})["followed"]
            assert verdict["ok"], verdict
            assert [p["text"] for p in verdict["message"]["parts"] if p["type"] == "text"] == [TEXT]
        else:
            checked = verify_agui({"followed": followed.content})["followed"]
            assert checked["ok"], checked
            assert [m["content"] for m in checked["messages"] if m["role"] == "assistant"] == [TEXT]


def test_a_translated_follower_of_a_run_lost_with_its_replica_is_told_so_in_its_own_dialect(
        redis: RedisServer, tmp_path: Path) -> None:
    """Replica A runs an AG-UI run and dies (SIGKILL); an AI SDK follower on replica B gets the AI SDK's own error
    chunk saying the run was lost, not a bare end it would take for a dropped connection."""
    with Served(create_agent_app("ag-kit", pace=0.1)) as agent:
        path = tmp_path / "gateway.yaml"
        path.write_text(orjson.dumps(config(agent.url, redis.url).model_dump(mode="json", exclude_defaults=True))
                        .decode())
        with GatewayProcess(path) as running, GatewayProcess(path) as other:
            dropped_agui_run(running.url, "thread-lost")
            followed = b""
            with httpx.Client(timeout=30) as http, \
                    http.stream("GET", f"{other.url}{PATHS['vercel']}/thread-lost/stream") as response:
                for chunk in response.iter_raw():
                    followed += chunk
                    if followed.count(b"\n\n") >= 6 and running.process is not None:
                        os.kill(running.pid, signal.SIGKILL)
                        running.process.wait()
                        running.process = None
    last = _chunks(followed)[-1]
    assert last["type"] == "error" and "lost with the replica" in last["errorText"], last
    if node_clients_available():
        verdict = verify_vercel({"followed": followed})["followed"]
        assert verdict["ok"] and "lost with the replica" in (verdict["in_band_error"] or ""), verdict


def test_a_translation_larger_than_the_kept_reply_is_not_cut_for_it(redis: RedisServer) -> None:
    """The run's reply (about 5.4 KB kept, as a tape counts it) fits its route's limit; the same run as A2A
    writes it (about 8 KB) would not: the limit bounds what is kept, not a follower's translation of it."""
    with replicas(redis.url, limits={"max_resume_bytes": 6500}) as (_agent, one, two):
        dropped_agui_run(one, "thread-big")
        subscribe = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "thread-big"}}
        followed = httpx.post(f"{two}{PATHS['a2a']}", json=subscribe, headers={"a2a-version": "1.0"}, timeout=10)
    results = [orjson.loads(frame["data"])["result"] for frame in frames(followed.content)]
    assert len(followed.content) + TAPE_COST + PIECE_COST * len(results) > 6500  # as a tape of its own would count
    assert results[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "".join(part["text"] for result in results if "artifactUpdate" in result
                   for part in result["artifactUpdate"]["artifact"]["parts"]) == TEXT


SUBSCRIBES = {
    "json-rpc 1.0": ("POST", "", {"jsonrpc": "2.0", "id": 3, "method": "SubscribeToTask", "params": {"id": "{id}"}}),
    "json-rpc 0.3": ("POST", "", {"jsonrpc": "2.0", "id": 3, "method": "tasks/resubscribe", "params": {"id": "{id}"}}),
    "http+json": ("GET", "/tasks/{id}:subscribe", None),
}


@pytest.mark.parametrize("binding", list(SUBSCRIBES))
def test_an_a2a_subscriber_follows_an_agui_run_in_its_own_version_and_binding(redis: RedisServer,
                                                                                 binding: str) -> None:
    method, under, body = SUBSCRIBES[binding]
    conversation = f"thread-{binding.replace(' ', '-').replace('.', '')}"
    with replicas(redis.url) as (_agent, one, two):
        dropped_agui_run(one, conversation)
        followed = httpx.request(method, f"{two}{PATHS['a2a']}{under.replace('{id}', conversation)}", timeout=10,
                                 content=orjson.dumps(body).replace(b"{id}", conversation.encode()) if body else None,
                                 headers={"content-type": "application/json",
                                          "a2a-version": "0.3" if "0.3" in binding else "1.0"})
    results = [orjson.loads(frame["data"]) for frame in frames(followed.content)]
    if body is not None:
        assert {result["id"] for result in results} == {3}  # the subscriber's own JSON-RPC id
        results = [result["result"] for result in results]
    artifacts = [r.get("artifactUpdate", r)["artifact"] for r in results
                 if "artifactUpdate" in r or r.get("kind") == "artifact-update"]
    assert "".join(part["text"] for artifact in artifacts for part in artifact["parts"]) == TEXT
    last = results[-1].get("statusUpdate", results[-1])
    assert last["taskId"] == conversation and last["status"]["state"] in ("TASK_STATE_COMPLETED", "completed")


def agui_input(thread: str, run: str) -> dict[str, Any]:
    """A RunAgentInput for `thread`, naming its run `run`."""
    return {**request_body("ag-ui", [user_message("ag-ui", "slow please")], conversation=thread), "runId": run}


def test_an_agui_post_with_last_event_id_follows_its_threads_run_another_dialect_started_from_after_it(
        redis: RedisServer) -> None:
    """An AI SDK run; an AG-UI client POSTs a RunAgentInput for its thread with `Last-Event-ID: 0` (nothing had
    yet), loses its connection, and comes back to the other replica with the last id it had: one run, upstream
    and in the follower's events, numbered on without a gap, named by the follower's own run id."""
    with replicas(redis.url) as (agent, one, two):
        started(one, "vercel", "chat-p1")
        body = orjson.dumps(agui_input("chat-p1", "run-p1"))
        first = frames(read_some(f"{two}{PATHS['ag-ui']}", body, 5, {"last-event-id": "0"}))
        rest = httpx.post(f"{one}{PATHS['ag-ui']}", content=body, timeout=10,
                          headers={"content-type": "application/json", "last-event-id": first[-1]["id"]})
        assert rest.status_code == 200
        events = first + frames(rest.content)
        assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
        decoded = [orjson.loads(e["data"]) for e in events]
        assert decoded[0]["type"] == "RUN_STARTED" and decoded[-1]["type"] == "RUN_FINISHED"
        assert decoded[0]["runId"] == decoded[-1]["runId"] == "run-p1"
        assert "".join(e.get("delta", "") for e in decoded) == TEXT
        assert len(agent_calls(agent)) == 1


@pytest.mark.skipif(not node_clients_available(), reason="needs `npm ci --prefix tests/clients`")
def test_the_agui_clients_http_agent_with_last_event_id_is_sent_its_threads_run_whole_in_ag_ui(
        redis: RedisServer) -> None:
    """`@ag-ui/client`'s HttpAgent, its request given a `Last-Event-ID` header, for the thread of a Responses run."""
    with replicas(redis.url) as (agent, one, two):
        started(one, "openai-responses", "resp-p2")
        run = run_agui({"url": f"{two}{PATHS['ag-ui']}", "threadId": "resp-p2", "headers": {"last-event-id": "0"},
                        "steps": [{"messages": [{"role": "user", "content": "slow please"}], "runId": "run-p2"}]})
        [step] = run["steps"]
        assert step["error"] is None and step["terminal"], step
        assert [m["content"] for m in step["newMessages"] if m["role"] == "assistant"] == [TEXT]
        assert len(agent_calls(agent)) == 1


def test_without_last_event_id_an_agui_post_in_a_thread_another_dialect_runs_in_is_a_new_run(
        redis: RedisServer) -> None:
    with replicas(redis.url) as (agent, one, two):
        started(one, "vercel", "chat-p3")
        new = httpx.post(f"{two}{PATHS['ag-ui']}", content=orjson.dumps(agui_input("chat-p3", "run-p3")),
                         headers={"content-type": "application/json"}, timeout=10)
        assert new.status_code == 200 and b"RUN_FINISHED" in new.content
        assert len(agent_calls(agent)) == 2


def test_an_agui_post_with_last_event_id_naming_another_run_than_its_threads_agui_run_is_not_kept(
        redis: RedisServer) -> None:
    """Its thread's run is AG-UI's own, of another run id: not the run the client had events of."""
    with replicas(redis.url) as (_agent, one, two):
        dropped_agui_run(one, "thread-p4")
        late = httpx.post(f"{two}{PATHS['ag-ui']}", content=orjson.dumps(agui_input("thread-p4", "run-other")),
                          headers={"content-type": "application/json", "last-event-id": "3"}, timeout=10)
        assert late.status_code == 410


def test_an_ended_run_is_followed_by_another_dialect_from_the_position_it_names_while_it_is_kept(
        redis: RedisServer) -> None:
    """An AG-UI follower that had part of an AI SDK run comes back once it ended, with `Last-Event-ID`: the rest
    (at its conversation's stream, and by POST); a Responses client streams it whole; the AI SDK's own
    `resumeStream`, which names no position, still gets 204 once nothing runs."""
    with replicas(redis.url) as (agent, one, two):
        started(one, "vercel", "chat-e1")
        first = frames(get_some(f"{two}{PATHS['ag-ui']}/chat-e1/stream", 6))
        assert vercel_text(httpx.get(f"{two}{PATHS['vercel']}/chat-e1/stream", timeout=10).content) == TEXT  # ended
        assert httpx.get(f"{two}{PATHS['vercel']}/chat-e1/stream", timeout=10).status_code == 204
        last = {"last-event-id": first[-1]["id"]}
        rest = httpx.get(f"{one}{PATHS['ag-ui']}/chat-e1/stream", headers=last, timeout=10)
        posted = httpx.post(f"{two}{PATHS['ag-ui']}", content=orjson.dumps(agui_input("chat-e1", "run-e1")),
                            headers={"content-type": "application/json", **last}, timeout=10)
        for came in (rest, posted):
            assert came.status_code == 200
            events = first + frames(came.content)
            assert [int(e["id"]) for e in events] == list(range(1, len(events) + 1))
            assert orjson.loads(events[-1]["data"])["type"] == "RUN_FINISHED"
            assert "".join(orjson.loads(e["data"]).get("delta", "") for e in events) == TEXT
        openai = OpenAI(base_url=f"{one}/v1", api_key="unused", max_retries=0)
        streamed = list(openai.responses.retrieve("chat-e1", stream=True))
        assert streamed[-1].type == "response.completed" and streamed[-1].response.output_text == TEXT
        assert len(agent_calls(agent)) == 1


def test_an_ended_run_is_no_longer_followed_once_its_reply_is_not_kept(redis: RedisServer) -> None:
    with replicas(redis.url, timeouts={"resume_keep": 3.0}) as (_agent, one, two):
        dropped_agui_run(one, "thread-e2")
        assert vercel_text(httpx.get(f"{two}{PATHS['vercel']}/thread-e2/stream", timeout=10).content) == TEXT
        kept = httpx.get(f"{one}{PATHS['vercel']}/thread-e2/stream", headers={"last-event-id": "0"}, timeout=10)
        assert kept.status_code == 200 and vercel_text(kept.content) == TEXT
        assert wait_until(lambda: httpx.get(f"{two}{PATHS['vercel']}/thread-e2/stream", timeout=10,
                                            headers={"last-event-id": "2"}).status_code == 204, 10)
        gone = httpx.get(f"{one}/v1/responses/thread-e2", params={"stream": "true"}, timeout=10)
        assert gone.status_code == 404


def test_one_gateway_without_redis_follows_an_ended_run_in_another_dialect_too() -> None:
    with ExitStack() as stack:
        agent = stack.enter_context(Served(create_agent_app("ag-kit", pace=PACE)))
        gateway = stack.enter_context(Served(create_app(config(agent.url, "memory://")))).url
        started(gateway, "a2a", "task-e3")
        assert vercel_text(httpx.get(f"{gateway}{PATHS['vercel']}/task-e3/stream", timeout=10).content) == TEXT
        openai = OpenAI(base_url=f"{gateway}/v1", api_key="unused", max_retries=0)
        streamed = list(openai.responses.retrieve("task-e3", stream=True))
        assert streamed[-1].type == "response.completed" and streamed[-1].response.output_text == TEXT


def langgraph_text(body: bytes) -> str:
    """The text of a LangGraph stream's AI message chunks."""
    found = [orjson.loads(frame["data"]) for frame in frames(body)]
    return "".join(data[0]["content"] for data in found
                   if isinstance(data, list) and data[0].get("type") == "AIMessageChunk")


@pytest.mark.skipif(not LANGGRAPH.installed(), reason="needs the langgraph peer: python tests/peers_env.py")
@pytest.mark.parametrize("when", ["running", "ended"])
def test_langgraphs_join_with_last_event_id_gets_the_rest_of_a_run_another_dialect_started(
        redis: RedisServer, when: str) -> None:
    """The frames' ids are the follower's own, from 0 as LangGraph numbers them: `join_stream(..., last_event_id)`
    (`langgraph-sdk`) on the other replica gets the frames after it, while the run runs or once it has ended."""
    with replicas(redis.url) as (agent, one, two):
        dropped_agui_run(one, "thread-l2")
        first = get_some(f"{two}{PATHS['langgraph']}/threads/thread-l2/runs/run-l2/stream", 6)
        assert [frame["id"] for frame in frames(first)] == [str(n) for n in range(6)]
        if when == "ended":
            assert vercel_text(httpx.get(f"{two}{PATHS['vercel']}/thread-l2/stream", timeout=10).content) == TEXT
        joined = run_langgraph_client(f"{one}{PATHS['langgraph']}", "join", thread="thread-l2", run="run-l2",
                                      last_event_id=frames(first)[-1]["id"])
        assert joined.error is None, joined.error
        assert not joined.events("metadata")  # said before the position it named
        assert langgraph_text(first) + joined.text == TEXT
        assert len(agent_calls(agent)) == 1
