"""A resumable route's conversation endpoints: a conversation's running run followed, or stopped, by its id."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from starlette.datastructures import Headers
from starlette.types import Receive, Scope, Send

from adapters import registry
from gateway.conversations.store import StoreError
from gateway.core.errors import GatewayError, InvalidRequest, NoRunningRun, Overloaded
from gateway.core.validation import MAX_ID, bad_id
from gateway.server.operations.record import RequestOutcome
from gateway.server.request.call import Call
from gateway.server.request.reading import check_content_type
from gateway.server.request.request_ids import request_id_of
from gateway.server.stream import resume
from gateway.server.stream.resume import conversation_key

if TYPE_CHECKING:
    from gateway.server.route import RouteHandler


class ConversationEndpoints:
    """A resumable route's conversation endpoints, under each of its paths: `GET {path}/{conversation}/stream`
    sends the conversation's running run's reply from its start (the AI SDK's `resumeStream`), or from after
    `Last-Event-ID`, or 204 when no run is running; `DELETE` there, or `POST {path}/{conversation}/stop`, stops
    the run, whichever replica runs it."""

    def __init__(self, handler: RouteHandler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.handler
        headers = Headers(scope=scope)
        call = Call(handler, send, headers, request_id_of(headers))
        path, conversation = scope["path"], scope["path_params"]["conversation"]
        base = path.rpartition("/")[0].removesuffix(f"/{conversation}")  # the route's path, without .../{id}/stream
        call.record.note_request(scope, handler.reader.dialect_of_path(base))
        if handler.observer is not None:
            handler.observer.begin(call)
        handler.in_flight.inc()
        handler.drain.streams.add(call)
        record = call.record
        try:
            caller = call.caller = handler.access.identify(headers)
            record.key_id = caller.key_id
            if bad_id(conversation):
                raise InvalidRequest(f"a conversation id in the path must be at most {MAX_ID} characters, without "
                                     "control characters")
            record.conversation_id = conversation
            if scope["method"] == "POST":
                check_content_type(headers)  # as for a run: a page on another origin cannot POST one unasked
            key = conversation_key(handler.route.name, caller.principal, conversation)
            if scope["method"] == "GET":
                handler.access.admit(caller)
                call.release = partial(handler.access.release, caller)
                reply = await handler.board.running_in(key)
                if reply is None:
                    record.outcome = RequestOutcome.NO_RUN
                    await call.writer.respond(204, {}, b"")
                    return
                dialect = call.record.client_dialect  # the path's, when only one is served there
                await handler.resumable.follow(call, receive, reply, resume.last_event_id(headers) or 0,
                                     registry.get(dialect) if dialect != "unknown" else None)
                return
            if not await handler.board.stop_conversation(key):
                raise NoRunningRun(f"no run of conversation {conversation!r} is running")
            record.outcome = RequestOutcome.STOPPED
            await call.writer.respond(202, {"content-type": "application/json"}, b'{"stopped":true}')
        except GatewayError as error:
            await call.writer.fail_before_start(error)
        except StoreError as exc:
            record.error_detail = str(exc)
            await call.writer.fail_before_start(Overloaded("the gateway's store is unreachable: retry shortly"))
        finally:
            call.report()

