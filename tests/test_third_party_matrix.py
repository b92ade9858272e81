"""The translation matrix, proven against software nobody here wrote.

Every client dialect in front of every upstream (70 cells, the same-dialect ones included), each with every
scenario both sides can express. Clients are the real ones where they can run here (`@ag-ui/client`'s HttpAgent and
the `ai` package's Chat, in Node; both official MCP clients, `mcp`'s own Python `Client` in its venv and
`@modelcontextprotocol/sdk`'s TypeScript `Client` in Node, each calling each route as a tool at `/mcp`),
or requests shaped exactly as the real ones send them and replies read by their rules (the eval platform, checked
against its `AgentResponse` contract; `@cloudbase/agent-ui-web`, checked against the AG-Kit server's own event
models; `langgraph-sdk`, held to its judge, the SDKs themselves being proven in
tests/adapters/langgraph/test_clients.py). Upstreams are real where they install: pydantic-ai's AG-UI adapter and
its Vercel adapter at AI SDK 6 and 5, cloudbase-agent-server 0.1.1 (AG-Kit) and 0.1.22 (AG-UI before 1.0),
a2a-sdk's server, `langgraph dev` and `mcp`'s MCPServer (`tests/peers/mcp_server.py`), each in its own venv;
Inkeep's Run API is imitated from its document (`tests/inkeep_upstream.py`); agent-respond has only our built-in
agent. Each route is configured with nothing but the upstream's URL and dialect.

A scenario one side cannot express is lossy by design; the reason is recorded and shown in docs/matrix.md,
which must be the one this run produced (`MATRIX_UPDATE=1` rewrites it).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
import pytest
from e2e import no_gateway_side_violation
from helpers import ROOT, sse_payloads
from inkeep_upstream import create_inkeep_app
from mcp_sdks import SDKS, run_sdk
from node_clients import run_agui, run_vercel_chat, verify_vercel
from peers_env import (
    a2a_upstream,
    agkit_agui_upstream,
    agkit_upstream,
    langgraph_upstream,
    mcp_upstream,
    pydantic_upstream,
)
from servers import Served

from adapters.a2a.conformance import judge as a2a_judge
from adapters.agent_respond.contract import AgentResponse
from adapters.langgraph.conformance import judge as langgraph_judge
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.codec import as_text
from gateway.core.conformance import Answer
from gateway.core.ids import new_id
from gateway.core.sse import SSEEventDecoder
from gateway.server.app import Gateway, create_app

with warnings.catch_warnings():  # the 0.1.1 server still uses pydantic's class-based config
    warnings.simplefilter("ignore", DeprecationWarning)
    from cloudbase_agent.server.send_message.models import SendMessageEvent
    from pydantic import TypeAdapter

AGKIT_EVENT: TypeAdapter[Any] = TypeAdapter(SendMessageEvent)
DIALECTS = ["ag-ui", "ag-kit", "vercel", "agent-respond", "a2a", "langgraph", "mcp"]
"""The dialects whose real clients (or their exact request shapes) drive this matrix: `run_scenario` has a driver
for each. A dialect without one is proven end to end by tests/test_end_to_end_pairs.py, which asks the registry."""
SCENARIOS = ["text", "reasoning", "server tool", "client tool", "interrupt", "failure", "multi-turn"]
ASK_USER = {"name": "ask_user", "description": "Ask the human a question",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}},
                           "required": ["question"]}}


@dataclass(frozen=True)
class Peer:
    """A real upstream: its dialect, what it is asked and what it answers per scenario."""

    dialect: str
    name: str
    prompt: dict[str, str]
    says: dict[str, str]
    lossy: dict[str, str] = field(default_factory=dict)


PYDANTIC_SAYS = {
    "text": "You said: hello", "reasoning": "I have thought about it.",
    "server tool": "Tool get_weather said: sunny, 21C in Paris.", "client tool": "Tool ask_user said: yes.",
    "interrupt": "Tool delete_file said: deleted /tmp/demo.", "failure": "scripted upstream failure",
    "multi-turn": "This is user turn 2.",
}
PYDANTIC_PROMPTS = {"text": "hello", "reasoning": "please think", "server tool": "what is the weather",
                    "client tool": "use the frontend tool", "interrupt": "please approve", "failure": "please fail",
                    "multi-turn": "hello"}
VERCEL_NO_TOOLS = ("a Vercel request carries no tool list (AI SDK client tools are declared on the server), so a "
                   "client's tools never reach a Vercel upstream")
PEERS = {
    "ag-ui": Peer("ag-ui", "pydantic-ai AGUIAdapter", PYDANTIC_PROMPTS, PYDANTIC_SAYS),
    "ag-ui 0.x": Peer(
        "ag-ui", "cloudbase-agent-server 0.1.22",
        {"text": "hello", "reasoning": "please think", "server tool": "what is the weather",
         "client tool": "use the tool", "interrupt": "please interrupt", "failure": "please fail",
         "multi-turn": "hello"},
        {"text": "You said: hello", "reasoning": "I have thought about it.",
         "server tool": "It is sunny, 21C in Paris.", "client tool": "Tool ask_user said: yes.",
         "interrupt": "Resumed with", "failure": "scripted upstream failure", "multi-turn": "This is user turn 2."}),
    "ag-kit": Peer(
        "ag-kit", "cloudbase-agent-server 0.1.1",
        {"text": "hello", "server tool": "what is the weather", "client tool": "use the tool",
         "interrupt": "please interrupt", "failure": "please fail", "multi-turn": "hello"},
        {"text": "echo: hello", "server tool": "sunny, 21C in Paris", "client tool": "Tool ask_user said: yes.",
         "interrupt": "Resumed ", "failure": "upstream", "multi-turn": "history=3"},
        {"reasoning": "AG-Kit has no reasoning event"}),
    "vercel": Peer("vercel", "pydantic-ai VercelAIAdapter, sdk 6", PYDANTIC_PROMPTS, PYDANTIC_SAYS,
                   {"client tool": VERCEL_NO_TOOLS}),
    "vercel 5": Peer("vercel", "pydantic-ai VercelAIAdapter, sdk 5", PYDANTIC_PROMPTS, PYDANTIC_SAYS, {
        "client tool": VERCEL_NO_TOOLS,
        "interrupt": "AI SDK 5 has no tool approvals: pydantic-ai leaves the call for the client to run"}),
    "vercel inkeep": Peer(
        "vercel", "Inkeep Run API, from its document",
        {"text": "hello", "server tool": "what is the weather", "failure": "please fail", "multi-turn": "hello"},
        {"text": "You said: hello", "server tool": "It is sunny, 21C in Paris.",
         "failure": "scripted upstream failure", "multi-turn": "This is user turn 2."},
        {"reasoning": "Inkeep streams no reasoning", "client tool": "Inkeep takes no tool list from a request",
         "interrupt": "Inkeep asks for approval inside a stream it keeps open and takes the answer on a second "
                      "request; the gateway ends a run at its interrupt (not built)"}),
    "agent-respond": Peer(
        "agent-respond", "built-in agent",
        {"text": "hello", "server tool": "what is the weather", "failure": "please fail", "multi-turn": "hello"},
        {"text": "You said: hello", "server tool": "It is sunny, 21C in Paris.", "failure": "scripted failure",
         "multi-turn": "(turn 2)"},
        {"reasoning": "the agent-respond contract has no reasoning",
         "client tool": "the agent-respond contract has no client tools: the platform runs none",
         "interrupt": "the agent-respond contract has no human in the loop"}),
    "a2a": Peer(
        "a2a", "a2a-sdk 1.3.0 server",
        {"text": "hello", "server tool": "what is the weather", "interrupt": "please interrupt",
         "failure": "this will fail", "multi-turn": "hello"},
        {"text": "echo: hello", "server tool": "Tool get_weather said: sunny, 21C in Paris.",
         "interrupt": "Resumed with yes", "failure": "scripted upstream failure", "multi-turn": "history=2"},
        {"reasoning": "A2A has no reasoning",
         "client tool": "A2A carries no tool definitions: an A2A agent calls only its own tools"}),
    "langgraph": Peer(
        "langgraph", "langgraph dev, langgraph-api 0.16.7",
        {"text": "hello", "reasoning": "please think", "server tool": "what is the weather",
         "client tool": "use the tool", "interrupt": "please interrupt", "failure": "please fail",
         "multi-turn": "hello"},
        {"text": "You said: hello", "reasoning": "I have thought about it.",
         "server tool": "It is sunny, 21C in Paris.", "client tool": "The tool said: yes.",
         "interrupt": "Resumed with", "failure": "scripted failure", "multi-turn": "(turn 2)"}),
    "mcp": Peer(
        "mcp", "mcp 2.3.0 MCPServer, its agent tool",
        {"text": "hello", "interrupt": "please approve", "failure": "please fail", "multi-turn": "hello"},
        {"text": "you said hello", "interrupt": "please approve: deleted /tmp/demo",
         "failure": "scripted upstream failure", "multi-turn": "turn 2: you said again (before: hello)"},
        {"reasoning": "an MCP tool's result has no reasoning",
         "server tool": "an MCP tool's result is what it says: the tools it runs itself are not in it",
         "client tool": "an MCP server is called as one tool and given none of the client's to call"}),
}
UPSTREAMS = list(PEERS)
CLIENT_LOSSY = {
    "ag-kit": {"reasoning": "AG-Kit has no reasoning event"},
    "vercel": {"client tool": "useChat sends no tool list, so an upstream that calls only offered tools calls none"},
    "agent-respond": {
        "reasoning": "the agent-respond contract has no reasoning",
        "client tool": "the eval platform offers no tools and runs none",
        "interrupt": "the eval platform has no human in the loop: an interrupt ends the turn with an assistant note",
    },
    "a2a": {"reasoning": "A2A has no reasoning",
            "client tool": "an A2A client offers no tools: the agent it calls runs its own"},
    "mcp": {"reasoning": "an MCP tool's result has no reasoning (a session that sets a log level gets it as log "
                         "lines: tests/adapters/mcp/test_clients.py)",
            "client tool": "an MCP client calls the agent as one tool and runs none of the agent's tools"},
}


def lossy_reason(client: str, upstream: str, scenario: str) -> str | None:
    return CLIENT_LOSSY.get(client, {}).get(scenario) or PEERS[upstream].lossy.get(scenario)


@dataclass
class Seen:
    """What a client ended up with after one request, whatever its dialect."""

    text: str = ""
    reasoning: str = ""
    tool_calls: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    interrupts: list[str] = field(default_factory=list)
    error: str | None = None


# -- the world: real peers, and one gateway route per (client, upstream) pair


@dataclass
class World:
    gateway: str
    http: httpx.Client
    inkeep: str
    app: Gateway

    def url(self, client: str, upstream: str) -> str:
        return f"{self.gateway}/{client}/to/{upstream.replace(' ', '-')}"


def route_name(client: str, upstream: str) -> str:
    """The route's name, which is also the tool an MCP client calls it by (MCP's names have no spaces)."""
    return f"{client}-{upstream}".replace(" ", "-")


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    with pydantic_upstream() as pydantic, agkit_upstream() as agkit, agkit_agui_upstream() as agkit_agui, \
            Served(create_inkeep_app()) as inkeep, Served(create_agent_app("agent-respond")) as builtin, \
            a2a_upstream() as a2a, langgraph_upstream() as langgraph, mcp_upstream() as mcp:
        urls = {"langgraph": langgraph,"ag-ui": f"{pydantic}/ag-ui", "ag-ui 0.x": f"{agkit_agui}/send-message",
                "ag-kit": f"{agkit}/send-message", "vercel": f"{pydantic}/vercel", "vercel 5": f"{pydantic}/vercel5",
                "vercel inkeep": f"{inkeep.url}/run/api/chat", "agent-respond": f"{builtin.url}/agent/respond",
                "a2a": a2a, "mcp": f"{mcp}/mcp"}
        routes = [{"name": route_name(c, u), "paths": [f"/{c}/to/{u.replace(' ', '-')}"], "client_dialects": [c],
                   "upstream": {"url": urls[u], "dialect": PEERS[u].dialect},
                   "timeouts": {"first_event": 20, "idle": 20, "total": 60},
                   "judge": {"sample": 1}}  # every run judged: see gateway_side_judged
                  for c in DIALECTS for u in UPSTREAMS]
        config = GatewayConfig.model_validate({"routes": routes})
        app = create_app(config, store=MemoryStore())
        with Served(app) as gateway, httpx.Client(timeout=60) as http:
            yield World(gateway.url, http, inkeep.url, app)


@pytest.fixture(autouse=True)
def gateway_side_judged(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every run of the matrix's routes is judged (`judge: {sample: 1}`): after each test that uses them, what the
    gateway wrote its clients broke no rule of their dialects, whatever the real upstreams sent."""
    if "world" not in request.fixturenames:
        yield
        return
    world: World = request.getfixturevalue("world")
    with no_gateway_side_violation(world.http, world.gateway, world.app):
        yield


