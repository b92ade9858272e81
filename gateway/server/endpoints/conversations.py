"""A resumable route's conversation endpoints: a conversation's running run followed, or stopped, by its id."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from starlette.types import Receive, Scope, Send

from adapters import registry
from gateway.core.errors import InvalidRequest, NoRunningRun
from gateway.core.turn import Turn
from gateway.core.validation import MAX_ID, bad_id
from gateway.server.operations.record import RequestOutcome
from gateway.server.request.call import Call
from gateway.server.request.entry import entered, identify
from gateway.server.request.reading import check_content_type
from gateway.server.stream import resume
from gateway.server.stream.resume import conversation_key

if TYPE_CHECKING:
    from gateway.server.route import RouteHandler


class ConversationEndpoints:
    """A resumable route's conversation endpoints, under each of its paths: `GET {path}/{conversation}/stream`
    sends the conversation's running run's reply from its start (the AI SDK's `resumeStream`), or 204 when no run
    is running; with `Last-Event-ID`, its last run's from after that id, ended or not while it is kept. `DELETE`
    there, or `POST {path}/{conversation}/stop`, stops the run, whichever replica runs it."""

    def __init__(self, handler: RouteHandler) -> None:
        self.handler = handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        handler = self.handler
        path, conversation = scope["path"], scope["path_params"]["conversation"]
        base = path.rpartition("/")[0].removesuffix(f"/{conversation}")  # the route's path, without .../{id}/stream
        async with entered(handler, scope, send, handler.reader.dialect_of_path(base), observed=True) as call:
            await self._answer(call, scope, receive, conversation)

    async def _answer(self, call: Call, scope: Scope, receive: Receive, conversation: str) -> None:
        handler, headers, record = self.handler, call.headers, call.record
        caller = identify(call)
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
            after = resume.last_event_id(headers)  # a position in the run: its last run, ended or not, will do
            reply = await (handler.board.running_in(key) if after is None else handler.board.kept_in(key))
            if reply is None:
                record.outcome = RequestOutcome.NO_RUN
                await call.writer.respond(204, {}, b"")
                return
            dialect = record.client_dialect  # the path's, when only one is served there
            after = after or 0
            if dialect == "unknown":
                await handler.resumable.follow(call, receive, reply, after)
            else:  # in the path's dialect, whichever dialect's client started the run
                turn = Turn(conversation_id=conversation, accept=headers.get("accept"))
                await handler.resumable.follow_in(call, receive, reply, registry.get(dialect), turn, after)
            return
        if not await handler.board.stop_conversation(key):
            raise NoRunningRun(f"no run of conversation {conversation!r} is running")
        record.outcome = RequestOutcome.STOPPED
        await call.writer.respond(202, {"content-type": "application/json"}, b'{"stopped":true}')
