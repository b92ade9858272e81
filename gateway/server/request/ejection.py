"""Which of a route's upstreams are out of service: an upstream that failed `eject_after` runs in a row is skipped
for `eject_for` seconds (ejected), then one run tries it again; its success puts it back, its failure ejects it
again. Kept per process, and shared by the replicas when their store is Redis (`SharedEjection`); `/readyz` names
the ejected ones."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from gateway.server.request.shared_ejection import SharedEjection


@dataclass(slots=True)
class _Health:
    failures: int = 0
    """Runs in a row it failed."""
    ejected_until: float = 0.0
    """Until when it is skipped (monotonic); 0: in service."""
    trial_until: float = 0.0
    """While one run tries it again after its ejection, until when the others still skip it."""


class Ejection:
    """The health of one route's upstreams, by name."""

    def __init__(self, after: int, seconds: float, shown: Callable[[str, bool], None] = lambda name, out: None,
                 clock: Callable[[], float] = time.monotonic, shared: SharedEjection | None = None) -> None:
        self.after = after
        self.seconds = seconds
        self._shown = shown
        """Told each time an upstream is ejected (True) or back in service (False): the gauge."""
        self._clock = clock
        self._health: dict[str, _Health] = {}
        self._shared = shared
        self._failing: set[str] = set()
        """The upstreams another replica saw fail, when last looked."""

    async def look(self, names: list[str]) -> None:
        """Take in what the other replicas saw, when it is time to look again (before a run)."""
        if self._shared is None or (seen := await self._shared.look(names)) is None:
            return
        ejected, self._failing = seen
        now = self._clock()
        for name, left in ejected.items():
            health = self._health.setdefault(name, _Health(failures=self.after))
            if health.ejected_until == 0.0:
                self._shown(name, True)
            health.ejected_until = max(health.ejected_until, now + left)

    async def admits(self, name: str) -> bool:
        """Whether a run may try the upstream now: it is in service, or its ejection is over and no other run, on
        any replica, is trying it again (this one then does)."""
        health = self._health.get(name)
        if health is None or health.ejected_until == 0.0:
            return True
        now = self._clock()
        if now < health.ejected_until or now < health.trial_until:
            return False
        health.trial_until = now + self.seconds
        return self._shared is None or await self._shared.may_try(name)

    async def failed(self, name: str) -> None:
        """A run failed at the upstream before its first event."""
        health = self._health.setdefault(name, _Health())
        health.failures += 1
        health.trial_until = 0.0
        shared = self._shared is not None and await self._shared.failed(name)
        if health.failures >= self.after or shared:
            if health.ejected_until == 0.0:
                self._shown(name, True)
            health.ejected_until = self._clock() + self.seconds

    async def succeeded(self, name: str) -> None:
        """The upstream answered a run: it is in service."""
        health = self._health.get(name)
        if self._shared is not None and (health is not None or name in self._failing):
            self._failing.discard(name)
            await self._shared.succeeded(name)
        if health is None:
            return
        if health.ejected_until != 0.0:
            self._shown(name, False)
        del self._health[name]

    def ejected(self) -> list[str]:
        """The upstreams skipped now."""
        now = self._clock()
        return [name for name, health in self._health.items() if now < health.ejected_until]