# -- clients


def agui_steps(world: World, upstream: str, steps: list[dict[str, Any]], thread: str) -> list[Seen]:
    run = run_agui({"url": world.url("ag-ui", upstream), "threadId": thread, "steps": steps})
    seen = []
    for step in run["steps"]:
        assert step["error"] is None, f"@ag-ui/client rejected the stream: {step['error']}"
        assert step["warnings"] == [], step["warnings"]
        assert step["terminal"], "the stream ended without a terminal event"
        new = step["newMessages"]
        finished = step["finished"] or {}
        seen.append(Seen(
            text="".join(m.get("content") or "" for m in new if m["role"] == "assistant"),
            reasoning="".join(m.get("content") or "" for m in new if m["role"] == "reasoning"),
            tool_calls=[c["function"]["name"] for m in new if m["role"] == "assistant" for c in m.get("toolCalls", [])],
            results=[m["content"] for m in new if m["role"] == "tool"],
            pending=list(finished.get("pendingToolCallIds") or []),
            interrupts=[i["id"] for i in finished.get("interrupts") or []],
            error=(step["runError"] or {}).get("message")))
    return seen


def vercel_steps(world: World, upstream: str, steps: list[dict[str, Any]], chat: str) -> list[Seen]:
    run = run_vercel_chat({"url": world.url("vercel", upstream), "chatId": chat, "steps": steps})
    assert not run["loopGuardTripped"], "useChat kept sending automatically"
    seen = []
    for step in run["steps"]:
        assert not step["timedOut"]
        assistant = next((m for m in reversed(step["messages"]) if m["role"] == "assistant"), {"parts": []})
        parts = assistant["parts"]
        tools = [p for p in parts if p["type"].startswith("tool-")]
        error = step["error"]
        assert error is None or step["status"] == "error"
        if error is not None:
            assert "Type validation" not in error and "UIMessageStream" not in error, f"ai rejected: {error}"
        seen.append(Seen(
            text="".join(p["text"] for p in parts if p["type"] == "text"),
            reasoning="".join(p["text"] for p in parts if p["type"] == "reasoning"),
            tool_calls=[p["type"][5:] for p in tools],
            results=[p["output"] if isinstance(p.get("output"), str) else orjson.dumps(p.get("output")).decode()
                     for p in tools if p.get("state") == "output-available"],
            pending=[p["toolCallId"] for p in tools if p.get("state") == "input-available"],
            interrupts=[p["approval"]["id"] for p in tools if p.get("state") == "approval-requested"],
            error=error))
    return seen


