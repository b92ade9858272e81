"""LangGraph's own clients pointed at the gateway: `langgraph-sdk` 0.4.14 (Python, in the langgraph peer's venv)
in front of the built-in agent speaking AG-UI. Assistants from the route, threads as conversations (their state
from the store), runs streamed in the modes asked, interrupts answered with `command.resume`, cancel, and a join
that takes the rest of a run after a dropped connection."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from gated_upstream import FIRST, REST, GatedAgent
from inkeep_upstream import create_inkeep_app
from node_clients import run_langgraph
from peers_env import LangGraphClientRun, follow_langgraph_client, run_langgraph_client
from servers import Served

from adapters import registry
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app


class World:
    def __init__(self, gateway: str, gated: GatedAgent) -> None:
        self.gateway = gateway
        self.url = f"{gateway}/lg"
        self.gated = gated
        """The upstream of the route `gated`, whose runs last until a test opens its gate."""

    def run(self, operation: str, **options: Any) -> LangGraphClientRun:
        found = run_langgraph_client(self.url, operation, **options)
        assert found.error is None, found.error
        return found

    def thread(self) -> str:
        return str(self.run("create-thread").parts[0]["thread_id"])


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    gated = GatedAgent()
    with Served(create_agent_app("ag-ui", pace=0.02)) as agent, Served(create_agent_app("ag-ui", pace=0.2)) as slow, \
            Served(gated.app) as held:
        routes = [{"name": name, "paths": [path], "client_dialects": ["langgraph"], "resumable": resumable,
                   "upstream": {"url": f"{url}/agui", "dialect": "ag-ui"}}
                  for name, path, resumable, url in (("assistant-one", "/lg", False, agent.url),
                                                     ("kept", "/kept", True, slow.url),
                                                     ("slow", "/slow", False, slow.url),
                                                     ("gated", "/gated", False, held.url))]
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield World(gateway.url, gated)


def test_the_assistants_are_the_routes(world: World) -> None:
    assistants = world.run("assistants").parts[0]
    assert [a["graph_id"] for a in assistants] == ["assistant-one"]


def test_a_thread_is_a_conversation_its_runs_stream_tokens_and_its_state_is_the_stores(world: World) -> None:
    thread = world.thread()
    first = world.run("stream", thread=thread, text="hello there")
    assert next(p["event"] for p in first.parts) == "metadata"
    assert "You said: hello there. (turn 1)" in first.text
    assert len(first.events("messages")) > 3  # token by token
    second = world.run("stream", thread=thread, text="again")
    assert "(turn 2)" in second.text
    state = world.run("state", thread=thread).parts[0]
    said = [(m["type"], m["content"]) for m in state["values"]["messages"]]
    assert said[0] == ("human", "hello there") and said[2] == ("human", "again")
    assert said[1][0] == said[3][0] == "ai" and "(turn 2)" in said[3][1]


def test_values_carry_the_run_and_updates_its_messages(world: World) -> None:
    run = world.run("stream", thread=world.thread(), text="state please", mode=["values", "updates"])
    values = run.events("values")
    assert values[-1]["count"] == 1  # the agent's state: a snapshot, then a patch
    assert values[-1]["messages"][-1]["type"] == "ai"
    assert any("agent" in update for update in run.events("updates"))
    assert not run.events("messages")  # not asked for


def test_the_agents_own_tool_streams_its_call_and_its_tool_message(world: World) -> None:
    run = world.run("stream", thread=world.thread(), text="what is the weather in Paris")
    chunks = [m[0] for m in run.events("messages")]
    calls = [c for chunk in chunks for c in chunk.get("tool_call_chunks") or () if c.get("name")]
    assert [c["name"] for c in calls] == ["get_weather"]
    tools = [chunk for chunk in chunks if chunk["type"] == "tool"]
    assert tools[0]["tool_call_id"] == calls[0]["id"] and tools[0]["content"] == "sunny, 21C in Paris"


def test_an_interrupt_is_a_langgraph_interrupt_and_command_resume_answers_it(world: World) -> None:
    thread = world.thread()
    run = world.run("stream", thread=thread, text="please interrupt")
    waiting = next(u["__interrupt__"] for u in run.events("updates") if "__interrupt__" in u)
    assert waiting[0]["value"]["payload"] == {"options": ["yes", "no"]}
    assert world.run("state", thread=thread).parts[0]["next"] == ["agent"]
    resumed = world.run("stream", thread=thread, resume=orjson.dumps({"choice": "yes"}).decode())
    assert f'Resumed {waiting[0]["id"]}: {{"choice":"yes"}}.' in resumed.text


def test_a_failing_run_is_an_error_part(world: World) -> None:
    run = world.run("stream", thread=world.thread(), text="fail now")
    assert run.events("error")[-1]["message"] == "scripted failure"


def test_a_cancelled_run_ends_cancelled_and_the_thread_takes_the_next(world: World) -> None:
    thread = world.thread()
    run = world.run("stream", thread=thread, text="slow please", cancel_after=3, mode=["messages-tuple"])
    assert run.events("cancelled") and run.events("error")[-1]["error"] == "CancelledError"
    assert "tick 20." not in run.text
    assert "You said: next" in world.run("stream", thread=thread, text="next").text


def test_a_client_that_lost_its_connection_joins_the_run_from_its_last_event(world: World) -> None:
    thread = world.thread()
    seen: list[bytes] = []
    last = None
    body = {"assistant_id": "kept", "input": {"messages": [{"type": "human", "content": "slow please"}]},
            "stream_mode": ["messages-tuple"]}
    with httpx.Client(timeout=30) as http, http.stream(
            "POST", f"{world.gateway}/kept/threads/{thread}/runs/stream", json=body) as response:
        run_id = response.headers["content-location"].rsplit("/", 1)[1]
        for line in response.iter_lines():
            seen.append(line.encode())
            last = line[4:] if line.startswith("id: ") else last
            if last == "4" and line.startswith("data: "):
                break  # the connection drops here; the run goes on (a resumable route)
    joined = run_langgraph_client(f"{world.gateway}/kept", "join", thread=thread, run=run_id, last_event_id="4")
    assert joined.error is None, joined.error
    before = "".join(orjson.loads(line[6:])[0]["content"] for line in seen
                     if line.startswith(b"data: ") and b"AIMessageChunk" in line)
    assert before + joined.text == "".join(f"tick {i}. " for i in range(1, 21))  # all of it, nothing twice


def test_the_run_a_stream_names_in_content_location_is_found_there(world: World) -> None:
    """The run's `Content-Location` is under the route's path, where the gateway serves the run."""
    thread = world.thread()
    body = {"assistant_id": "agent", "input": {"messages": [{"type": "human", "content": "hello"}]}}
    with httpx.Client(timeout=30) as http:
        location = http.post(f"{world.url}/threads/{thread}/runs/stream", json=body).headers["content-location"]
        assert location.startswith(f"/lg/threads/{thread}/runs/")
        found = http.get(world.gateway + location)
    assert found.status_code == 200 and found.json()["run_id"] == location.rsplit("/", 1)[1]


def test_a_background_run_answers_its_run_at_once_and_is_joined_by_its_id(world: World) -> None:
    """`runs.create`, then `runs.join_stream` and `runs.join`: the `Run` comes while the run goes on (its upstream
    holds it until the test lets it end), the join streams it from its start, and `join` answers the thread's values
    once it has ended."""
    url, gated = f"{world.gateway}/gated", world.gated
    gated.gate.clear()
    thread = str(run_langgraph_client(url, "create-thread").parts[0]["thread_id"])
    created = run_langgraph_client(url, "create", thread=thread, text="hello there", mode=["messages-tuple"])
    assert created.error is None, created.error
    run = created.parts[0]
    assert run["thread_id"] == thread and run["status"] == "running"
    deadline = time.monotonic() + 10
    while gated.waiting == 0 and time.monotonic() < deadline:  # the run goes on upstream, held at the gate: it
        time.sleep(0.02)                                       # cannot have ended before the answer came
    assert gated.waiting == 1
    with follow_langgraph_client(url, "join", thread=thread, run=run["run_id"]) as joining:
        assert joining.first(), joining.done()  # the join is attached, and has what the run said before it came
        gated.gate.set()
        error = joining.done()
    assert error is None, error
    assert LangGraphClientRun(parts=joining.answers).text == FIRST + REST  # all of it, from the run's start
    values = run_langgraph_client(url, "join-values", thread=thread, run=run["run_id"])
    assert values.error is None, values.error
    assert [(m["type"], m["content"]) for m in values.parts[0]["messages"]] == \
        [("human", "hello there"), ("ai", FIRST + REST)]


def test_a_waited_run_answers_the_threads_values_at_its_end(world: World) -> None:
    """`runs.wait`: one body, the thread's values as the run left them; a failed run's error in `__error__`, which
    the SDK raises."""
    thread = world.thread()
    world.run("stream", thread=thread, text="hello there")
    waited = world.run("wait", thread=thread, text="again").parts[0]
    assert [m["type"] for m in waited["messages"]] == ["human", "ai", "human", "ai"]
    assert waited["messages"][-1]["content"] == "You said: again. (turn 2)"
    failed = run_langgraph_client(world.url, "wait", thread=thread, text="fail now")
    assert failed.error is not None and failed.error.endswith("scripted failure")


def test_the_js_client_holds_a_conversation_as_use_stream_does(world: World) -> None:
    """`@langchain/langgraph-sdk` 1.15.0's `Client`, making the calls `useStream` makes."""
    steps = run_langgraph(world.url, [
        {"op": "assistants"}, {"op": "thread"},
        {"op": "stream", "text": "hello there"}, {"op": "stream", "text": "please interrupt"},
        {"op": "stream", "resume": {"choice": "yes"}}, {"op": "state"}, {"op": "history"},
        {"op": "stream", "text": "slow please", "cancelAfter": 4, "modes": ["messages-tuple"]},
    ])
    assert [s.get("error") for s in steps] == [None] * 8, steps
    said = [_text(s["parts"]) for s in steps if s["op"] == "stream"]
    assert "You said: hello there. (turn 1)" in said[0] and said[2].startswith("Resumed ")
    waiting = [p["data"]["__interrupt__"] for p in steps[3]["parts"] if p["event"] == "updates"
               and "__interrupt__" in p["data"]]
    assert waiting and waiting[0][0]["value"]["payload"] == {"options": ["yes", "no"]}
    final = steps[4]["parts"][-1]  # useStream shows the thread from `values`: every message of it, not the run's
    assert final["event"] == "values"
    assert [m["type"] for m in final["data"]["messages"]] == ["human", "ai", "human", "ai"]
    assert [m["type"] for m in steps[5]["result"]["values"]["messages"]] == ["human", "ai", "human", "ai"]
    assert steps[6]["result"][0]["values"] == steps[5]["result"]["values"]
    cancelled = steps[7]["parts"]
    assert cancelled[-1]["event"] == "error" and cancelled[-1]["data"]["error"] == "CancelledError"


