"""Recordings served as an agent (`agent-gateway replay FILE...`): each request gets the recorded upstream's reply
to the same turn, frame by frame, with the recorded timing (or faster, or at once), in the recorded dialect.

A request is matched to a recorded turn by what it asks and where in its conversation it stands:

```
the request, read as its dialect's ─▶ Turn ─▶ signature: the user's words and tool results it carries, and the
                                                         answers to interrupts
  whole history each turn: the recorded turn with the same signature (the history says where it stands)
  only what is new:        the next recorded turn of the recorded conversation this conversation is bound to; a
                           conversation's first request binds it to a recorded one whose first turn matches (its
                           own id first, so that a gateway route of the same name finds its own)
no match ─▶ the dialect's own error: "no recording matches this request" and why
```
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson
from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from adapters import registry
from gateway.core.capabilities import AgentDescription, Discovery, NamedRoutes
from gateway.core.codec import Dialect
from gateway.core.errors import GatewayError
from gateway.core.events import RunError, RunStarted
from gateway.core.named import InMemoryEndpoint
from gateway.core.queries import RunQueries
from gateway.core.turn import Turn
from gateway.recordings.exchange import Recorded

log = logging.getLogger("agent_gateway.replay")

MAX_CONVERSATIONS = 10_000
"""Conversations whose place in their recording is remembered; the oldest are forgotten first."""
_HOP = frozenset({"content-length", "transfer-encoding", "connection", "keep-alive", "date", "server"})


class NoRecording(GatewayError):
    """A request the recordings hold no reply to (the replaying agent's error, told in its dialect)."""

    status = 404
    code = "no_recording"


@dataclass(slots=True)
class RecordedTurn:
    recorded: Recorded
    signature: tuple[Any, ...]
    conversation: str | None
    history: str


@dataclass(slots=True)
class RecordedConversation:
    turns: list[RecordedTurn] = field(default_factory=list)


def signature(turn: Turn) -> tuple[Any, ...]:
    """What a turn asks, whichever ids its dialect gave it: the user's words and tool results, and the answers to
    interrupts."""
    said = tuple((m.role, m.text.strip()) for m in turn.messages if m.role in ("user", "tool"))
    answers = tuple(orjson.dumps(r.payload, option=orjson.OPT_SORT_KEYS) for r in turn.resume)
    return said, answers


class Replay:
    """The recorded turns of one dialect, and where each conversation replaying them stands."""

    def __init__(self, dialect: Dialect, recorded: Iterable[Recorded]) -> None:
        self.dialect = dialect
        self.full: list[RecordedTurn] = []
        self.conversations: dict[str, RecordedConversation] = {}
        self.unkeyed = 0
        self.agents: dict[str, AgentDescription] = {}
        """The agents the recorded requests named (MCP's tools), for a dialect whose endpoint lists them."""
        for exchange in recorded:
            turn = self._read(exchange)
            if turn is None:
                continue
            if turn.agent is not None:
                self.agents.setdefault(turn.agent, AgentDescription(turn.agent, "a recorded agent", ""))
            entry = RecordedTurn(exchange, signature(turn), turn.conversation_id, turn.history)
            if turn.history == "full" or turn.conversation_id is None:
                self.full.append(entry)
            else:
                self.conversations.setdefault(turn.conversation_id, RecordedConversation()).turns.append(entry)
        self._bound: OrderedDict[str, tuple[str, int]] = OrderedDict()
        """A replaying conversation's id: the recorded conversation it follows, and its next turn there."""

    def _read(self, exchange: Recorded) -> Turn | None:
        try:
            return self.dialect.parse_request(orjson.loads(exchange.upstream_body))
        except (GatewayError, orjson.JSONDecodeError) as exc:
            log.warning("%s: the recorded upstream request cannot be read as %s (%s): not replayed", exchange.where,
                        self.dialect.name, exc)
            return None

    @property
    def size(self) -> int:
        return len(self.full) + sum(len(c.turns) for c in self.conversations.values())

    def match(self, turn: Turn) -> Recorded:
        """The recorded reply to `turn`; `NoRecording` saying why when there is none."""
        wanted = signature(turn)
        if turn.history == "full" or turn.conversation_id is None:
            found = [t for t in self.full if t.signature == wanted]
            found.sort(key=lambda t: t.conversation != turn.conversation_id)
            if found:
                return found[0].recorded
            raise NoRecording(f"no recording matches this request: no recorded turn asks {_said(wanted)} with the "
                              "same history before it")
        return self._next_in_conversation(turn.conversation_id, wanted)

    def _next_in_conversation(self, conversation: str, wanted: tuple[Any, ...]) -> Recorded:
        bound = self._bound.get(conversation)
        if bound is not None:
            recorded_id, index = bound
            turns = self.conversations[recorded_id].turns
            if index < len(turns) and turns[index].signature == wanted:
                self._bind(conversation, recorded_id, index + 1)
                return turns[index].recorded
        candidates = sorted(self.conversations.items(), key=lambda item: item[0] != conversation)
        for recorded_id, recorded in candidates:
            if recorded.turns[0].signature == wanted:
                self._bind(conversation, recorded_id, 1)
                return recorded.turns[0].recorded
        where = (f"turn {bound[1] + 1} of its recorded conversation" if bound is not None else
                 "the first turn of any recorded conversation")
        raise NoRecording(f"no recording matches this request: it asks {_said(wanted)}, which is not {where}")

    def _bind(self, conversation: str, recorded_id: str, index: int) -> None:
        """The conversation goes on at `index` of the recorded one; so does the recorded id itself, which the
        recorded replies name, and a client may take up (an A2A context the agent's answer named)."""
        for name in {conversation, recorded_id}:
            self._bound[name] = (recorded_id, index)
            self._bound.move_to_end(name)
        while len(self._bound) > MAX_CONVERSATIONS:
            self._bound.popitem(last=False)


def _said(wanted: tuple[Any, ...]) -> str:
    said, answers = wanted
    words = "; ".join(f"{role}: {text[:60]!r}" for role, text in said[-2:]) or "nothing new"
    return words + (f" and answers {len(answers)} interrupts" if answers else "")


class ReplayApp:
    """The ASGI app of `agent-gateway replay`: each dialect's recordings at the paths they were recorded at (any
    path, when they are all of one dialect), and the discovery document an upstream served, where one was kept."""

    def __init__(self, recorded: list[Recorded], speed: float | None = 1.0) -> None:
        self.speed = speed
        """1.0: the recorded timing; 2.0: twice as fast; None: at once."""
        by_dialect: dict[str, list[Recorded]] = {}
        for exchange in recorded:
            by_dialect.setdefault(exchange.upstream_dialect, []).append(exchange)
        self.replays = {name: Replay(registry.get(name), exchanges) for name, exchanges in by_dialect.items()}
        self.sessions: dict[str, dict[str, Any]] = {}
        """The sessions opened with the replay, for a dialect that has them (MCP's)."""
        self.paths: dict[str, str] = {}
        """Each recorded path, and the dialect recorded there."""
        self.documents: dict[str, Any] = {}
        for exchange in recorded:
            upstream = exchange.raw["upstream"]
            path = _path_of(upstream.get("url") or "", upstream.get("path"))
            self.paths.setdefault(path, exchange.upstream_dialect)
            discovery = registry.get(exchange.upstream_dialect).capability(Discovery)
            if upstream.get("discovery") is not None and discovery is not None:
                base = _path_of(upstream.get("url") or "", None).rstrip("/")
                for where in (base + discovery.path, discovery.path):
                    self.documents.setdefault(where, upstream["discovery"])

    def turns(self) -> list[str]:
        """How many turns were recorded of each dialect, for the line the command starts with."""
        return [f"{name}: {replay.size} recorded turns" for name, replay in self.replays.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        path, method = scope["path"], scope["method"]
        if method == "GET" and path == "/healthz":
            await _answer(send, 200, {"content-type": "text/plain"}, b"ok")
            return
        if method == "GET" and path in self.documents:
            here = f"http://{Headers(scope=scope).get('host', 'localhost')}{scope.get('root_path', '')}"
            await _answer(send, 200, {"content-type": "application/json"},
                          orjson.dumps(_pointing_at(self.documents[path], here)))
            return
        if method != "POST":
            await _answer(send, 405, {"content-type": "application/json"},
                          orjson.dumps({"error": {"code": "method_not_allowed", "message": "the replay takes POST"}}))
            return
        body = await _body(receive)
        replay = self._replay_for(path)
        if replay is None:
            message = f"nothing was recorded at {path}; recorded: {', '.join(sorted(self.paths))}"
            await _answer(send, 404, {"content-type": "application/json"},
                          orjson.dumps({"error": {"code": "not_found", "message": message}}))
            return
        await self._reply(replay, body, scope, send)

    def _replay_for(self, path: str) -> Replay | None:
        name = self.paths.get(path)
        if name is None and len(self.replays) == 1:
            name = next(iter(self.replays))
        return self.replays.get(name) if name is not None else None

    async def _reply(self, replay: Replay, body: bytes, scope: Scope, send: Send) -> None:
        dialect = replay.dialect
        value: Any = None
        turn = Turn()
        try:
            value = orjson.loads(body)
            if not isinstance(value, dict):
                raise NoRecording("the request is not a JSON object")
            named = dialect.capability(NamedRoutes)
            if named is not None:  # what is not a run (MCP's initialize) is answered as the dialect answers it
                answered = await named.answer(InMemoryEndpoint("POST", Headers(scope=scope), value,
                                                               list(replay.agents.values()), self.sessions))
                if answered.run is None:
                    await _answer(send, answered.status, dict(answered.headers), answered.body)
                    return
            queries = dialect.capability(RunQueries)
            if queries is not None and queries.read(value) is not None:
                raise NoRecording("a replayed agent answers runs only, not questions about them")
            turn = dialect.parse_request(value)
            recorded = replay.match(turn)
        except orjson.JSONDecodeError:
            await _error(send, dialect, NoRecording("the request is not JSON"), None, turn)
            return
        except GatewayError as error:
            log.info("%s", error.message)
            await _error(send, dialect, error, value, turn)
            return
        log.info("replaying %s (%s)", recorded.where, dialect.name)
        await self._play(recorded, send)

    async def _play(self, recorded: Recorded, send: Send) -> None:
        response = recorded.upstream_response
        began = time.monotonic()
        sent_at = recorded.sent_at
        await self._until(began, response.at - sent_at)
        headers = [(k.encode(), v.encode()) for k, v in response.headers.items() if k not in _HOP]
        await send({"type": "http.response.start", "status": response.status, "headers": headers})
        for at, data in response.frames:
            await self._until(began, at - sent_at)
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    async def _until(self, began: float, offset: float) -> None:
        """Wait until `offset` recorded seconds after the request came, scaled by the speed: each frame is placed
        against the request's arrival, so waits do not add up their errors."""
        if self.speed is None:
            return
        delay = began + max(0.0, offset) / self.speed - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)


def _pointing_at(document: Any, here: str) -> Any:
    """A recorded discovery document whose URLs name this replay (at `here`) instead of the recorded agent."""
    if isinstance(document, dict):
        return {key: here + (urlsplit(value).path or "/") if key == "url" and isinstance(value, str)
                and value.startswith(("http://", "https://")) else _pointing_at(value, here)
                for key, value in document.items()}
    if isinstance(document, list):
        return [_pointing_at(item, here) for item in document]
    return document


def _path_of(url: str, path: str | None) -> str:
    base = urlsplit(url).path or "/"
    if path:
        return base.rstrip("/") + "/" + path.lstrip("/")
    return base


async def _body(receive: Receive) -> bytes:
    body = bytearray()
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body", False):
            return bytes(body)


async def _answer(send: Send, status: int, headers: dict[str, str], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in headers.items()]})
    await send({"type": "http.response.body", "body": body})


async def _error(send: Send, dialect: Dialect, error: GatewayError, request: Any, turn: Turn) -> None:
    """The error as an agent of the dialect tells one: its own error reply where it has one (A2A's JSON-RPC
    error), else a run that ends in the error, as its servers stream or answer it."""
    reply = dialect.errors_for(request)
    if reply is not None:
        status, body = reply(error)
        await _answer(send, status, {"content-type": "application/json"}, body)
        return
    encoder = dialect.new_encoder(turn)
    body = encoder.encode([RunStarted(thread_id=turn.conversation_id, run_id=turn.run_id),
                           RunError(error.message, code=error.code)])
    await _answer(send, encoder.status_code, dict(Headers(encoder.headers)), body)
