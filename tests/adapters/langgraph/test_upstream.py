"""A real LangGraph server (`langgraph dev`, langgraph-api 0.16.7, in its own venv) behind the gateway, in front of
clients of every other dialect: a thread per conversation, tokens, tools, interrupts and their answers, errors, a
cancel when the client leaves, and a join when the connection to the server breaks.

The server runs the scripted graph of `tests/peers/langgraph/scripted_graph.py`; the clients' requests are shaped
as their real clients send them (`tests/e2e.py`).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from e2e import Reply, post, request_body, user_message
from node_clients import run_langgraph, run_vercel_chat
from peers_env import langgraph_upstream, run_langgraph_client
from servers import Served, free_port

from adapters.langgraph.conformance import judge as langgraph_judge
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.conformance import Answer
from gateway.core.events import Interrupt, ToolCallStart
from gateway.server.app import create_app

CLIENTS = ["ag-ui", "vercel", "ag-kit", "a2a", "agent-respond", "openai-chat", "openai-responses"]
ASK_USER = {"name": "ask_user", "description": "Ask the human a question",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}


class World:
    def __init__(self, server: str, gateway: str, cut: CuttingProxy) -> None:
        self.server = server
        self.gateway = gateway
        self.cut = cut
        self.http = httpx.Client(timeout=30)

    def ask(self, client: str, text: str, conversation: str, route: str = "", **extra: Any) -> Reply:
        body = request_body(client, [user_message(client, text)], conversation, **extra)
        return Reply(client, post(self.http, f"{self.gateway}/{route or client}", body))

    def runs(self) -> list[dict[str, Any]]:
        """Every run of every thread on the server, newest first per thread."""
        found = []
        for thread in self.http.post(f"{self.server}/threads/search", json={"limit": 100}).json():
            found += self.http.get(f"{self.server}/threads/{thread['thread_id']}/runs").json()
        return found


class CuttingProxy:
    """A TCP proxy to the server that, while armed, closes the connection of a reply once it has passed `after`
    bytes of `messages` frames: a connection that breaks mid-run."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.port = free_port()
        self.armed = False
        self.cuts = 0
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> CuttingProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._serve(), self._loop).result(5)
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)

    async def _serve(self) -> None:
        self._server = await asyncio.start_server(self._pipe, "127.0.0.1", self.port)

    async def _pipe(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target)
        cut = self.armed
        self.armed = False

        async def forward(source: asyncio.StreamReader, sink: asyncio.StreamWriter, cutting: bool) -> None:
            seen = 0
            try:
                while chunk := await source.read(65536):
                    seen += chunk.count(b"event: messages")
                    sink.write(chunk)
                    await sink.drain()
                    if cutting and seen >= 3:
                        self.cuts += 1
                        sink.transport.abort()  # type: ignore[attr-defined]
                        upstream_writer.transport.abort()  # type: ignore[attr-defined]
                        return
            except (ConnectionError, OSError):
                pass
            finally:
                sink.close()

        await asyncio.gather(forward(reader, upstream_writer, False), forward(upstream_reader, writer, cut))


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with langgraph_upstream() as server:
        port = int(server.rsplit(":", 1)[1])
        with CuttingProxy(port) as cut:
            routes = [{"name": client, "paths": [f"/{client}"], "client_dialects": [client],
                       "upstream": {"url": server, "dialect": "langgraph", "agent": "agent"},
                       "timeouts": {"first_event": 20, "idle": 20, "total": 60}} for client in CLIENTS]
            routes.append({"name": "langgraph", "paths": ["/langgraph"], "client_dialects": ["langgraph"],
                           "upstream": {"url": server, "dialect": "langgraph"}})
            routes.append({"name": "deadline", "paths": ["/deadline"], "client_dialects": ["ag-ui"],
                           "upstream": {"url": server, "dialect": "langgraph"},
                           "timeouts": {"first_event": 20, "idle": 1, "total": 60}})
            routes.append({"name": "cut", "paths": ["/cut"], "client_dialects": ["ag-ui"],
                           "upstream": {"url": f"http://127.0.0.1:{cut.port}", "dialect": "langgraph"}})
            config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
            with Served(create_app(config, store=MemoryStore())) as gateway:
                world = World(server, gateway.url, cut)
                yield world
                world.http.close()