def _text(parts: list[dict[str, Any]]) -> str:
    return "".join(p["data"][0]["content"] for p in parts if p["event"] == "messages"
                   and p["data"][0]["type"] == "AIMessageChunk" and isinstance(p["data"][0]["content"], str))


def test_a_join_of_a_run_that_stops_for_an_interrupt_ends_with_it(world: World) -> None:
    thread = world.thread()
    body = {"assistant_id": "kept", "input": {"messages": [{"type": "human", "content": "please interrupt"}]},
            "stream_mode": ["updates"]}
    with httpx.Client(timeout=30) as http:
        with http.stream("POST", f"{world.gateway}/kept/threads/{thread}/runs/stream", json=body) as response:
            run_id = response.headers["content-location"].rsplit("/", 1)[1]
        started = time.monotonic()
        joined = http.get(f"{world.gateway}/kept/threads/{thread}/runs/{run_id}/stream",
                          headers={"last-event-id": "0"})
    assert b"__interrupt__" in joined.content
    assert time.monotonic() - started < 5  # not held open for a request that would continue it: none will


# -- the same clients in front of every other upstream dialect (the built-in agent speaking each)

UPSTREAMS = ["ag-ui", "ag-kit", "vercel", "agent-respond", "a2a", "openai-chat", "openai-responses"]
ASK_USER = {"name": "ask_user", "description": "Ask the human a question",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}
NO_CLIENT_TOOLS = {"vercel": "a Vercel request carries no tool list",
                   "agent-respond": "the eval platform's contract has no client tools",
                   "a2a": "A2A carries no tool definitions"}
