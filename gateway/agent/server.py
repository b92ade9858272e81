"""A scripted agent server in any dialect: a real upstream of every kind for the gateway's tests, and something to
point the gateway at when there is no agent to hand.

It reads requests with the dialect's own parser and writes canonical events through the dialect's own encoder, so
what it serves is exactly what the gateway emits to a client of that dialect. The script is picked from keywords
in the last user message (case-insensitive), the same in every dialect; the first match wins:

| keyword     | the run                                                                                         |
|-------------|-------------------------------------------------------------------------------------------------|
| (resume)    | a request that answers an interrupt: "Resumed <id>: <payload as JSON>." (an answer in a message |
|             | to whatever is open, an MCP call naming its conversation, is a message when nothing waits)      |
| (tool result) | a request whose last message is a tool result: "The tool said: <content>."                    |
| `silent`    | nothing at all for an hour, not even headers (first-byte timeouts)                              |
| `hang`      | the run starts and a first delta goes out, then nothing for an hour (idle timeouts)             |
| `fail`      | a little text, then `RunError("scripted failure", "agent_error")`                               |
| `approve`   | tool call `delete_file` awaiting approval: an `Interrupt` with `reason="tool_approval"`         |
| `interrupt` | an `Interrupt` with `reason="confirm"`, payload `{"options": ["yes", "no"]}`                    |
| `weather`   | server tool `get_weather`, its result, then "It is sunny, 21C in <city>."; when the client offers |
|             | a `get_weather` of its own, that one, left to the client                                        |
| `tool`      | the first client tool offered (or `get_location`, which it declares itself), left to the client |
| `state`     | state snapshot `{"count": 0}`, a patch to 1, then text                                          |
| `think`     | reasoning, then text                                                                            |
| `slow`      | 20 text deltas 0.05 s apart                                                                     |
| otherwise   | "You said: <text>. (turn N)", N = the user messages the agent knows in this conversation        |

Before the keywords, a message (or an answer to an interrupt) whose id starts with `tck-<scenario>` gets that
scenario of the A2A conformance kit's (`conformance_kit.py`): the kit asks the agent it tests for a behaviour so.

Delta dialects (AG-Kit, Inkeep) send only what is new, so the agent keeps their history by conversation id, as the
real servers do; that is what "turn N" proves. Test hooks: `GET /_requests` (what reached the agent),
`DELETE /_requests`, and `GET /_disconnects` (runs cut short by a client leaving, to prove upstreams get cancelled).
"""

from __future__ import annotations

import asyncio
import socket
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import Any

import orjson
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive

from adapters import registry
from gateway.core.capabilities import AgentDescription, Discovery, NamedRoutes, Resource
from gateway.core.codec import Dialect, Encoder
from gateway.core.errors import RequestError
from gateway.core.events import RunFinished
from gateway.core.named import InMemoryEndpoint
from gateway.core.queries import RunQueries
from gateway.core.turn import ANY_OPEN_INTERRUPT, Message, Turn
from gateway.core.validation import load_json_object

from .script import KEYWORDS, Timeline, script

__all__ = ["KEYWORDS", "Agent", "create_agent_app", "run"]

MAX_LOG = 1000
MAX_CONVERSATIONS = 1000
MAX_HISTORY = 1000
"""Messages kept per conversation."""