@pytest.mark.parametrize("client", CLIENTS)
def test_a_langgraph_agent_answers_every_client_in_its_own_dialect_token_by_token(world: World, client: str) -> None:
    reply = world.ask(client, "hello there", f"text-{client}")
    assert reply.response.status_code == 200
    assert "You said: hello there. (turn 1)" in reply.text
    assert reply.finished is not None
    if client != "agent-respond":  # one body: no tokens to count
        assert len([e for e in reply.events if type(e).__name__ == "TextDelta"]) > 3


@pytest.mark.parametrize("client", ["ag-ui", "ag-kit", "a2a"])
def test_a_second_turn_continues_the_same_thread_whose_id_is_the_callers_own(world: World, client: str) -> None:
    first = world.ask(client, "hello", f"multi-{client}")
    if client == "ag-ui":  # the AG-UI client sends the whole history: only what is new goes upstream
        history = [user_message(client, "hello"), {"id": "a1", "role": "assistant", "content": first.text}]
        body = request_body(client, [*history, user_message(client, "again")], f"multi-{client}")
        second = Reply(client, post(world.http, f"{world.gateway}/{client}", body))
    else:
        body = request_body(client, [user_message(client, "again")], f"multi-{client}")
        if client == "a2a":
            body["params"]["message"]["contextId"] = first.events[0].thread_id  # type: ignore[union-attr]
        second = Reply(client, post(world.http, f"{world.gateway}/{client}", body))
    assert "You said: again. (turn 2)" in second.text
    threads = [t["thread_id"] for t in world.http.post(f"{world.server}/threads/search", json={}).json()]
    assert f"multi-{client}" not in threads  # a UUID of the gateway's, scoped to the caller


@pytest.mark.parametrize("client", ["ag-ui", "vercel", "ag-kit", "a2a", "openai-responses"])
def test_the_graphs_own_tool_reaches_every_client_as_a_call_and_its_result(world: World, client: str) -> None:
    reply = world.ask(client, "what is the weather", f"weather-{client}")
    assert reply.tool_calls == ["get_weather"]
    assert reply.results == ["sunny, 21C in Paris"]
    assert "It is sunny, 21C in Paris." in reply.text


def test_an_ag_ui_client_tool_goes_to_the_graph_and_its_result_comes_back_as_a_tool_message(world: World) -> None:
    first_message = user_message("ag-ui", "use the tool please")
    reply = world.ask("ag-ui", "use the tool please", "client-tool", tools=[ASK_USER])
    call = next(e for e in reply.events if isinstance(e, ToolCallStart))
    assert call.name == "ask_user" and reply.finished is not None
    assistant = {"id": "a1", "role": "assistant", "content": "", "toolCalls": [
        {"id": call.tool_call_id, "type": "function", "function": {"name": "ask_user", "arguments": "{}"}}]}
    tool = {"id": "t1", "role": "tool", "toolCallId": call.tool_call_id, "content": "Berlin"}
    body = request_body("ag-ui", [first_message, assistant, tool], "client-tool", tools=[ASK_USER])
    second = Reply("ag-ui", post(world.http, f"{world.gateway}/ag-ui", body))
    assert "The tool said: Berlin." in second.text