NO_INTERRUPTS = {"agent-respond": "the eval platform has no human in the loop",
                 "openai-chat": "Chat Completions has no interrupt to answer: the agent's is a closing note"}
NO_SERVER_TOOLS = {"openai-chat": "a completion shows only the calls for its client, not the tools the agent ran"}
INTERRUPTING = {"vercel": "please approve"}
"""A Vercel agent stops for a human on a tool call of its stream (an approval): an interrupt about nothing it
called is answered on a call the gateway never recorded (not built; A2A clients neither:
tests/adapters/a2a/test_peers_through_gateway.py)."""


@pytest.fixture(scope="module", params=UPSTREAMS)
def fronted(request: pytest.FixtureRequest) -> Iterator[tuple[str, str]]:
    """The gateway serving LangGraph in front of the built-in agent speaking another dialect: (its URL, dialect)."""
    dialect = request.param
    with Served(create_agent_app(dialect, pace=0.02)) as agent:
        url = agent.url if dialect == "a2a" else agent.url + registry.get(dialect).paths[0]  # A2A: found by its card
        config = GatewayConfig.model_validate({"routes": [{
            "name": "agent", "paths": ["/lg"], "client_dialects": ["langgraph"],
            "upstream": {"url": url, "dialect": dialect}}], "keepalive_seconds": 0.5})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield f"{gateway.url}/lg", dialect