def respond(world: World, upstream: str, messages: list[dict[str, Any]], case: str) -> tuple[Seen, list[Any]]:
    """One eval-platform call: every optional field present, null included, as the platform sends them."""
    body = {"messages": [{"role": m["role"], "content": m.get("content"), "tool_calls": m.get("tool_calls"),
                          "tool_call_id": m.get("tool_call_id"), "name": None} for m in messages],
            "metadata": {"test_case_id": case, "turn_index": len(messages)}}
    response = world.http.post(world.url("agent-respond", upstream), content=orjson.dumps(body),
                               headers={"content-type": "application/json"})
    if response.status_code != 200:
        return Seen(error=response.json()["error"]["message"]), []
    reply = AgentResponse.model_validate_json(response.content)
    out = reply.model_dump(mode="json")["messages"]
    return Seen(
        text=" ".join(m["content"] or "" for m in out if m["role"] == "assistant"),
        tool_calls=[c["function"]["name"] for m in out for c in m.get("tool_calls") or ()],
        results=[m["content"] for m in out if m["role"] == "tool"]), out


def agkit_send(world: World, upstream: str, body: dict[str, Any]) -> tuple[Seen, list[dict[str, Any]]]:
    """A request as `@cloudbase/agent-ui-web` sends it, the reply read by its rules: frames that fail the event
    schema would be skipped by it, so here any such frame fails the test; `[DONE]` ends the stream."""
    response = world.http.post(world.url("ag-kit", upstream), content=orjson.dumps(body),
                               headers={"content-type": "application/json", "accept": "text/event-stream"})
    assert response.status_code == 200, response.text
    frames = sse_payloads(response.content)
    assert frames and frames[-1] == b"[DONE]", "no [DONE]"
    events = [AGKIT_EVENT.validate_json(f).model_dump(by_alias=True) for f in frames[:-1]]
    results = {e["toolCallId"] for e in events if e["type"] == "tool-result"}
    calls = [e for e in events if e["type"] == "tool-call-start"]
    error = next((e["error"] for e in events if e["type"] == "error"), None)
    return Seen(
        text="".join(e["content"] for e in events if e["type"] == "text"),
        tool_calls=[e["toolCallName"] for e in calls],
        results=[e["result"] for e in events if e["type"] == "tool-result"],
        pending=[e["toolCallId"] for e in calls if e["toolCallId"] not in results],
        interrupts=[e["id"] for e in events if e["type"] == "interrupt"], error=error), events


