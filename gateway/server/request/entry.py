"""What every request of a route goes through, whichever entry point takes it (the route's POST, a query at a path
under it, an answer a dialect gives itself, a resumable route's conversation endpoints): its `Call` made, counted in
flight and among the exchanges the drain waits for, its caller identified, an error before the reply written in the
client's dialect, and the request reported once at the end.

```
async with entered(handler, scope, send, dialect) as call:   # the call made, in flight, in the drain
    caller = identify(call)                                    # who asks: a key's id, a principal
    ...                                                        # the entry point's own work
                                                               # a refusal written (ClientGone, GatewayError,
                                                               # StoreError); the report, once
```
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING

from starlette.datastructures import Headers
from starlette.types import Scope, Send

from gateway.conversations.store import StoreError
from gateway.core.errors import GatewayError, Overloaded
from gateway.server.connections.bodies import ClientGone
from gateway.server.operations.record import RequestOutcome
from gateway.server.request.access import Caller
from gateway.server.request.call import Call
from gateway.server.request.request_ids import request_id_of

if TYPE_CHECKING:
    from gateway.server.route import RouteHandler

STORE_DOWN = "the gateway's store is unreachable: retry shortly"


def entered(handler: RouteHandler, scope: Scope, send: Send, dialect: str, *, observed: bool = False,
            traced: bool = False) -> Entered:
    """A request of `handler`'s route as a `Call`, `dialect` named in its access line (or "unknown"); `observed`:
    shown by the inspector and recorded (a run, or a run followed), `traced`: given spans (a run, a query)."""
    headers = Headers(scope=scope)
    call = Call(handler, send, headers, request_id_of(headers))
    call.record.note_request(scope, dialect)
    if observed and handler.observer is not None:
        handler.observer.begin(call)
    if traced and handler.tracing is not None:
        call.trace = handler.tracing.start(headers, scope["path"], call.request_id, call.started_at)
        call.record.trace_id = call.trace.trace_id  # left out of the log line when None
    handler.in_flight.inc()
    handler.drain.streams.add(call)
    return Entered(call)


class Entered:
    """The call of `entered` while the entry point works on it: a refusal it raises is written in the client's
    dialect, and the request reported once. A class, not a generator: every request goes through it."""

    __slots__ = ("call",)

    def __init__(self, call: Call) -> None:
        self.call = call

    async def __aenter__(self) -> Call:
        return self.call

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        traceback: TracebackType | None) -> bool:
        call = self.call
        try:
            if isinstance(error, ClientGone):
                call.record.outcome = RequestOutcome.CLIENT_GONE
            elif isinstance(error, GatewayError):  # its HTTP status before the reply starts; in band after
                await call.writer.abort(error, error.code)
            elif isinstance(error, StoreError):
                call.record.error_detail = str(error)
                store_down = Overloaded(STORE_DOWN)
                await call.writer.abort(store_down, store_down.code)
            else:
                return False
            return True
        finally:
            call.report()  # once: usually already done as the last byte went out


def identify(call: Call) -> Caller:
    """Who is calling, by the key it presents or the route's tenant header: no slot is taken (see `Access`)."""
    caller = call.caller = call.handler.access.identify(call.headers)
    call.record.key_id = caller.key_id
    return caller