def test_langgraph_sdk_holds_a_thread_with_an_agent_of_any_dialect(fronted: tuple[str, str]) -> None:
    url, dialect = fronted
    thread = str(run_langgraph_client(url, "create-thread").parts[0]["thread_id"])
    first = run_langgraph_client(url, "stream", thread=thread, text="hello there")
    second = run_langgraph_client(url, "stream", thread=thread, text="again")
    assert first.error is None and second.error is None, (first.error, second.error)
    assert "You said: hello there. (turn 1)" in first.text and "You said: again. (turn 2)" in second.text
    if dialect != "agent-respond":  # one JSON body upstream: the client gets it as one chunk
        assert len(first.events("messages")) > 3
    state = run_langgraph_client(url, "state", thread=thread)
    assert state.error is None, state.error
    said = [m["type"] for m in state.parts[0]["values"]["messages"]]
    assert said == ["human", "ai", "human", "ai"]


def test_the_js_client_runs_every_scenario_with_an_agent_of_any_dialect(fronted: tuple[str, str]) -> None:
    """`@langchain/langgraph-sdk`'s `Client` on one thread: the agent's own tool, a client tool and its result, an
    interrupt and `command.resume`, a failing run and a cancelled one; each where the dialect behind carries it."""
    url, dialect = fronted
    plan: list[dict[str, Any]] = [{"op": "thread"}, {"op": "stream", "text": "what is the weather in Paris"},
                                  {"op": "stream", "text": "fail now"}]
    if dialect not in NO_CLIENT_TOOLS:
        plan += [{"op": "stream", "text": "use the tool please", "tools": [ASK_USER]},
                 {"op": "stream", "toolResult": "Berlin"}]
    if dialect not in NO_INTERRUPTS:
        plan += [{"op": "stream", "text": INTERRUPTING.get(dialect, "please interrupt")},
                 {"op": "stream", "resume": {"approved": True}}]  # what an approval says (Vercel: no more)
    if dialect != "agent-respond":  # the whole answer in one body: nothing to leave in the middle of
        plan.append({"op": "stream", "text": "slow please", "cancelAfter": 4, "modes": ["messages-tuple"]})
    steps = run_langgraph(url, plan)
    assert [s.get("error") for s in steps] == [None] * len(plan), steps
    weather, failed, *rest = [s["parts"] for s in steps[1:]]
    chunks = [p["data"][0] for p in weather if p["event"] == "messages"]
    ran = [] if dialect in NO_SERVER_TOOLS else [("get_weather", "sunny, 21C in Paris")]
    assert [c["name"] for chunk in chunks for c in chunk.get("tool_call_chunks") or () if c.get("name")] == \
        [name for name, _ in ran]
    assert [c["content"] for c in chunks if c["type"] == "tool"] == [result for _, result in ran]
    assert "It is sunny, 21C in Paris." in _text(weather)
    assert failed[-1]["event"] == "error" and failed[-1]["data"]["message"] == "scripted failure"
    if dialect not in NO_CLIENT_TOOLS:
        asked, answered, *rest = rest
        calls = [c for p in asked if p["event"] == "messages" for c in p["data"][0].get("tool_call_chunks") or ()]
        assert [c["name"] for c in calls if c.get("name")] == ["ask_user"]
        assert "The tool said: Berlin." in _text(answered)
    if dialect not in NO_INTERRUPTS:
        waiting, resumed, *rest = rest
        (interrupt,) = [i for p in waiting if p["event"] == "updates" for i in p["data"].get("__interrupt__", ())]
        # The answer as the agent's dialect carries it: the payload (AG-UI, AG-Kit), an approval (Vercel), a reply
        # (A2A: "yes"); to the interrupt that waited, in each.
        assert _text(resumed).startswith(f"Resumed {interrupt['id']}: ")
    if dialect != "agent-respond":
        (cancelled,) = rest
        assert cancelled[-1]["event"] == "error" and cancelled[-1]["data"]["error"] == "CancelledError"
        assert "tick 20." not in _text(cancelled)