def a2a_send(world: World, upstream: str, text: str | dict[str, Any], context: str,
             task_id: str | None = None) -> tuple[Seen, str]:
    """A message as `a2a-sdk`'s client sends it (`SendStreamingMessage`, JSON-RPC 1.0), the stream held to the
    rules its client and `@a2a-js/sdk`'s keep (`adapters/a2a/conformance.py`) and read as a task: (what the client
    saw, the task's id)."""
    part = {"text": text} if isinstance(text, str) else {"data": text}
    message: dict[str, Any] = {"messageId": f"m-{context}-{new_id('m')}", "contextId": context,
                               "role": "ROLE_USER", "parts": [part]}
    if task_id is not None:
        message["taskId"] = task_id
    body = {"method": "SendStreamingMessage", "params": {"message": message, "configuration": {}},
            "id": "rpc-1", "jsonrpc": "2.0"}
    response = world.http.post(world.url("a2a", upstream), content=orjson.dumps(body),
                               headers={"content-type": "application/json", "accept": "text/event-stream",
                                        "a2a-version": "1.0"})
    answer = Answer(response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content)
    assert not [v for v in a2a_judge(answer) if not v.convention], a2a_judge(answer)
    results = [orjson.loads(f)["result"] for f in sse_payloads(response.content)]
    task = next(r["task"]["id"] for r in results if "task" in r) if task_id is None else task_id
    statuses = [r["statusUpdate"]["status"] for r in results if "statusUpdate" in r]
    tools = [p["data"] for s in statuses for p in (s.get("message") or {}).get("parts", []) if "data" in p]
    last = statuses[-1] if statuses else {}
    said = "".join(p.get("text", "") for p in (last.get("message") or {}).get("parts", []))
    return Seen(
        text="".join(p.get("text", "") for r in results if "artifactUpdate" in r
                     for p in r["artifactUpdate"]["artifact"]["parts"]),
        tool_calls=[d["name"] for d in tools if "args" in d],
        results=[as_text(d["response"].get("result", d["response"])) for d in tools if "response" in d],
        interrupts=[task] if last.get("state") == "TASK_STATE_INPUT_REQUIRED" else [],
        error=said if last.get("state") == "TASK_STATE_FAILED" else None), task


def langgraph_run(world: World, upstream: str, thread: str, body: dict[str, Any]) -> Seen:
    """A run as `langgraph-sdk`'s `client.runs.stream` sends it, the stream held to the rules its SDKs read it by
    (`adapters/langgraph/conformance.py`; the SDKs themselves: tests/adapters/langgraph/test_clients.py)."""
    url = f"{world.url('langgraph', upstream)}/threads/{thread}/runs/stream"
    body = {"assistant_id": "agent", "stream_mode": ["values", "messages-tuple", "updates"], **body}
    response = world.http.post(url, content=orjson.dumps(body), headers={"content-type": "application/json",
                                                                          "accept": "text/event-stream"})
    answer = Answer(response.status_code, {k.lower(): v for k, v in response.headers.items()}, response.content)
    assert not [v for v in langgraph_judge(answer) if not v.convention], langgraph_judge(answer)
    decoder = SSEEventDecoder()
    frames = [(f.event, orjson.loads(f.data)) for f in decoder.feed(response.content) + decoder.flush()]
    chunks = [data[0] for event, data in frames if event == "messages"]
    ai = [c for c in chunks if c["type"] == "AIMessageChunk"]
    calls = {p["id"]: p["name"] for c in ai for p in c.get("tool_call_chunks") or () if p.get("name")}
    results = {c["tool_call_id"]: c["content"] for c in chunks if c["type"] == "tool"}
    errors = [data["message"] for event, data in frames if event == "error"]
    return Seen(
        text="".join(c["content"] for c in ai if isinstance(c["content"], str)),
        reasoning="".join(b.get("reasoning", "") for c in ai if isinstance(c["content"], list) for b in c["content"]),
        tool_calls=list(calls.values()), results=list(results.values()),
        pending=[call for call in calls if call not in results],
        interrupts=[i["id"] for event, data in frames if event == "updates" and "__interrupt__" in data
                    for i in data["__interrupt__"]],
        error=errors[-1] if errors else None)


MCP_SESSIONS: dict[str, dict[str, tuple[str | None, dict[str, list[dict[str, Any]]]]]] = {}
"""Per upstream, per official MCP client (`SDKS`): what it got for each scenario it can express there (or why it
could not open its session). One session a column and a client, both clients at once, not one process a cell: a
process costs seconds to start."""


MCP_ANSWER = {"action": "accept", "fill": {"approved": True, "answer": "yes"}}
"""How the MCP clients answer the question an interrupt asks them by elicitation, in the call that met it: a yes in
whichever field the form has (an approval's `approved`, a question's one text `answer`)."""


def mcp_session(world: World, upstream: str, sdk: str) -> tuple[str | None, dict[str, list[dict[str, Any]]]]:
    """Every scenario of `upstream` an MCP client can express, each message a `tools/call` of the route's tool in one
    session of each SDK at `/mcp`, with a progress callback and the scenario's own conversation id."""
    if upstream not in MCP_SESSIONS:
        prompts = PEERS[upstream].prompt
        asked = {scenario: [prompts[scenario], "again"] if scenario == "multi-turn" else [prompts[scenario]]
                 for scenario in SCENARIOS if lossy_reason("mcp", upstream, scenario) is None}
        tool = route_name("mcp", upstream)

        def session(sdk: str) -> tuple[str | None, dict[str, list[dict[str, Any]]]]:
            plan = [{"call": tool, "arguments": {"message": message, "conversation_id": f"{tool}-{scenario}-{sdk}"},
                     **({"elicit": MCP_ANSWER} if scenario == "interrupt" else {})}
                    for scenario, messages in asked.items() for message in messages]
            run = run_sdk(sdk, f"{world.gateway}/mcp", plan, timeout=60)
            steps = iter(run.steps)
            return run.error, {scenario: [step for _, step in zip(messages, steps, strict=False)]
                               for scenario, messages in asked.items()}

        with ThreadPoolExecutor(len(SDKS)) as pool:
            MCP_SESSIONS[upstream] = dict(zip(SDKS, pool.map(session, SDKS), strict=True))
    return MCP_SESSIONS[upstream][sdk]


