"""Requests at paths under a route's that start no run: a query at a run's own path (`RunQueries.paths`), and a
conversation's compaction (`Dialect.compaction`), answered here."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson
from starlette.datastructures import Headers, QueryParams
from starlette.types import Receive, Scope, Send

from gateway.conversations.store import StoreError
from gateway.core.codec import Dialect
from gateway.core.errors import GatewayError, InvalidRequest, Overloaded
from gateway.core.queries import RunPath, RunQuery
from gateway.core.validation import MAX_ID, bad_id, load_json_object
from gateway.server import queries
from gateway.server.bodies import ClientGone
from gateway.server.call import Call
from gateway.server.reading import check_content_type
from gateway.server.record import RequestOutcome
from gateway.server.request_ids import request_id_of

if TYPE_CHECKING:
    from gateway.server.route import RouteHandler


async def query_at(handler: RouteHandler, scope: Scope, receive: Receive, send: Send, client: Dialect,
                   run_path: RunPath) -> None:
    """A query at a path under the route's, the run's id in the path (`RunQueries.paths`): the caller
    identified, then answered as a query that came in a body is; refused in the client's dialect."""
    headers = Headers(scope=scope)
    call = Call(handler, send, headers, request_id_of(headers))
    call.record.note_request(scope, client.name)
    if handler.tracing is not None:
        call.trace = handler.tracing.start(headers, scope["path"], call.request_id, call.started_at)
        call.record.trace_id = call.trace.trace_id
    if client.error_reply is not None:
        reply = client.error_reply
        call.writer.error_reply = lambda error: reply(error, None)
    handler.in_flight.inc()
    handler.drain.streams.add(call)
    try:
        call.caller = handler.access.identify(headers)
        call.record.key_id = call.caller.key_id
        run_id = scope["path_params"]["run_id"]
        if bad_id(run_id):
            raise InvalidRequest(f"a run id in the path must be at most {MAX_ID} characters, without control "
                                 "characters")
        if scope["method"] == "POST":
            check_content_type(headers)  # as for a run: a page on another origin cannot POST one unasked
        call.request_json = {}
        parameters = dict(QueryParams(scope.get("query_string", b"")))
        await queries.answer(handler, call, receive, client, RunQuery(run_path.name, run_id, parameters))
    except GatewayError as error:
        await call.writer.fail_before_start(error)
    finally:
        call.report()




async def compact_at(handler: RouteHandler, scope: Scope, receive: Receive, send: Send, client: Dialect) -> None:
    """A request to compact a conversation (`Dialect.compaction`): the caller identified and its body read as
    for a run, the history it names found in the store; answered here, the upstream never asked."""
    assert client.compaction is not None
    headers = Headers(scope=scope)
    call = Call(handler, send, headers, request_id_of(headers))
    call.record.note_request(scope, client.name)
    call.record.client_dialect, call.record.outcome = client.name, RequestOutcome.COMPACTION
    if client.error_reply is not None:
        reply = client.error_reply
        call.writer.error_reply = lambda error: reply(error, None)
    handler.in_flight.inc()
    handler.drain.streams.add(call)
    try:
        caller = call.caller = handler.access.identify(headers)
        call.record.key_id = caller.key_id
        check_content_type(headers)
        body = await handler.reader.body(receive)
        turn = client.parse_request(load_json_object(body, handler.route.limits.max_json_depth))
        handler.reader.check_size(turn)
        history = turn.messages
        if turn.follows is not None:
            history = await handler.mapper.history_after(handler.route.name, caller.principal, turn.follows)
            history = history + turn.messages
        answer = client.compaction.answer(turn, history)
        await call.writer.respond(200, {"content-type": "application/json"}, orjson.dumps(answer))
    except ClientGone:
        call.record.outcome = RequestOutcome.CLIENT_GONE
    except GatewayError as error:
        await call.writer.fail_before_start(error)
    except StoreError as exc:
        call.record.error_detail = str(exc)
        await call.writer.fail_before_start(Overloaded("the gateway's store is unreachable: retry shortly"))
    finally:
        call.report()
