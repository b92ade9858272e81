"""Webhooks that hang, left alone for a while: an origin (scheme, host and port: what hangs) whose deliveries timed
out twice in a row is not called for the route's `push.cool_off`, so that a webhook that accepts and never answers
costs its callers two timeouts rather than a timeout per notification and retry. Per process: each replica finds
out for itself."""

from __future__ import annotations

import logging
import time
from typing import TypeVar

from gateway.runs.webhooks import Origin

log = logging.getLogger("agent_gateway.push")
_V = TypeVar("_V")

TIMEOUTS_IN_A_ROW = 2
MAX_ORIGINS = 10_000
"""Origins remembered at once (timed out lately, or cooling off); past it the longest-known is forgotten."""


class CoolOff:
    """The origins that timed out lately, and those cooling off until when."""

    def __init__(self) -> None:
        self._timeouts: dict[Origin, int] = {}
        """Timeouts in a row, by origin."""
        self._until: dict[Origin, tuple[float, str]] = {}
        """When each cooling origin may be called again, and the route that found it hung."""

    def cooling(self, origin: Origin) -> bool:
        """Whether `origin` is left alone now (the first call after its cool-off ends logs that it is called
        again)."""
        found = self._until.get(origin)
        if found is None:
            return False
        until, route = found
        if time.monotonic() < until:
            return True
        del self._until[origin]
        log.info("route %s: push notifications to %s are sent again, its cool-off over", route, origin,
                 extra={"route": route})
        return False

    def timed_out(self, origin: Origin, seconds: float, route: str) -> None:
        """Count a delivery to `origin` that got no answer in time: the second in a row starts its cool-off
        (logged)."""
        if origin in self._until:
            return
        count = self._timeouts.pop(origin, 0) + 1
        if count < TIMEOUTS_IN_A_ROW:
            _remember(self._timeouts, origin, count)
            return
        _remember(self._until, origin, (time.monotonic() + seconds, route))
        log.warning("route %s: push notifications to %s timed out %d times in a row: none are sent there for %g s "
                    "(those due meanwhile are dropped)", route, origin, count, seconds, extra={"route": route})

    def answered(self, origin: Origin) -> None:
        """A delivery to `origin` ended otherwise than in a timeout: the row is broken."""
        self._timeouts.pop(origin, None)


def _remember(found: dict[Origin, _V], origin: Origin, value: _V) -> None:
    found[origin] = value
    if len(found) > MAX_ORIGINS:
        del found[next(iter(found))]