class Agent:
    """One agent server's memory, request log and disconnect count: per app, so that apps in tests share nothing."""

    def __init__(self, dialect: Dialect, pace: float = 0.0, recording: bool = True) -> None:
        self.dialect = dialect
        self.pace = pace
        self.recording = recording
        """Whether what reaches it is kept for `/_requests`."""
        self.log: deque[dict[str, Any]] = deque(maxlen=MAX_LOG)
        self.conversations: dict[str, list[Message]] = {}
        self.waiting: dict[str, None] = {}
        """The conversations whose last run ended on an interrupt (most recent last, bounded as conversations)."""
        self.sessions: dict[str, dict[str, Any]] = {}
        """The sessions its clients opened, for a dialect that has them (MCP's)."""
        self.disconnects = 0

    async def respond(self, request: Request, resource: Resource | None = None, given: bytes = b"") -> Response:
        """A run; `given` is its body when not the request's own (as a dialect's endpoint completed it)."""
        raw = given or await request.body()
        try:
            body = load_json_object(raw) if raw or resource is None else dict(request.query_params)
        except RequestError as exc:
            self._record(request, None)
            return _error(exc, self.dialect, None)
        self._record(request, body)
        try:
            if resource is not None:
                body = resource.read(request.path_params, body, request.headers)
                queries = self.dialect.capability(RunQueries)
                if queries is not None and queries.read(body) is not None:  # the agent runs; it keeps no runs
                    return _json({"error": {"code": "not_found", "message": "the built-in agent answers runs "
                                            "only"}}, 404)
            turn = self.dialect.parse_request(body)
        except RequestError as exc:
            return _error(exc, self.dialect, body)
        turn = self._answer_or_message(turn)
        history = self._history(turn)
        run = script(turn, history)
        history.extend(run.replies)
        self._note_waiting(turn, run.timeline)
        del history[:-MAX_HISTORY]
        encoder = self.dialect.new_encoder(turn)
        timeline = [(delay + (self.pace if index else 0.0), event) for index, (delay, event) in
                    enumerate(run.timeline)]
        if not encoder.streams:
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

    def _answer_or_message(self, turn: Turn) -> Turn:
        """As the gateway's mapper reads it: an answer to whatever is open that came in a message (an MCP call
        naming its conversation) is the user's message when the conversation waits for nothing."""
        if (turn.conversation_id in self.waiting or not turn.resume
                or any(r.interrupt_id != ANY_OPEN_INTERRUPT or r.message_id is None for r in turn.resume)):
            return turn
        said = [Message("user", r.payload, r.message_id) for r in turn.resume if isinstance(r.payload, str)]
        return replace(turn, messages=turn.messages + said, resume=[])

    def _note_waiting(self, turn: Turn, timeline: Timeline) -> None:
        if turn.conversation_id is None:
            return
        self.waiting.pop(turn.conversation_id, None)
        last = timeline[-1][1] if timeline else None
        if isinstance(last, RunFinished) and last.outcome == "interrupt":
            self.waiting[turn.conversation_id] = None
            while len(self.waiting) > MAX_CONVERSATIONS:
                del self.waiting[next(iter(self.waiting))]

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
        if self.recording:
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


async def _resource(agent: Agent, resource: Resource, request: Request) -> Response:
    return await agent.respond(request, resource)


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


def _json(value: Any, status: int = 200) -> Response:
    return Response(orjson.dumps(value), status, media_type="application/json")


async def _named(agent: Agent, named: NamedRoutes, request: Request) -> Response:
    """The dialect's own answer to what is not a run (MCP's initialize, tools/list), else the run."""
    raw = await request.body()
    try:
        body = load_json_object(raw) if raw else None
    except RequestError as exc:
        return _error(exc, agent.dialect, None)
    called = body.get("params") if isinstance(body, dict) and body.get("method") == "tools/call" else None
    name = called.get("name") if isinstance(called, dict) else None  # the agent answers to any name it is called by
    routes = [AgentDescription(name if isinstance(name, str) and name else "agent",
                               f"The gateway's built-in scripted agent: keywords {', '.join(KEYWORDS)}.",
                               str(request.url))]
    answered = await named.answer(InMemoryEndpoint(request.method, request.headers, body, routes, agent.sessions))
    if answered.run is not None:  # its body as the dialect completed it (a session's log level), if it did
        return await agent.respond(request, given=answered.body)
    return Response(answered.body, answered.status, dict(answered.headers))


def _error(exc: RequestError, dialect: Dialect, request: Any) -> Response:
    """A request the agent cannot read, told as the gateway tells the dialect's clients: in the dialect's own error
    shape where it has one (MCP's and A2A's JSON-RPC errors), else the gateway's JSON error."""
    reply = dialect.errors_for(request)
    if reply is None:
        return _json(exc.to_json(), exc.status)
    status, body = reply(exc)
    return Response(body, status, media_type="application/json")