def mcp_calls(world: World, upstream: str, scenario: str, sdk: str) -> list[Seen]:
    """What the MCP client `sdk` got for `scenario`; the progress it was sent must be the answer's text so far."""
    error, by_scenario = mcp_session(world, upstream, sdk)
    assert error is None, f"{SDKS[sdk]}: {error}"
    seen = []
    for step in by_scenario[scenario]:
        assert "error" not in step, f"{SDKS[sdk]}: {step['error']}"
        if step.get("elicited"):  # asked in band: the question, then the same call's answer
            seen.append(Seen(interrupts=[asked["message"] for asked in step["elicited"]]))
        texts, structured = step["content"], step["structured"] or {}
        said = "".join(texts[:-1] if step["isError"] else texts)
        shown = [message for _, _, message in step["progress"] if message]
        assert all(said.startswith(message) for message in shown), (SDKS[sdk], shown, said)
        calls = structured.get("toolCalls", [])
        seen.append(Seen(
            text=said, tool_calls=[call["name"] for call in calls if "name" in call],
            results=[as_text(call["result"]) for call in calls if "result" in call],
            interrupts=[i.get("id", "") for i in structured.get("interrupts", [])],
            error=(texts[-1] if texts else "") if step["isError"] else None))
    expected = 2 if scenario in ("multi-turn", "interrupt") else 1
    assert len(seen) == expected, f"{SDKS[sdk]}'s session ended after {len(seen)} of the scenario's {expected} calls"
    return seen


# -- one scenario, from each client's side


def run_scenario(world: World, client: str, upstream: str, scenario: str) -> list[Seen]:
    peer = PEERS[upstream]
    prompt = peer.prompt[scenario]
    conversation = f"{client}-{upstream}-{scenario}".replace(" ", "-")
    if client == "ag-ui":
        user = {"role": "user", "content": prompt}
        if scenario == "client tool":
            return agui_steps(world, upstream, [{"messages": [user], "tools": [ASK_USER],
                                                 "toolResults": {"ask_user": "yes"}}, {"tools": [ASK_USER]}],
                              conversation)
        if scenario == "interrupt":
            return agui_steps(world, upstream, [{"messages": [user]}, {"resume": [
                {"status": "resolved", "payload": {"approved": True}}]}], conversation)
        if scenario == "multi-turn":
            return agui_steps(world, upstream, [{"messages": [user]}, {"messages": [
                {"role": "user", "content": "again"}]}], conversation)
        return agui_steps(world, upstream, [{"messages": [user]}], conversation)
    if client == "vercel":
        if scenario == "interrupt":
            return vercel_steps(world, upstream, [{"send": prompt}, {"approve": True}], conversation)
        if scenario == "multi-turn":
            return vercel_steps(world, upstream, [{"send": prompt}, {"send": "again"}], conversation)
        return vercel_steps(world, upstream, [{"send": prompt}], conversation)
    if client == "a2a":
        first, task = a2a_send(world, upstream, prompt, conversation)
        if scenario == "interrupt" and first.interrupts:
            # The answer as data, as the question's schema asks (an approval); an A2A agent's reads it as "yes".
            return [first, a2a_send(world, upstream, {"approved": True}, conversation, task)[0]]
        if scenario == "multi-turn":
            return [first, a2a_send(world, upstream, "again", conversation)[0]]
        return [first]
    if client == "langgraph":
        thread = world.http.post(f"{world.url('langgraph', upstream)}/threads", json={}).json()["thread_id"]
        given = {"messages": [{"type": "human", "content": prompt}], "tools": [ASK_USER]}
        first = langgraph_run(world, upstream, thread, {"input": given})
        if scenario == "client tool" and first.pending:
            answers = [{"type": "tool", "content": "yes", "tool_call_id": call} for call in first.pending]
            return [first, langgraph_run(world, upstream, thread, {"input": {"messages": answers}})]
        if scenario == "interrupt" and first.interrupts:
            return [first, langgraph_run(world, upstream, thread, {"command": {"resume": {"approved": True}}})]
        if scenario == "multi-turn":
            again = {"messages": [{"type": "human", "content": "again"}]}
            return [first, langgraph_run(world, upstream, thread, {"input": again})]
        return [first]
    if client == "agent-respond":
        first, reply = respond(world, upstream, [{"role": "user", "content": prompt}], conversation)
        if scenario != "multi-turn":
            return [first]
        history = [{"role": "user", "content": prompt}, *reply, {"role": "user", "content": "again"}]
        return [first, respond(world, upstream, history, conversation)[0]]
    # ag-kit
    tools = [{**ASK_USER, "parameters": orjson.dumps(ASK_USER["parameters"]).decode()}]
    body = {"messages": [{"role": "user", "content": prompt}], "tools": tools, "conversationId": conversation}
    first, _ = agkit_send(world, upstream, body)
    if scenario == "client tool" and first.pending:
        answers = [{"role": "tool", "content": "yes", "toolCallId": call_id} for call_id in first.pending]
        return [first, agkit_send(world, upstream, {"messages": answers, "tools": tools,
                                                    "conversationId": conversation})[0]]
    if scenario == "interrupt" and first.interrupts:
        resume = {"interruptId": first.interrupts[0], "payload": orjson.dumps({"approved": True}).decode()}
        return [first, agkit_send(world, upstream, {"resume": resume, "tools": tools,
                                                    "conversationId": conversation})[0]]
    if scenario == "multi-turn":
        return [first, agkit_send(world, upstream, {"messages": [{"role": "user", "content": "again"}],
                                                    "tools": tools, "conversationId": conversation})[0]]
    return [first]


def check(scenario: str, says: str, seen: list[Seen]) -> None:
    first, last = seen[0], seen[-1]
    if scenario == "failure":
        assert first.error is not None and says in first.error, first
        return
    for step in seen:
        assert step.error is None, step.error
    if scenario == "reasoning":
        assert "think" in first.reasoning, first
    if scenario == "server tool":
        assert "get_weather" in first.tool_calls and any("sunny, 21C in Paris" in r for r in first.results), first
    if scenario == "client tool":
        assert first.tool_calls == ["ask_user"] and first.pending and len(seen) == 2, first
    if scenario == "interrupt":
        assert first.interrupts and len(seen) == 2, first
    if scenario == "multi-turn":
        assert len(seen) == 2
    assert says in last.text, (says, last)