def test_a_background_run_of_an_agent_of_any_dialect_is_joined_for_its_values(fronted: tuple[str, str]) -> None:
    url, _ = fronted
    thread = str(run_langgraph_client(url, "create-thread").parts[0]["thread_id"])
    created = run_langgraph_client(url, "create", thread=thread, text="hello there")
    assert created.error is None, created.error
    values = run_langgraph_client(url, "join-values", thread=thread, run=created.parts[0]["run_id"])
    assert values.error is None, values.error
    assert "You said: hello there. (turn 1)" in values.parts[0]["messages"][-1]["content"]


@pytest.fixture(scope="module")
def before_inkeep() -> Iterator[str]:
    """The gateway serving LangGraph in front of the Inkeep look-alike (one text id for every text segment)."""
    with Served(create_inkeep_app()) as inkeep:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "inkeep", "paths": ["/lg"], "client_dialects": ["langgraph"],
            "upstream": {"url": f"{inkeep.url}/run/api/chat", "dialect": "vercel"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield f"{gateway.url}/lg"


def test_an_agent_that_reuses_one_text_id_keeps_every_segment_in_the_threads_values(before_inkeep: str) -> None:
    """Inkeep writes every text segment of a reply under one id: each is a message of its own, so the thread's
    last `values` hold them all, and the answer after a server tool is not the message that called it."""
    steps = run_langgraph(before_inkeep, [{"op": "thread"}, {"op": "stream", "text": "steps please"},
                                          {"op": "stream", "text": "research please"}])
    assert [s.get("error") for s in steps] == [None] * 3, steps
    said = [m for m in steps[1]["parts"][-1]["data"]["messages"] if m["type"] == "ai"]
    assert [m["content"] for m in said] == [f"chunk {i}." for i in range(20)]
    assert len({m["id"] for m in said}) == 20
    thread = steps[2]["parts"][-1]["data"]["messages"]
    run = thread[thread.index(next(m for m in thread if m["content"] == "research please")):]
    assert [(m["type"], m["content"]) for m in run] == [
        ("human", "research please"), ("ai", "Planning."), ("ai", "Let me check."),
        ("tool", "sunny, 21C in Paris"), ("ai", "It is sunny, 21C in Paris.")]
    assert [c["name"] for c in run[2]["tool_calls"]] == ["get_weather"]
    assert len({m["id"] for m in run[1:]}) == 4
    chunks = [p["data"][0] for p in steps[2]["parts"] if p["event"] == "messages" and p["data"][0]["type"] != "tool"]
    calling = {c["id"] for c in chunks if c.get("tool_call_chunks")}
    answering = {c["id"] for c in chunks if c["content"] and "sunny" in c["content"]}
    assert calling and answering and not calling & answering