def create_agent_app(dialect: str, *, path: str | None = None, pace: float = 0.0, test_hooks: bool = True
                     ) -> Starlette:
    """An agent server speaking `dialect` on its conventional paths (or `path`), `pace` seconds between events;
    with `test_hooks`, what reached it at `/_requests` and its disconnects at `/_disconnects`."""
    agent = Agent(registry.get(dialect), pace, recording=test_hooks)
    paths = (path,) if path else agent.dialect.paths
    named = agent.dialect.capability(NamedRoutes)
    if named is not None and not path:  # one endpoint for all its agents (MCP's): the agent is the one named "agent"
        routes = [Route(p, partial(_named, agent, named), methods=list(named.methods))
                  for p in _with_and_without_slash((named.path,))]
    else:
        routes = [Route(p, agent.respond, methods=["POST"]) for p in _with_and_without_slash(paths)]
    # Under each path, and at the root as a LangGraph server serves them: a base URL finds the agent.
    routes += [Route(p.rstrip("/") + resource.path, partial(_resource, agent, resource), methods=[resource.method])
               for p in (*paths, "") for resource in agent.dialect.capabilities_of(Resource)]
    discovery = agent.dialect.capability(Discovery)
    if discovery is not None:
        routes += [Route(p.rstrip("/") + discovery.path, _document_endpoint(discovery, p), methods=["GET"])
                   for p in paths]
        if len(paths) == 1:  # at the bare URL too, as the gateway serves a lone card: a base URL finds the agent
            routes.append(Route(discovery.path, _document_endpoint(discovery, paths[0]), methods=["GET"]))
    routes.append(Route("/healthz", _healthz, methods=["GET"]))
    if test_hooks:
        routes += [Route("/_requests", agent.requests, methods=["GET", "DELETE"]),
                   Route("/_disconnects", agent.disconnect_count, methods=["GET"])]
    refused = partial(_refused, paths)
    app = Starlette(routes=routes, exception_handlers={404: refused, 405: refused})
    app.router.redirect_slashes = False  # a redirect loses a POST's body: both spellings are served instead
    app.state.agent = agent
    return app


async def _refused(paths: tuple[str, ...], request: Request, exc: Exception) -> Response:
    """A path or method the agent does not serve, said in JSON as the gateway says it, with where the agent is."""
    status = getattr(exc, "status_code", 404)
    where = " and ".join(request.scope.get("root_path", "") + path for path in paths)
    if status == 405:
        message = f"{request.method} is not served at {request.url.path}; POST a run to {where}"
        return _json({"error": {"code": "method_not_allowed", "message": message}}, 405)
    message = f"nothing is served at {request.url.path}; the agent answers at {where}"
    return _json({"error": {"code": "not_found", "message": message}}, 404)


def _with_and_without_slash(paths: tuple[str, ...]) -> list[str]:
    """Each path as written and with its trailing slash the other way: clients add one to the URL they were given."""
    found: dict[str, None] = {}
    for path in paths:
        bare = path.rstrip("/") or "/"
        found.update({bare: None, bare.rstrip("/") + "/": None})
    return list(found)


def _document_endpoint(discovery: Discovery, path: str) -> Callable[[Request], Awaitable[Response]]:
    """The agent's discovery document (A2A's card), naming the endpoint at `path` of the host it was asked of."""

    async def endpoint(request: Request) -> Response:
        url = f"{request.url.scheme}://{request.url.netloc}{path}"
        asked = {name.lower(): value for name, value in request.query_params.items()} | dict(request.headers)
        return JSONResponse(discovery.document(AgentDescription(
            "scripted-agent", f"The gateway's built-in scripted agent: keywords {', '.join(KEYWORDS)}.", url), asked))

    return endpoint


def run(dialect: str, sock: socket.socket, pace: float = 0.0) -> None:
    """Serve the scripted agent on a bound socket until interrupted (for the CLI)."""
    uvicorn.Server(uvicorn.Config(create_agent_app(dialect, pace=pace), log_level="warning")).run(sockets=[sock])
