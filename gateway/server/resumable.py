"""A resumable route's runs: each new run's reply kept on the run board as it is written, and a client that
asks again for a run that is running (a retry, or a reconnect with `Last-Event-ID`) sent that run's reply."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.datastructures import Headers
from starlette.types import Receive

from gateway.conversations.store import StoreError
from gateway.core.capabilities import EventIds
from gateway.core.codec import Dialect
from gateway.core.errors import GatewayError, Overloaded, ResumeUnavailable
from gateway.core.events import RunError
from gateway.core.ids import new_id
from gateway.core.turn import Turn
from gateway.runs.tape import RunReply, Tape, TapeBroken, TapeLost
from gateway.server.operations.record import RequestOutcome
from gateway.server.stream import resume
from gateway.server.stream.deadlines import watch_disconnect
from gateway.server.stream.resume import conversation_key
from gateway.server.stream.translated import TranslatedReply

if TYPE_CHECKING:
    from gateway.server.request.call import Call
    from gateway.server.route import RouteHandler


log = logging.getLogger("agent_gateway.proxy")


class ResumableRuns:
    """The runs of one resumable route: claimed on the board, or followed there."""

    def __init__(self, handler: RouteHandler) -> None:
        self.handler = handler

    async def run(self, call: Call, receive: Receive, client: Dialect, turn: Turn, headers: Headers, key: str
                  ) -> None:
        """A run on a resumable route: a request for a run that is running (a retry, or a client reconnecting
        with `Last-Event-ID`) is sent that run's reply; any other is a new run whose reply is kept. A request with
        `Last-Event-ID` for a run not kept follows its conversation's last run (running, or ended and still kept),
        when another dialect's client started it, as the client's own dialect writes it (without the header, a
        request is a new run, as ever). `key` names the run (`resume.run_key`)."""
        handler = self.handler
        route, principal = handler.route, call.caller.principal
        after: int | None = None
        try:
            after = resume.last_event_id(headers)
            conversation = turn.conversation_id
            if after is not None:  # the client had part of the reply: only the rest will do, never a second run
                reply = await handler.board.find(key)
                if reply is not None:
                    await self.follow(call, receive, reply, after, client)
                    return
                if conversation:  # a run of its conversation another dialect's client started, as it follows it
                    reply = await handler.board.kept_in(conversation_key(route.name, principal, conversation))
                if reply is None:
                    raise ResumeUnavailable(resume.NOT_KEPT)
                await self.follow_in(call, receive, reply, client, turn, after, foreign=True)
                return
            tape = Tape(key, event_ids=client.capability(EventIds) is not None,
                        max_entries=route.limits.max_resume_events, max_bytes=route.limits.max_resume_bytes,
                        keep=route.timeouts.resume_keep,
                        conversation=conversation_key(route.name, principal, conversation) if conversation else None,
                        owner=principal, dialect=client.name, run_id=turn.run_id or new_id("run"))
            running = await handler.board.claim(tape, route.timeouts.total)
        except GatewayError as error:
            await call.writer.fail_before_start(error)
            return
        except StoreError as exc:
            if after is not None:  # the client had part of a reply: a second run is never the answer
                call.record.error_detail = str(exc)
                await call.writer.fail_before_start(Overloaded("the gateway's store is unreachable: retry shortly"))
                return
            log.warning("route %s: the run is not resumable, the store failed: %s", route.name, exc,
                        extra={"route": route.name, "request_id": call.request_id})
            await handler.admitted(call, receive, client, turn)
            return
        except Exception:
            log.exception("route %s: the run is not resumable, the gateway failed to claim it", route.name,
                          extra={"route": route.name, "request_id": call.request_id})
            await handler.admitted(call, receive, client, turn)
            return
        if running is not None:
            await self.follow(call, receive, running, 0, client)
            return
        call.writer.record_on(tape)
        tape.stop = call.stop
        try:
            await handler.admitted(call, receive, client, turn)
        finally:
            handler.board.finish(tape)

    async def follow_in(self, call: Call, receive: Receive, reply: RunReply, client: Dialect, turn: Turn,
                        after: int, *, rewrite: bool = False, foreign: bool = False) -> None:
        """Send a client a run's reply as its own dialect writes it, whichever dialect's client started the run
        (`turn`: what its reply is written for); `after`, its position in that reply. A reply in the client's
        own dialect is sent as it is, unless `rewrite`; refused as not kept when `foreign` (see `TranslatedReply`)."""
        translated = TranslatedReply(reply, client, turn, max_event_bytes=self.handler.route.limits.max_event_bytes,
                                     rewrite=rewrite, foreign=foreign)
        await self.follow(call, receive, translated, after, client)

    async def follow(self, call: Call, receive: Receive, reply: RunReply, after: int,
                     client: Dialect | None = None) -> None:
        """Send a client a run's reply from the board instead of running it again; `client`, its dialect when
        known, ends a reply lost midway (its replica died) with the dialect's own error."""
        call.record.outcome = RequestOutcome.RESUMED
        deadlines = call.deadlines
        deadlines.guard(asyncio.current_task())
        stop_watching = watch_disconnect(receive, call.writer, deadlines)
        try:
            timeouts, keepalive = self.handler.route.timeouts, self.handler.keepalive
            patience = max(timeouts.first_event, timeouts.idle) + keepalive
            await resume.follow(reply, call.writer, after, keepalive, patience,
                                _lost_run_error(client) if client is not None else None)
        except TapeLost:
            await call.writer.fail_before_start(ResumeUnavailable(resume.NOT_KEPT))
        except asyncio.CancelledError:
            ending = deadlines.ending()
            if ending is None:
                raise
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            if ending.error is not None and call.writer.started:  # the process is stopping
                await call.writer.end(b"")  # no end of the run: the client may come back to another replica
            elif ending.error is not None:
                await call.writer.fail_before_start(ending.error)
        finally:
            stop_watching()


def _lost_run_error(client: Dialect) -> Callable[[dict[str, str], TapeLost], bytes]:
    """The client dialect's error for a run lost midway, written as the run's reply is: in the wire format its head
    says (AG-UI's protobuf or SSE), whatever the follower asked for."""

    def lost(headers: dict[str, str], how: TapeLost) -> bytes:
        wire = Turn(accept=headers.get("content-type"))
        message = resume.BROKEN if isinstance(how, TapeBroken) else resume.LOST
        return client.new_encoder(wire).encode([RunError(message, code="resume_unavailable")])

    return lost