@pytest.mark.parametrize("client", ["ag-ui", "ag-kit"])
def test_a_langgraph_interrupt_is_the_clients_and_its_answer_is_command_resume(world: World, client: str) -> None:
    reply = world.ask(client, "please interrupt", f"hitl-{client}")
    assert reply.finished is not None and reply.finished.outcome == "interrupt"
    interrupt = next(e for e in reply.events if isinstance(e, Interrupt))
    assert interrupt.payload == {"question": "Continue?", "options": ["yes", "no"]}
    if client == "ag-ui":
        body = request_body("ag-ui", [user_message("ag-ui", "please interrupt")], "hitl-ag-ui",
                            resume=[{"interruptId": interrupt.id, "status": "resolved", "payload": {"choice": "yes"}}])
    else:
        body = request_body("ag-kit", [], "hitl-ag-kit",
                            resume={"interruptId": interrupt.id, "payload": orjson.dumps({"choice": "yes"}).decode()})
    second = Reply(client, post(world.http, f"{world.gateway}/{client}", body))
    assert 'Resumed with {"choice": "yes"}.' in second.text


@pytest.mark.parametrize("approved", [True, False])
def test_a_usechat_approval_answers_a_human_in_the_loop_review_of_the_graphs_tool_call(world: World,
                                                                                     approved: bool) -> None:
    """`addToolApprovalResponse` on the tool call LangChain's human-in-the-loop middleware stops for: the run
    goes on, the call approved or rejected as the middleware reads a decision (`{"decisions": [...]}`)."""
    run = run_vercel_chat({"url": f"{world.gateway}/vercel", "chatId": f"review-{approved}", "maxRequests": 4,
                           "steps": [{"send": "please delete notes.txt"}, {"approve": approved, "reason": "keep it"}]})
    asked, answered = run["steps"]
    assert asked["error"] is None and answered["error"] is None, (asked["error"], answered["error"])
    call = next(p for p in asked["messages"][-1]["parts"] if p["type"] == "tool-delete_file")
    assert call["state"] == "approval-requested" and call["input"] == {"path": "notes.txt"}
    parts = answered["messages"][-1]["parts"]
    said = "".join(p["text"] for p in parts if p["type"] == "text")
    assert said == ("The tool said: deleted notes.txt." if approved else "The tool said: keep it.")
    settled = next(p for p in parts if p["type"] == "tool-delete_file")
    if approved:
        assert settled["state"] == "output-available" and settled["output"] == "deleted notes.txt"
    else:  # the middleware's tool message for a rejected call is an error's: no word for a denial
        assert settled["state"] == "output-error" and settled["errorText"] == "keep it"


@pytest.mark.parametrize("client", ["ag-ui", "vercel", "a2a", "openai-chat", "openai-responses"])
def test_a_failing_graph_is_the_clients_error(world: World, client: str) -> None:
    reply = world.ask(client, "fail now", f"fail-{client}")
    assert reply.error is not None and "scripted failure" in reply.error.message


def test_a_client_that_leaves_mid_run_cancels_the_run_on_the_server(world: World) -> None:
    body = request_body("ag-ui", [user_message("ag-ui", "hang on")], "leaver")
    with world.http.stream("POST", f"{world.gateway}/ag-ui", content=orjson.dumps(body),
                           headers={"content-type": "application/json"}) as response:
        for line in response.iter_lines():
            if "TEXT_MESSAGE_CONTENT" in line:
                break
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if any(run["status"] == "interrupted" for run in world.runs()):  # how LangGraph says cancelled
            return
        time.sleep(0.2)
    raise AssertionError(f"no run was cancelled: {[run['status'] for run in world.runs()]}")


def test_a_run_the_gateway_ends_at_a_deadline_is_cancelled_on_the_server(world: World) -> None:
    """The gateway gives up on a silent run (`timeouts.idle`): the server is told to stop it, as when the client
    leaves, rather than left running a graph nobody reads."""
    before = {run["run_id"] for run in world.runs()}
    reply = world.ask("ag-ui", "hang please", "deadline", route="deadline")
    assert reply.error is not None and reply.error.code == "upstream_timeout", reply.events[-1]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if [run for run in world.runs() if run["run_id"] not in before and run["status"] == "interrupted"]:
            return
        time.sleep(0.2)
    statuses = [run["status"] for run in world.runs() if run["run_id"] not in before]
    raise AssertionError(f"the run was not cancelled: {statuses}")


