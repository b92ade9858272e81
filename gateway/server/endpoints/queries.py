"""Requests about runs rather than new runs (`gateway.core.queries`), and the runs their clients may ask about:
the route's side of both.

A query comes in a request's body (A2A's), or at a path under the route's that names the run (Responses'
`GET /v1/responses/{id}`: `mount`). It is answered with the caller's runs on the route (never another
principal's), wherever they run. An answer that streams (a watcher) takes a stream slot like a run, and gets the
dialect's keep-alive when nothing comes for the route's keep-alive interval. A run of such a dialect is started
with its feed claimed, so that queries on any replica find it and a cancel from any replica stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial
from typing import TYPE_CHECKING

from starlette.datastructures import QueryParams
from starlette.types import Receive, Scope, Send

from adapters import registry
from gateway.config import Push
from gateway.conversations.mapper import decode_conversation
from gateway.conversations.store import StoreError, scoped_key
from gateway.core.codec import Dialect
from gateway.core.errors import InvalidRequest, ListingNeedsCaller, Overloaded, RunNotFound
from gateway.core.queries import (
    Answer,
    FinalFrame,
    Followed,
    KeptConversation,
    RunPath,
    RunQueries,
    RunQuery,
    RunRecord,
    StreamedAnswer,
)
from gateway.core.turn import Turn
from gateway.core.validation import MAX_ID, bad_id
from gateway.runs.records import RunRecords
from gateway.runs.tape import TapeLost
from gateway.runs.watched import CallerRuns, RouteRuns, WatchedRun
from gateway.runs.webhooks import CallerWebhooks, RouteWebhooks
from gateway.server.endpoints.push import Pusher, RunPush
from gateway.server.operations.metrics import PushOutcomes
from gateway.server.operations.record import RequestOutcome
from gateway.server.request.access import ANONYMOUS
from gateway.server.request.call import Call
from gateway.server.request.entry import STORE_DOWN, entered, identify
from gateway.server.request.reading import check_content_type
from gateway.server.stream.resume import conversation_key

if TYPE_CHECKING:
    from gateway.server.endpoints.capabilities import Mounted
    from gateway.server.route import RouteHandler

log = logging.getLogger("agent_gateway.queries")

LISTING_NEEDS_CALLER = ("this route has no API keys or tenant header, so it cannot tell its callers apart and "
                        "lists only one conversation at a time, named by its id: name the conversation, or give "
                        "the route auth keys or a tenant_header to list all of a caller's")


async def answer(handler: RouteHandler, call: Call, receive: Receive, client: Dialect, query: RunQuery) -> None:
    """Answer a query about the caller's runs, in one body or as a stream."""
    queries = client.capability(RunQueries)
    assert queries is not None and handler.runs is not None
    record = call.record
    record.client_dialect, record.run_id, record.outcome = client.name, query.run_id, RequestOutcome.QUERY
    followed = queries.follows(query) if handler.route.resumable else None
    try:
        answered = await queries.answer(query, CallerView(handler, call.caller.principal))
    except StoreError as exc:
        record.error_detail = str(exc)
        raise Overloaded(STORE_DOWN) from exc
    except RunNotFound:  # no run of the client's own by that id: a conversation's, of any dialect, may be
        if followed is None or not await _followed(handler, call, receive, client, followed):
            raise
        return
    if isinstance(answered, Answer) and answered.status == 404 and followed is not None \
            and await _followed(handler, call, receive, client, followed):
        return
    if isinstance(answered, Answer):
        await call.writer.respond(answered.status, dict(answered.headers), answered.body)
        return
    handler.access.admit(call.caller)
    call.release = partial(handler.access.release, call.caller)
    await _stream(call, receive, answered, handler.keepalive)