RESULTS: dict[tuple[str, str, str], str] = {}


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("client", DIALECTS)
def test_matrix(world: World, client: str, upstream: str, scenario: str) -> None:
    reason = lossy_reason(client, upstream, scenario)
    if reason is not None:
        RESULTS[client, upstream, scenario] = reason
        pytest.skip(f"lossy by design: {reason}")
    says = PEERS[upstream].says[scenario]
    if client == "mcp":  # both official clients, each held to the cell
        for sdk in SDKS:
            check(scenario, says, mcp_calls(world, upstream, scenario, sdk))
    else:
        check(scenario, says, run_scenario(world, client, upstream, scenario))
    RESULTS[client, upstream, scenario] = "pass"


# -- beyond the matrix: what each real client does that the scenarios above don't show


def test_eval_platform_turns_with_tool_history_agent_first_and_ping(world: World) -> None:
    """Use case 2: a Vercel agent (pydantic-ai) behind /agent/respond, called exactly as the platform calls it."""
    url = world.url("agent-respond", "vercel")
    probe = world.http.post(url, json={"messages": [{"role": "user", "content": "ping"}]}, timeout=10)
    assert probe.status_code == 200 and AgentResponse.model_validate_json(probe.content).messages
    # Agent-first test cases send no message at all. Each upstream gets that in a form it takes: pydantic-ai
    # refuses a run without any message, and a graph reads the last one, so AG-UI, Vercel and LangGraph upstreams
    # are sent one empty user message.
    agent_first = {"messages": [], "metadata": {"test_case_id": "tc-first", "turn_index": 0}}
    for upstream in UPSTREAMS:
        speaks = world.http.post(world.url("agent-respond", upstream), json=agent_first)
        assert speaks.status_code == 200, (upstream, speaks.text)
        assert AgentResponse.model_validate_json(speaks.content).messages[-1].content, upstream
    transcript: list[dict[str, Any]] = []
    for text, says in [("what is the weather", "Tool get_weather said: sunny, 21C in Paris."),
                       ("thanks, and hello", "This is user turn 2."), ("bye", "This is user turn 3.")]:
        transcript.append({"role": "user", "content": text})
        seen, reply = respond(world, "vercel", transcript, "tc-eval-tools")
        assert says in seen.text
        # The platform stores every message of the turn and sends them all back, tool steps included.
        transcript += [{**m, "tool_calls": [{**c, "tool_result": None} for c in m.get("tool_calls") or ()] or None}
                       for m in reply]
    assert any(m["role"] == "tool" for m in transcript)


@pytest.mark.parametrize(("upstream", "says"), [("ag-kit", "history=3"), ("vercel", "This is user turn 2."),
                                              ("vercel inkeep", "This is user turn 2.")])
def test_inkeep_shaped_use_chat_keeps_one_conversation(world: World, upstream: str, says: str) -> None:
    """useChat sending Inkeep's body (last message + conversationId): a delta client, whatever the upstream keeps."""
    run = run_vercel_chat({"url": world.url("vercel", upstream), "chatId": f"inkeep-{upstream}", "inkeep": True,
                           "steps": [{"send": "hello"}, {"send": "again"}]})
    assert [len(body["messages"]) for body in run["requests"]] == [1, 1]
    assert run["requests"][1]["conversationId"] == f"inkeep-{upstream}"
    last = run["steps"][-1]
    assert last["error"] is None
    assistant = [m for m in last["messages"] if m["role"] == "assistant"][-1]
    assert says in "".join(p.get("text", "") for p in assistant["parts"])


def test_inkeep_upstream_is_recognised_by_its_headers_and_sent_only_the_newest_message(world: World) -> None:
    """Configured as a plain vercel upstream, Inkeep shows itself by `x-vercel-ai-data-stream`: from then on it gets
    its own body (the last user message, no id, the conversation id), and one conversation holds every turn."""
    config = GatewayConfig.model_validate({"routes": [{"upstream": {"url": f"{world.inkeep}/run/api/chat",
                                                                    "dialect": "vercel"}}]})
    with Served(create_app(config, store=MemoryStore())) as gateway:  # a route that has not met Inkeep yet
        run = run_agui({"url": gateway.url + "/agui", "threadId": "inkeep-shape", "steps": [
            {"messages": [{"role": "user", "content": "hello"}]}, {"messages": [{"role": "user", "content": "again"}]},
            {"messages": [{"role": "user", "content": "and once more"}]}]})
    assert [s["error"] for s in run["steps"]] == [None, None, None]
    everything = world.http.get(f"{world.inkeep}/captured").json()
    last = next(b for b in reversed(everything) if b["messages"] == [{"role": "user", "content": "and once more"}])
    captured = [b for b in everything if b.get("conversationId") == last["conversationId"]]
    assert len(captured) == 3
    assert captured[0]["trigger"] == "submit-message"  # before the gateway knew: useChat's body, which Inkeep reads
    assert [b["messages"] for b in captured[1:]] == [[{"role": "user", "content": "again"}],
                                                     [{"role": "user", "content": "and once more"}]]
    texts = "".join(m.get("content") or "" for m in run["steps"][-1]["newMessages"] if m["role"] == "assistant")
    assert "This is user turn 3." in texts


@pytest.mark.parametrize("upstream", ["ag-kit", "ag-ui 0.x"])
@pytest.mark.parametrize("approved", [True, False])
def test_use_chat_answers_an_interrupt_about_no_tool_call_with_its_approval(world: World, upstream: str,
                                                                           approved: bool) -> None:
    """AG-Kit's free-form interrupt, and the pre-1.0 `CUSTOM on_interrupt`, reach useChat as a tool call of the
    gateway's own awaiting approval; `addToolApprovalResponse` resumes the upstream in its own way, a no included."""
    steps = [{"send": "please interrupt"}, {"approve": approved, "reason": "not now"}]
    run = run_vercel_chat({"url": world.url("vercel", upstream), "chatId": f"approve-{upstream}-{approved}",
                           "steps": steps})
    assert not run["loopGuardTripped"] and len(run["requests"]) == 2
    first, last = run["steps"]
    assert first["error"] is None and last["error"] is None and last["status"] == "ready"
    part = next(p for p in last["messages"][-1]["parts"] if p["type"].startswith("tool-"))
    assert part["state"] == ("output-available" if approved else "output-denied"), part
    text = "".join(p.get("text", "") for p in last["messages"][-1]["parts"] if p["type"] == "text")
    said = text.replace(" ", "").replace("'", '"').lower()  # the payload as JSON or as a Python repr
    assert "Resumed " in text and f'"approved":{str(approved).lower()}' in said, text


