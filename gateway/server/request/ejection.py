"""Which of a route's upstreams are out of service: an upstream that failed `eject_after` runs in a row is skipped
for `eject_for` seconds (ejected), then one run tries it again; its success puts it back, its failure ejects it
again. Kept per process; `/readyz` names the ejected ones."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


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
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.after = after
        self.seconds = seconds
        self._shown = shown
        """Told each time an upstream is ejected (True) or back in service (False): the gauge."""
        self._clock = clock
        self._health: dict[str, _Health] = {}

    def admits(self, name: str) -> bool:
        """Whether a run may try the upstream now: it is in service, or its ejection is over and no other run is
        trying it again (this one then does)."""
        health = self._health.get(name)
        if health is None or health.ejected_until == 0.0:
            return True
        now = self._clock()
        if now < health.ejected_until or now < health.trial_until:
            return False
        health.trial_until = now + self.seconds
        return True

    def failed(self, name: str) -> None:
        """A run failed at the upstream before its first event."""
        health = self._health.setdefault(name, _Health())
        health.failures += 1
        health.trial_until = 0.0
        if health.failures >= self.after:
            if health.ejected_until == 0.0:
                self._shown(name, True)
            health.ejected_until = self._clock() + self.seconds

    def succeeded(self, name: str) -> None:
        """A run's first event came from the upstream: it is in service."""
        health = self._health.get(name)
        if health is None:
            return
        if health.ejected_until != 0.0:
            self._shown(name, False)
        del self._health[name]

    def ejected(self) -> list[str]:
        """The upstreams skipped now."""
        now = self._clock()
        return [name for name, health in self._health.items() if now < health.ejected_until]