async def _followed(handler: RouteHandler, call: Call, receive: Receive, client: Dialect, followed: Followed) -> bool:
    """Send a query that follows a conversation, and names no run of the client's own, the run running in that
    conversation (or its last one, still kept, for `Followed.ended`), in the client's dialect whichever dialect's
    client started it (written for this query even when it is the same dialect: its JSON-RPC id, the ids it
    named); False when there is none (the caller's own: another's is not found)."""
    key = conversation_key(handler.route.name, call.caller.principal, followed.conversation)
    try:
        board = handler.board
        reply = await (board.kept_in(key) if followed.ended else board.running_in(key))
    except StoreError as exc:
        call.record.error_detail = str(exc)
        raise Overloaded(STORE_DOWN) from exc
    if reply is None:
        return False
    call.record.conversation_id = followed.conversation
    handler.access.admit(call.caller)
    call.release = partial(handler.access.release, call.caller)
    await handler.resumable.follow_in(call, receive, reply, client, followed.turn, followed.after, rewrite=True)
    return True


class CallerView(CallerRuns):
    """A caller's runs on a route, and its conversations there as the store keeps them."""

    def __init__(self, handler: RouteHandler, principal: str) -> None:
        assert handler.runs is not None
        super().__init__(handler.runs, principal)
        self._handler = handler
        self._principal_of_conversations = principal

    async def newest(self, after: str | None, limit: int, *, conversation: str | None = None) -> list[RunRecord]:
        if conversation is None and self._principal_of_conversations == ANONYMOUS:
            raise ListingNeedsCaller(LISTING_NEEDS_CALLER)
        return await super().newest(after, limit, conversation=conversation)

    @property
    def agent(self) -> str:
        route = self._handler.route
        return route.upstream.agent or route.name

    async def conversation(self, conversation_id: str) -> KeptConversation | None:
        handler = self._handler
        key = scoped_key("client", handler.route.name, self._principal_of_conversations, conversation_id)
        raw = await handler.mapper.store.get(key)
        if raw is None:
            return None
        try:
            kept = decode_conversation(raw)
        except (ValueError, TypeError, KeyError):
            return None
        return KeptConversation(kept.history, kept.state, list(kept.interrupts))


async def _stream(call: Call, receive: Receive, answered: StreamedAnswer, keepalive: float) -> None:
    """Write the answer's frames as they come, a keep-alive when none does, until they end or the client leaves."""
    writer = call.writer
    frames = answered.frames
    leaving: asyncio.Future[bytes] = asyncio.ensure_future(_disconnect(receive))
    pending: asyncio.Future[bytes] | None = None
    await writer.start(200, dict(answered.headers))
    writer.streaming = True
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(frames))
            done, _ = await asyncio.wait({pending, leaving}, timeout=keepalive,
                                         return_when=asyncio.FIRST_COMPLETED)
            if leaving in done:
                writer.gone = True
                return
            if not done:
                await writer.write_keep_alive(answered.keep_alive)
                continue
            try:
                frame = pending.result()
            except StopAsyncIteration:
                break
            except (StoreError, TapeLost) as exc:  # what follows the run failed: the stream ends short
                call.record.error_detail = str(exc)
                break
            pending = None
            if type(frame) is FinalFrame:
                await writer.end(frame)
                break
            await writer.write(frame)
    finally:
        leaving.cancel()
        if pending is not None:
            pending.cancel()
        with contextlib.suppress(Exception):
            await frames.aclose()  # type: ignore[attr-defined]
        if not writer.gone and not writer.complete:
            await writer.end(b"")


async def _disconnect(receive: Receive) -> bytes:
    """Returns (nothing to write) when the client has gone."""
    while (await receive())["type"] != "http.disconnect":
        pass
    return b""


async def continuing(handler: RouteHandler, call: Call, client: Dialect, turn: Turn) -> Turn:
    """A turn that continues a run, checked against it (see `RouteRuns.continuing`); any other as it is."""
    queries = client.capability(RunQueries)
    if queries is None or handler.runs is None:
        return turn
    try:
        return await handler.runs.continuing(call.caller.principal, queries, turn)
    except StoreError as exc:
        call.record.error_detail = str(exc)
        raise Overloaded(STORE_DOWN) from exc