def test_a_connection_that_breaks_mid_run_is_joined_again_from_the_last_event(world: World) -> None:
    world.cut.armed = True
    reply = world.ask("ag-ui", "slow please", "joined", route="cut")
    assert world.cut.cuts == 1
    assert reply.finished is not None, reply.events[-1]
    assert reply.text == " ".join(f"w{i}" for i in range(20))  # every word once: the join took the rest


def test_a_langgraph_client_reaches_a_langgraph_server_through_the_gateway(world: World) -> None:
    """`@langchain/langgraph-sdk`'s `Client` on both ends of LangGraph: the thread is the gateway's, its
    upstream thread a UUID of the caller's; tools, interrupts and state cross as LangGraph wrote them."""
    steps = run_langgraph(f"{world.gateway}/langgraph", [
        {"op": "thread"}, {"op": "stream", "text": "what is the weather"},
        {"op": "stream", "text": "please interrupt"}, {"op": "stream", "resume": {"approved": True}},
        {"op": "state"},
    ])
    assert [s.get("error") for s in steps] == [None] * 5, steps
    chunks = [p["data"][0] for p in steps[1]["parts"] if p["event"] == "messages"]
    assert [c["name"] for chunk in chunks for c in chunk.get("tool_call_chunks") or () if c.get("name")] == \
        ["get_weather"]
    assert [c["content"] for c in chunks if c["type"] == "tool"] == ["sunny, 21C in Paris"]
    waiting = [p["data"]["__interrupt__"] for p in steps[2]["parts"] if p["event"] == "updates"
               and "__interrupt__" in p["data"]]
    assert waiting[0][0]["value"] == {"question": "Continue?", "options": ["yes", "no"]}  # as the graph wrote it
    resumed = "".join(p["data"][0]["content"] for p in steps[3]["parts"] if p["event"] == "messages"
                      and p["data"][0]["type"] == "AIMessageChunk")
    assert resumed == 'Resumed with {"approved": true}.'
    said = [m["type"] for m in steps[4]["result"]["values"]["messages"]]
    assert said[:4] == ["human", "ai", "tool", "ai"] and said[-1] == "ai"


@pytest.mark.parametrize("named_by", ["assistant_id", "graph_id"])
def test_a_langgraph_client_running_the_assistant_the_gateway_lists_runs_the_servers_graph(world: World,
                                                                                          named_by: str) -> None:
    """`langgraph-sdk` naming the assistant `assistants.search()` gave it: the route's, which runs the server's
    default graph (the route names none), not an assistant the server never had ("Thread or assistant not
    found")."""
    url = f"{world.gateway}/langgraph"
    listed = run_langgraph_client(url, "assistants").parts[0][0][named_by]
    thread = run_langgraph_client(url, "create-thread").parts[0]["thread_id"]
    first = run_langgraph_client(url, "stream", thread=thread, text="hello there", assistant=listed)
    second = run_langgraph_client(url, "stream", thread=thread, text="again", assistant=listed)
    assert (first.error, second.error) == (None, None)
    assert "You said: hello there. (turn 1)" in first.text and "You said: again. (turn 2)" in second.text


@pytest.mark.parametrize("text", ["hello", "what is the weather", "please interrupt", "fail now", "custom state"])
def test_what_a_real_langgraph_server_streams_passes_the_judge(world: World, text: str) -> None:
    thread = world.http.post(f"{world.server}/threads", json={}).json()["thread_id"]
    body = {"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": text}]},
            "stream_mode": ["values", "updates", "messages-tuple", "custom", "debug", "tasks", "checkpoints"]}
    response = world.http.post(f"{world.server}/threads/{thread}/runs/stream", json=body)
    found = langgraph_judge(Answer(response.status_code, dict(response.headers), response.content))
    assert [v for v in found if not v.convention] == []
