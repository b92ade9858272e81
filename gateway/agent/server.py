"""A scripted agent server in any dialect: a real upstream of every kind for the gateway's tests, and something to
point the gateway at when there is no agent to hand.

It reads requests with the dialect's own parser and writes canonical events through the dialect's own encoder, so
what it serves is exactly what the gateway emits to a client of that dialect. The script is picked from keywords
in the last user message (case-insensitive), the same in every dialect; the first match wins:

| keyword     | the run                                                                                         |
|-------------|-------------------------------------------------------------------------------------------------|
| (resume)    | a request that answers an interrupt: "Resumed <id>: <payload as JSON>."                         |
| (tool result) | a request whose last message is a tool result: "The tool said: <content>."                    |
| `silent`    | nothing at all for an hour, not even headers (first-byte timeouts)                              |
| `hang`      | the run starts and a first delta goes out, then nothing for an hour (idle timeouts)             |
| `fail`      | a little text, then `RunError("scripted failure", "agent_error")`                               |
| `approve`   | tool call `delete_file` awaiting approval: an `Interrupt` with `reason="tool_approval"`         |
| `interrupt` | an `Interrupt` with `reason="confirm"`, payload `{"options": ["yes", "no"]}`                    |
| `weather`   | server tool `get_weather`, its result, then "It is sunny, 21C in <city>."                       |
| `tool`      | the first client tool offered (or `get_location`, which it declares itself), left to the client |
| `state`     | state snapshot `{"count": 0}`, a patch to 1, then text                                          |
| `think`     | reasoning, then text                                                                            |
| `slow`      | 20 text deltas 0.05 s apart                                                                     |
| otherwise   | "You said: <text>. (turn N)", N = the user messages the agent knows in this conversation        |

Delta dialects (AG-Kit, Inkeep) send only what is new, so the agent keeps their history by conversation id, as the
real servers do; that is what "turn N" proves. Test hooks: `GET /_requests` (what reached the agent),
`DELETE /_requests`, and `GET /_disconnects` (runs cut short by a client leaving, to prove upstreams get cancelled).
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive

from adapters import registry
from gateway.core.codec import Dialect, Encoder
from gateway.core.errors import RequestError
from gateway.core.events import (
    Event,
    Interrupt,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.ids import new_id
from gateway.core.turn import Message, Tool, ToolCall, Turn
from gateway.core.validation import load_json_object

MAX_LOG = 1000
MAX_CONVERSATIONS = 1000
MAX_HISTORY = 1000
"""Messages kept per conversation."""
HANG = 3600.0
SLOW_GAP = 0.05

KEYWORDS = ("silent", "hang", "fail", "approve", "interrupt", "weather", "tool", "state", "think", "slow")
"""In priority order."""

FALLBACK_TOOL = Tool("get_location", "The user's location, from their device.",
                     {"type": "object", "properties": {}})
"""Vercel and agent-respond requests cannot offer tools: like a useChat server, the agent then declares its own."""

Timeline = list[tuple[float, Event]]
"""Each event with the seconds to wait before sending it."""


class Script:
    """One run: its events, with the waits between them, and the messages it adds to the conversation."""

    __slots__ = ("_wait", "replies", "timeline")

    def __init__(self) -> None:
        self.timeline: Timeline = []
        self.replies: list[Message] = []
        self._wait = 0.0

    def emit(self, *events: Event) -> None:
        for event in events:
            self.timeline.append((self._wait, event))
            self._wait = 0.0

    def pause(self, seconds: float) -> None:
        self._wait += seconds

    def say(self, text: str, *, deltas: list[str] | None = None, gap: float = 0.0) -> str:
        message_id = new_id("msg")
        self.emit(TextStart(message_id))
        for index, delta in enumerate(deltas or _words(text)):
            if index:
                self.pause(gap)
            self.emit(TextDelta(message_id, delta))
        self.emit(TextEnd(message_id))
        self.replies.append(Message("assistant", text, message_id))
        return message_id

    def call(self, name: str, arguments: dict[str, Any], *, parent: str | None = None,
             result: str | None = None) -> str:
        """A tool call, its arguments in two deltas; with a `result` the agent ran it, else the client must."""
        call_id = new_id("call")
        args = orjson.dumps(arguments).decode()
        half = len(args) // 2
        self.emit(ToolCallStart(call_id, name, parent), ToolCallArgs(call_id, args[:half]),
                  ToolCallArgs(call_id, args[half:]), ToolCallEnd(call_id))
        last = self.replies[-1] if self.replies else None
        if parent is not None and last is not None and last.id == parent:
            last.tool_calls.append(ToolCall(call_id, name, args))  # OpenAI style: text and calls share a message
        else:
            self.replies.append(Message("assistant", None, new_id("msg"), [ToolCall(call_id, name, args)]))
        if result is not None:
            self.emit(ToolResult(call_id, result, new_id("result")))
            self.replies.append(Message("tool", result, tool_call_id=call_id, name=name))
        return call_id


def script(turn: Turn, history: list[Message]) -> Script:
    """What the agent does for this turn, given the whole conversation it knows (the turn's messages included)."""
    s = Script()
    text = next((m.text for m in reversed(history) if m.role == "user"), "")
    answering = turn.resume or _trailing_results(history)  # the second leg of a round trip: keywords are stale
    keyword = None if answering else _keyword(text)
    if keyword == "silent":
        s.pause(HANG)
    s.emit(RunStarted(turn.conversation_id, turn.run_id or new_id("run"), turn.parent_run_id))
    s.emit(_act(s, turn, history, text, keyword))
    return s


def _act(s: Script, turn: Turn, history: list[Message], text: str, keyword: str | None) -> RunFinished | RunError:
    if turn.resume:
        s.say(" ".join(f"Resumed {r.interrupt_id}: {orjson.dumps(r.payload).decode()}." for r in turn.resume))
        return RunFinished()
    results = _trailing_results(history)
    if results:
        s.say(f"The tool said: {'; '.join(results)}.")
        return RunFinished()
    if keyword == "silent":
        s.say("Sorry, I was miles away.")
    elif keyword == "hang":
        message_id = new_id("msg")
        s.emit(TextStart(message_id), TextDelta(message_id, "Let me think about that"))
        s.pause(HANG)
        s.emit(TextDelta(message_id, "... done."), TextEnd(message_id))
        s.replies.append(Message("assistant", "Let me think about that... done.", message_id))
    elif keyword == "fail":
        s.say("Working on it...")
        return RunError("scripted failure", "agent_error")
    elif keyword == "approve":
        call_id = s.call("delete_file", {"path": "/tmp/demo"})
        s.emit(Interrupt(_interrupt_id(), "tool_approval", "Delete /tmp/demo?", tool_call_id=call_id))
        return RunFinished("interrupt")
    elif keyword == "interrupt":
        s.emit(Interrupt(_interrupt_id(), "confirm", "Continue?", payload={"options": ["yes", "no"]}))
        return RunFinished("interrupt")
    elif keyword == "weather":
        city = _city(text)
        said = s.say("Let me check the weather.")
        s.call("get_weather", {"city": city}, parent=said, result=f"sunny, 21C in {city}")
        s.say(f"It is sunny, 21C in {city}.")
    elif keyword == "tool":
        tool = turn.tools[0] if turn.tools else FALLBACK_TOOL
        s.call(tool.name, _demo_arguments(tool.parameters))
    elif keyword == "state":
        s.emit(StateSnapshot({"count": 0}), StateDelta([{"op": "replace", "path": "/count", "value": 1}]))
        s.say("The count is now 1.")
    elif keyword == "think":
        reasoning_id = new_id("reasoning")
        s.emit(ReasoningStart(reasoning_id))
        for delta in ("The user wants ", "me to think. ", "So I will."):
            s.emit(ReasoningDelta(reasoning_id, delta))
        s.emit(ReasoningEnd(reasoning_id))
        s.say(f"After some thought: {text}.")
    elif keyword == "slow":
        deltas = [f"tick {i}. " for i in range(1, 21)]
        s.say("".join(deltas), deltas=deltas, gap=SLOW_GAP)
    else:
        turns = sum(1 for m in history if m.role == "user")
        s.say(f"You said: {text}. (turn {turns})" if turns else "Hello! Ask me anything. (turn 0)")
    return RunFinished()


def _keyword(text: str) -> str | None:
    lowered = text.lower()
    return next((k for k in KEYWORDS if k in lowered), None)


def _trailing_results(history: list[Message]) -> list[str]:
    """The tool results the agent has not answered yet: the last messages, when they are tool messages."""
    results: list[str] = []
    for message in reversed(history):
        if message.role != "tool":
            break
        results.append(message.error or message.text)
    return results[::-1]


def _city(text: str) -> str:
    found = re.search(r"\b(?:in|for|at)\s+([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)", text)
    return found.group(1) if found else "Paris"


def _demo_arguments(schema: dict[str, Any] | None) -> dict[str, Any]:
    """Arguments that satisfy the tool's schema as far as a script can: "demo" for each required string."""
    properties = (schema or {}).get("properties")
    required = (schema or {}).get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    return {name: "demo" for name in required
            if isinstance(name, str) and isinstance(properties.get(name), dict)
            and properties[name].get("type") == "string"}


def _words(text: str) -> list[str]:
    """Text as word deltas, so that clients see it stream; joined they give back the text exactly."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _interrupt_id() -> str:
    return new_id("int").replace("_", "-", 1)


class Agent:
    """One agent server's memory, request log and disconnect count: per app, so that apps in tests share nothing."""

    def __init__(self, dialect: Dialect, pace: float = 0.0) -> None:
        self.dialect = dialect
        self.pace = pace
        self.log: deque[dict[str, Any]] = deque(maxlen=MAX_LOG)
        self.conversations: dict[str, list[Message]] = {}
        self.disconnects = 0

    async def respond(self, request: Request) -> Response:
        raw = await request.body()
        try:
            body = load_json_object(raw)
        except RequestError as exc:
            self._record(request, None)
            return _error(exc)
        self._record(request, body)
        try:
            turn = self.dialect.parse_request(body)
        except RequestError as exc:
            return _error(exc)
        history = self._history(turn)
        run = script(turn, history)
        history.extend(run.replies)
        del history[:-MAX_HISTORY]
        encoder = self.dialect.new_encoder(turn)
        timeline = [(delay + (self.pace if index else 0.0), event) for index, (delay, event) in
                    enumerate(run.timeline)]
        if not self.dialect.streaming:
            # One body at the end: every wait comes before the response starts.
            if not await self._wait(request, sum(delay for delay, _ in timeline)):
                return Response(status_code=499)
            return Response(encoder.encode([event for _, event in timeline]), encoder.status_code, encoder.headers)
        if not await self._wait(request, timeline[0][0]):
            return Response(status_code=499)
        timeline[0] = (0.0, timeline[0][1])
        return StreamingResponse(self.stream(timeline, encoder), encoder.status_code, encoder.headers)

    async def stream(self, timeline: Timeline, encoder: Encoder) -> AsyncIterator[bytes]:
        """The run one event at a time. Starlette cancels this when the client leaves; that is counted."""
        try:
            for delay, event in timeline:
                if delay > 0:
                    await asyncio.sleep(delay)
                chunk = encoder.encode([event])
                if chunk:
                    yield chunk
        except (asyncio.CancelledError, GeneratorExit):
            self.disconnects += 1
            raise

    async def _wait(self, request: Request, seconds: float) -> bool:
        """Wait before the response starts, when nothing else would notice the client leave. False if it left."""
        if seconds <= 0:
            return True
        watcher = asyncio.ensure_future(_disconnected(request.receive))
        try:
            done, _ = await asyncio.wait({watcher}, timeout=seconds)
        finally:
            watcher.cancel()
        if done:
            self.disconnects += 1
            return False
        return True

    def _history(self, turn: Turn) -> list[Message]:
        """The conversation as the agent knows it: the request's for full-history dialects, its own for delta ones."""
        if turn.history != "delta" or turn.conversation_id is None:
            return list(turn.messages)
        known = self.conversations.pop(turn.conversation_id, [])
        known.extend(turn.messages)
        self.conversations[turn.conversation_id] = known  # most recently used last
        while len(self.conversations) > MAX_CONVERSATIONS:
            del self.conversations[next(iter(self.conversations))]
        return known

    def _record(self, request: Request, body: Any) -> None:
        self.log.append({"path": request.url.path, "headers": dict(request.headers), "body": body})

    async def requests(self, request: Request) -> Response:
        if request.method == "DELETE":
            cleared = len(self.log)
            self.log.clear()
            return _json({"cleared": cleared})
        return _json(list(self.log))

    async def disconnect_count(self, request: Request) -> Response:
        return _json(self.disconnects)


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status, media_type="application/json")


def _error(exc: RequestError) -> Response:
    return _json(exc.to_json(), exc.status)


def create_agent_app(dialect: str, *, path: str | None = None, pace: float = 0.0) -> Starlette:
    """An agent server speaking `dialect` on its conventional paths (or `path`), `pace` seconds between events."""
    agent = Agent(registry.get(dialect), pace)
    routes = [Route(p, agent.respond, methods=["POST"]) for p in ((path,) if path else agent.dialect.paths)]
    routes += [
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/_requests", agent.requests, methods=["GET", "DELETE"]),
        Route("/_disconnects", agent.disconnect_count, methods=["GET"]),
    ]
    app = Starlette(routes=routes)
    app.state.agent = agent
    return app


def run(dialect: str, host: str = "127.0.0.1", port: int = 8001, pace: float = 0.0) -> None:
    """Serve the scripted agent until interrupted (for the CLI)."""
    uvicorn.run(create_agent_app(dialect, pace=pace), host=host, port=port, log_level="warning")