async def watched(handler: RouteHandler, call: Call, client: Dialect, turn: Turn) -> WatchedRun | None:
    """The feed of a run its clients may ask about, claimed, and stopped by a cancel from any replica; None for a
    run of another dialect (or when the board could not be reached: the run goes on unwatched)."""
    queries = client.capability(RunQueries)
    if queries is None or handler.runs is None or not turn.run_id:
        return None
    try:
        run = await handler.runs.start(call.caller.principal, queries, turn)
    except StoreError as exc:
        log.warning("route %s: task %s cannot be followed from other replicas, the store failed: %s",
                    handler.route.name, turn.run_id, exc, extra={"route": handler.route.name,
                                                                 "request_id": call.request_id})
        return None
    run.tape.stop = call.stop
    call.writer.outlived = queries.resumes(turn)
    return run


def route_runs(handler: RouteHandler) -> RouteRuns | None:
    """The route's runs that clients ask about, if a dialect of the route has such clients."""
    if not any(registry.get(name).capability(RunQueries) is not None for name in handler.route.dialects):
        return None
    route = handler.route
    timeouts, limits, push = route.timeouts, route.limits, route.push
    webhooks = None if push is None else \
        RouteWebhooks(route.name, handler.mapper.store, allows=push.allows, max_webhooks=push.max_webhooks)
    pushes = None if push is None else \
        partial(_pushes, handler.pusher, push, route.name, PushOutcomes(handler.metrics, route.name))
    return RouteRuns(route.name, handler.board, RunRecords(handler.mapper.store), lifetime=timeouts.total,
                     patience=max(timeouts.first_event, timeouts.idle) + handler.keepalive,
                     max_entries=limits.max_resume_events, max_bytes=limits.max_resume_bytes, webhooks=webhooks,
                     pushes=pushes, leftovers=partial(handler.mapper.forget_chain, route.name))


def mount(handler: RouteHandler, mounted: Mounted) -> None:
    """Under each path where a dialect of the route with queries at paths reads requests: `<path>/{run_id}<suffix>`
    (Responses' `GET /v1/responses/{id}`, `POST .../cancel`)."""
    route = handler.route
    found: dict[str, dict[str, tuple[Dialect, RunPath]]] = {}
    for name in route.dialects:
        dialect = registry.get(name)
        queries = dialect.capability(RunQueries)
        if queries is None or not queries.paths:
            continue
        for path in route.served_paths:
            if name in registry.path_owners(route.dialects, path):
                for run_path in queries.paths:
                    at = path.rstrip("/") + "/{run_id}" + run_path.suffix
                    found.setdefault(at, {}).setdefault(run_path.method, (dialect, run_path))
    for at, by_method in found.items():
        mounted.by_method(at, {method: partial(query_at, handler, client=dialect, run_path=run_path)
                               for method, (dialect, run_path) in by_method.items()}, route.cors)


async def query_at(handler: RouteHandler, scope: Scope, receive: Receive, send: Send, client: Dialect,
                   run_path: RunPath) -> None:
    """A query at a path under the route's, the run's id in the path (`RunQueries.paths`): the caller
    identified, then answered as a query that came in a body is; refused in the client's dialect."""
    async with entered(handler, scope, send, client.name, traced=True) as call:
        call.writer.error_reply = client.errors_for(None)
        identify(call)
        run_id = scope["path_params"]["run_id"]
        if bad_id(run_id):
            raise InvalidRequest(f"a run id in the path must be at most {MAX_ID} characters, without control "
                                 "characters")
        if scope["method"] == "POST":
            check_content_type(call.headers)  # as for a run: a page on another origin cannot POST one unasked
        call.request_json = {}
        parameters = dict(QueryParams(scope.get("query_string", b"")))
        await answer(handler, call, receive, client, RunQuery(run_path.name, run_id, parameters))


def _pushes(pusher: Pusher, push: Push, route: str, outcomes: PushOutcomes, webhooks: CallerWebhooks,
            run_id: str) -> RunPush:
    return pusher.run(push, webhooks, run_id, route, outcomes)