def test_use_chat_answers_an_ag_ui_interrupt_outcome_about_no_tool_call() -> None:
    """An AG-UI 1.0 interrupt (the built-in agent's `confirm`) is approved from useChat; the AG-UI upstream gets it
    in `resume[]`, and the continuation settles the call that stood for it."""
    with Served(create_agent_app("ag-ui")) as agent:
        config = GatewayConfig.model_validate({"routes": [{"upstream": {"url": agent.url + "/agui",
                                                                        "dialect": "ag-ui"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            run = run_vercel_chat({"url": gateway.url + "/api/chat", "chatId": "confirm-agui",
                                   "steps": [{"send": "please interrupt"}, {"approve": True}]})
        sent = [r["body"] for r in httpx.get(agent.url + "/_requests").json()]
    assert not run["loopGuardTripped"] and [s["error"] for s in run["steps"]] == [None, None]
    asked = next(p for p in run["steps"][0]["messages"][-1]["parts"] if p["type"] == "tool-confirm")
    assert asked["state"] == "approval-requested" and asked["input"]["payload"] == {"options": ["yes", "no"]}
    assert sent[-1]["resume"] == [{"interruptId": asked["approval"]["id"], "status": "resolved",
                                   "payload": {"approved": True}}]
    assert all(not m.get("toolCalls") for m in sent[-1]["messages"])  # the stand-in call is not history
    parts = run["steps"][1]["messages"][-1]["parts"]
    assert next(p for p in parts if p["type"] == "tool-confirm")["state"] == "output-available"
    assert "Resumed " in "".join(p.get("text", "") for p in parts if p["type"] == "text")


def test_inkeeps_documented_request_on_api_chat_gets_a_stream_the_ai_client_reads(world: World) -> None:
    """Posted exactly as Inkeep's document shows it to a route detecting every dialect: a Vercel request."""
    config = GatewayConfig.model_validate({"routes": [{"upstream": {"url": f"{world.inkeep}/run/api/chat",
                                                                    "dialect": "vercel"}}]})
    with Served(create_app(config, store=MemoryStore())) as gateway:
        body = {"messages": [{"role": "user", "content": "What can you do?"}], "conversationId": "chat-1234"}
        response = httpx.post(gateway.url + "/api/chat", json=body, timeout=30)
    assert response.status_code == 200
    result = verify_vercel({"inkeep-doc": response.content})["inkeep-doc"]
    assert result["ok"], result


@pytest.mark.parametrize("client", ["ag-ui", "ag-kit"])
def test_a_denied_vercel_tool_approval_reaches_the_agent_as_a_denial(world: World, client: str) -> None:
    """AG-UI clients answer a Vercel `tool-approval-request` through `resume[]`, AG-Kit clients through `resume`."""
    denial = {"approved": False, "reason": "no"}
    if client == "ag-ui":
        run = agui_steps(world, "vercel", [{"messages": [{"role": "user", "content": "please approve"}]},
                                           {"resume": [{"status": "resolved", "payload": denial}]}], "deny-agui")
        first, last = run
    else:
        first, _ = agkit_send(world, "vercel", {"conversationId": "deny-agkit",
                                                "messages": [{"role": "user", "content": "please approve"}]})
        resume = {"interruptId": first.interrupts[0], "payload": orjson.dumps(denial).decode()}
        last, _ = agkit_send(world, "vercel", {"conversationId": "deny-agkit", "resume": resume})
    assert first.interrupts and last.error is None
    assert "deleted /tmp/demo" not in last.text and any("denied" in r.lower() for r in last.results), last


def test_use_chat_regenerate_under_a_delta_upstream_starts_a_new_conversation_with_the_history(world: World) -> None:
    """useChat's `regenerate()` sends the history without the last answer: an AG-Kit upstream gets a new
    conversation holding it, never the regenerated question appended to the old one."""
    run = run_vercel_chat({"url": world.url("vercel", "ag-kit"), "chatId": "regen-agkit",
                           "steps": [{"send": "hello"}, {"send": "again"}, {"regenerate": True}]})
    texts = ["".join(p.get("text", "") for p in step["messages"][-1]["parts"] if p["type"] == "text")
             for step in run["steps"]]
    assert [step["error"] for step in run["steps"]] == [None, None, None]
    threads = [text.split("thread=")[1].split(" ")[0] for text in texts]
    assert threads[0] == threads[1] != threads[2]  # one conversation for the two turns, a new one for the redo
    assert "echo: again" in texts[2] and "history=3" in texts[2], texts[2]  # hello, its answer, again


def test_use_chat_regenerate_under_inkeep_redoes_a_first_turn_and_refuses_a_later_one(world: World) -> None:
    url = world.url("vercel", "vercel inkeep")
    first = run_vercel_chat({"url": url, "chatId": "regen-inkeep-1", "steps": [{"send": "hello"},
                                                                             {"regenerate": True}]})
    text = "".join(p.get("text", "") for p in first["steps"][-1]["messages"][-1]["parts"] if p["type"] == "text")
    assert first["steps"][-1]["error"] is None and "This is user turn 1." in text
    later = run_vercel_chat({"url": url, "chatId": "regen-inkeep-2",
                             "steps": [{"send": "hello"}, {"send": "again"}, {"regenerate": True}]})
    assert later["steps"][1]["error"] is None
    assert "start a new conversation" in (later["steps"][-1]["error"] or ""), later["steps"][-1]


def test_use_chat_regenerate_under_an_a2a_agent_redoes_a_first_turn_and_refuses_a_later_one(world: World) -> None:
    """An A2A agent keeps the conversation by context and is sent one message a turn: a new context cannot be given
    the history a later regenerated turn needs. Refused with why, never answered without what came before."""
    url = world.url("vercel", "a2a")
    first = run_vercel_chat({"url": url, "chatId": "regen-a2a-1", "steps": [{"send": "hello"}, {"regenerate": True}]})
    text = "".join(p.get("text", "") for p in first["steps"][-1]["messages"][-1]["parts"] if p["type"] == "text")
    assert first["steps"][-1]["error"] is None and "echo: hello" in text and "history=1" in text, text
    later = run_vercel_chat({"url": url, "chatId": "regen-a2a-2",
                             "steps": [{"send": "hello"}, {"send": "again"}, {"regenerate": True}]})
    assert later["steps"][1]["error"] is None
    assert "start a new conversation" in (later["steps"][-1]["error"] or ""), later["steps"][-1]


@pytest.mark.parametrize("client", ["ag-ui", "agent-respond"])
def test_state_from_a_vercel_upstream_reaches_clients_that_carry_state(client: str) -> None:
    with Served(create_agent_app("vercel")) as agent:
        config = GatewayConfig.model_validate({"routes": [{"paths": ["/agui", "/agent/respond"],
                                                           "client_dialects": ["ag-ui", "agent-respond"],
                                                           "upstream": {"url": agent.url + "/api/chat",
                                                                        "dialect": "vercel"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            if client == "ag-ui":
                run = run_agui({"url": gateway.url + "/agui", "threadId": "state-vercel",
                                "steps": [{"messages": [{"role": "user", "content": "show the state"}]}]})
                step = run["steps"][0]
                assert step["error"] is None and step["warnings"] == [] and step["state"] == {"count": 1}
                assert "STATE_SNAPSHOT" in step["types"]
            else:
                reply = httpx.post(gateway.url + "/agent/respond", timeout=30,
                                   json={"messages": [{"role": "user", "content": "show the state"}]})
                assert reply.status_code == 200 and reply.json()["metadata"]["state"] == {"count": 1}


def test_ag_ui_client_assembles_state_from_snapshot_and_delta(world: World) -> None:
    with Served(create_agent_app("ag-ui")) as agent:
        config = GatewayConfig.model_validate({"routes": [{"paths": ["/agui"], "client_dialects": ["ag-ui"],
                                                           "upstream": {"url": agent.url + "/agui",
                                                                        "dialect": "ag-ui"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            run = run_agui({"url": gateway.url + "/agui", "threadId": "state",
                            "steps": [{"messages": [{"role": "user", "content": "show the state"}]}]})
    step = run["steps"][0]
    assert step["error"] is None and step["warnings"] == [] and step["state"] == {"count": 1}


@pytest.mark.parametrize("upstream", ["ag-ui", "ag-kit"])
def test_use_chat_client_tool_round_trip_through_add_tool_output(upstream: str) -> None:
    """A useChat app whose agent calls a tool the app runs (the built-in agent calls one unoffered, as AI SDK
    agents declaring client tools server side do): onToolCall, addToolOutput, automatic send, the answer."""
    with Served(create_agent_app(upstream)) as agent:
        path = agent.url + ("/agui" if upstream == "ag-ui" else "/send-message")
        config = GatewayConfig.model_validate({"routes": [{"paths": ["/api/chat"], "client_dialects": ["vercel"],
                                                           "upstream": {"url": path, "dialect": upstream}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            run = run_vercel_chat({"url": gateway.url + "/api/chat", "chatId": f"addtool-{upstream}", "steps": [
                {"send": "use a tool"}, {"toolOutputs": {"get_location": {"city": "Berlin"}}}]})
    assert not run["loopGuardTripped"] and len(run["requests"]) == 2
    assert run["requests"][1]["messageId"]  # a continuation of the same assistant message
    assistant = run["steps"][-1]["messages"][-1]
    assert run["steps"][-1]["status"] == "ready"
    assert 'The tool said: {"city":"Berlin"}.' in "".join(p.get("text", "") for p in assistant["parts"])


def matrix_markdown() -> str:
    head = "| client \\ upstream | " + " | ".join(f"{u} ({PEERS[u].name})" for u in UPSTREAMS) + " |"
    rows = [head, "|---" * (len(UPSTREAMS) + 1) + "|"]
    notes: dict[str, int] = {}
    for client in DIALECTS:
        cells = []
        for upstream in UPSTREAMS:
            passed = [s for s in SCENARIOS if RESULTS.get((client, upstream, s)) == "pass"]
            lossy = [(s, r) for s in SCENARIOS if (r := RESULTS.get((client, upstream, s))) not in (None, "pass")]
            marks = [f"{s} [{notes.setdefault(r, len(notes) + 1)}]" for s, r in lossy]
            cells.append(", ".join(passed) + (f"; lossy: {', '.join(marks)}" if marks else ""))
        rows.append(f"| **{client}** ({CLIENT_NAMES[client]}) | " + " | ".join(cells) + " |")
    rows.append("")
    rows += [f"[{n}] {reason}." for reason, n in notes.items()]
    return "\n".join(rows) + "\n"


CLIENT_NAMES = {"ag-ui": "@ag-ui/client 1.0.0 HttpAgent", "ag-kit": "agent-ui-web requests",
                "vercel": "ai 7.0.173 Chat", "agent-respond": "eval platform requests",
                "a2a": "a2a-sdk 1.3.0 requests", "langgraph": "langgraph-sdk 0.4.14 requests",
                "mcp": " and ".join(SDKS.values())}
START, END = "<!-- matrix:start -->", "<!-- matrix:end -->"


def test_the_docs_show_the_matrix_this_run_produced() -> None:
    expected = [(c, u, s) for c in DIALECTS for u in UPSTREAMS for s in SCENARIOS]
    missing = [key for key in expected if key not in RESULTS]
    if missing:
        pytest.skip(f"the matrix ran only in part ({len(missing)} cells missing): run the whole module")
    table = matrix_markdown()
    page = ROOT / "docs" / "matrix.md"
    text = page.read_text()
    before, rest = text.split(START, 1)
    _, after = rest.split(END, 1)
    updated = f"{before}{START}\n{table}{END}{after}"
    if os.environ.get("MATRIX_UPDATE"):
        page.write_text(updated)
        return
    assert text == updated, ("docs/matrix.md is stale: run "
                             "`MATRIX_UPDATE=1 scripts/test tests/test_third_party_matrix.py`")
