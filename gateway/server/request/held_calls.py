"""The upstream calls a route holds open while the client answers what the upstream asked in their middle
(`HeldCalls`: MCP 2025's elicitation, where the tool waits on the call's stream): one per question asked, in the
process, bounded in number and by a deadline.

```
run ends interrupted, its interrupts' states say the call waits ──▶ hold(response, by the interrupt ids)
answer's turn names a held interrupt ──▶ take ──▶ the dialect's answering requests ──▶ the held response, read on
                                     └─ not held here (another replica, past its deadline) ──▶ ResumeUnavailable
deadline, or the oldest when full ──▶ the upstream told the call is cancelled, the response closed
```
A held call is one open connection to the upstream's server and cannot move between replicas: an answer that
reaches another replica is refused with an error that says to ask again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass, field

from gateway.core.capabilities import HeldCalls
from gateway.core.codec import Dialect, UpstreamRequest
from gateway.core.errors import GatewayError, ResumeUnavailable, UpstreamError, UpstreamRefused
from gateway.core.events import Interrupt
from gateway.core.turn import Resume
from gateway.server.request.discovery import SideCalls
from gateway.server.request.upstream_sessions import KeptSession
from gateway.upstream.http1 import HTTPError, Response, Target

log = logging.getLogger("agent_gateway.held_calls")

MAX_HELD = 64
"""Calls a route holds open at once: the oldest is given up when another comes. Each holds a connection to the
upstream: at most half of `upstream.max_connections`, when set, so that answers and other runs still get one."""
MAX_HOLD_SECONDS = 600.0
"""The longest a call is held, whatever the route's total timeout."""
_ANSWER_SECONDS = 30.0
"""How long the upstream has to answer a request that gives it the client's answers (MCP answers such a POST at
once, 202): past it the answers count as not sent, and the client is told so."""
_DRAIN_SECONDS = 0.5
"""How long to wait for the end of the upstream's answer to a request sent alongside a held call, so its connection
can be used again; past that the connection is closed."""


@dataclass(slots=True, eq=False)
class Held:
    """A call whose upstream waits for the client's answer: its open response, the request it answers, and where
    and how it was sent."""

    response: Response
    request: UpstreamRequest
    target: Target
    headers: dict[str, str]
    ids: list[str]
    session: KeptSession | None = None
    """The upstream's session the call is in (`UpstreamSessions`), left as the call is answered or given up."""
    expiry: asyncio.TimerHandle | None = field(default=None)


class HeldUpstreamCalls:
    """A route's calls held open, by the interrupts they wait on."""

    def __init__(self, capability: HeldCalls, upstream: Dialect, side_calls: SideCalls, seconds: float,
                 most: int = MAX_HELD) -> None:
        self.capability = capability
        self.upstream = upstream
        self.side_calls = side_calls
        self.seconds = min(seconds, MAX_HOLD_SECONDS)
        self.most = most
        self.held: OrderedDict[str, Held] = OrderedDict()

    async def answer(self, resumes: list[Resume]) -> Held | GatewayError | None:
        """The held call a turn's answers `resumes` are for, once its upstream has been sent them: its response is
        the turn's reply. None when they answer no held call; the error to tell the client when the call is not held
        here (another replica holds it, or it was given up) or the upstream refused the answers."""
        waiting = [r for r in resumes if self.capability.waits(r.upstream_state)]
        if not waiting:
            return None
        held = self._take([r.interrupt_id for r in waiting])
        if held is None:
            return ResumeUnavailable(
                "the agent's question is no longer open on this gateway: its call was held by another of the "
                "gateway's processes, or given up after its deadline; ask again")
        for request in self.capability.answers(waiting):
            status = await self._send_aside(request, held)
            if status is None or status >= 300:
                held.response.release()
                return UpstreamRefused(status) if status is not None else UpstreamError(
                    "the upstream could not be sent the answer to its question")
        return held

    def hold_for(self, interrupts: list[Interrupt], response: Response, request: UpstreamRequest, target: Target,
                 headers: dict[str, str], session: KeptSession | None = None) -> bool:
        """Whether a run that ended on `interrupts` waits for their answers on its very call: the call is then held
        open for them, not read on nor released, and stays in its `session` till then."""
        ids = [i.id for i in interrupts if self.capability.waits(i.upstream_state)]
        if not ids:
            return False
        self._hold(Held(response, request, target, dict(headers), ids, session))
        return True

    def _hold(self, held: Held) -> None:
        for id_ in held.ids:
            self.held[id_] = held
        held.expiry = asyncio.get_running_loop().call_later(self.seconds, self._give_up, held, "its deadline passed")
        while self.held and len({id(h) for h in self.held.values()}) > self.most:
            self._give_up(next(iter(self.held.values())), "more calls were held than a route holds")

    def _take(self, ids: list[str]) -> Held | None:
        """The call the interrupts `ids` wait on, no longer held; None when this process holds none."""
        held = next((self.held[id_] for id_ in ids if id_ in self.held), None)
        if held is not None:
            self._forget(held)
        return held

    async def _send_aside(self, request: UpstreamRequest, held: Held) -> int | None:
        """The status of the upstream's answer to a request sent alongside a held call; None when it gave none."""
        try:
            async with asyncio.timeout(_ANSWER_SECONDS):
                response = await self.side_calls.pool.request(request.method, held.target, request.body,
                                                              {**held.headers, **request.headers}, request.path)
        except (HTTPError, TimeoutError):
            return None
        try:
            await response.drain(_DRAIN_SECONDS)
        finally:
            response.release()
        return response.status

    def _forget(self, held: Held) -> None:
        for id_ in held.ids:
            self.held.pop(id_, None)
        if held.expiry is not None:
            held.expiry.cancel()
        if held.session is not None:
            held.session.leave()
            held.session = None

    def _give_up(self, held: Held, why: str) -> None:
        """Stop holding a call nobody answered: the upstream is told it is cancelled, and its response closed."""
        self._forget(held)
        decoder = self.upstream.new_decoder()
        decoder.sent(held.request)
        cancel = decoder.cancel_request()
        if cancel is not None:
            self.side_calls.send(held.target, cancel, held.headers, f"a held call given up ({why})")
        held.response.release()  # not read to its end: the connection is closed
        log.info("a call held for the client's answer was given up: %s", why)


def held_for(upstream: Dialect, side_calls: SideCalls, seconds: float, max_connections: int | None
             ) -> HeldUpstreamCalls | None:
    """A route's held calls, when its upstream's dialect holds any."""
    capability = upstream.capability(HeldCalls)
    if capability is None:
        return None
    most = MAX_HELD if max_connections is None else min(MAX_HELD, max_connections // 2)
    return HeldUpstreamCalls(capability, upstream, side_calls, seconds, most)
