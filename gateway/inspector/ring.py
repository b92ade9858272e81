"""The runs the inspector keeps: the last `max_runs`, their captures within `max_bytes` in all.

Every run on a route gets an entry when it starts (its access record, read live: a dozen fields, nothing per event).
A run that starts while the page is watched (a live view is open, or was within `GRACE_SECONDS`) is also captured
(`gateway.recordings.capture`); others cost their events nothing.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from gateway.core.dropped import Dropped
from gateway.recordings.capture import Budget, RunCapture

if TYPE_CHECKING:
    from gateway.recordings.judged import Broken

GRACE_SECONDS = 10.0
"""How long after the last live view closed runs are still captured: a page that reloads misses nothing."""


class InspectedRun:
    """One run as the inspector lists it."""

    __slots__ = ("_dropped_now", "bodies", "capture", "dropped", "ended", "number", "record", "started", "violations")

    def __init__(self, number: int, record: Any, capture: RunCapture | None, bodies: bool,
                 dropped_now: Callable[[], dict[Dropped, int]] | None) -> None:
        self.number = number
        self.record = record
        """The run's access record (`gateway.server.operations.record.AccessRecord`): read as it fills in."""
        self.capture = capture
        self.bodies = bodies
        """The route lets the inspector show what was said (request bodies, frames, event fields)."""
        self.started = time.time()
        self.ended = False
        self.dropped: dict[str, int] = {}
        self._dropped_now = dropped_now
        """What the client's dialect has dropped so far, while the run runs."""
        self.violations: list[dict[str, Any]] | None = None
        """The rules the route's judge found the run broke, each with its side, the frame its judge numbers and the
        capture's row that holds it (`routes[].judge`); None: not judged."""

    def losses(self) -> dict[str, int]:
        if not self.ended and self._dropped_now is not None:
            return _plain(self._dropped_now())
        return self.dropped

    def judged(self, found: Iterable[Broken]) -> None:
        """What the route's judge found of the run, once it ended."""
        self.violations = [{"side": b.side, "dialect": b.dialect, "rule": b.violation.rule,
                            "message": b.violation.message, "frame": b.violation.index, "row": b.row} for b in found]
        if self.capture is not None:
            self.capture.version += 1  # a live view of the run shows it

    def end(self) -> None:
        if self._dropped_now is not None:
            self.dropped = _plain(self._dropped_now())
        self._dropped_now = None  # the run's objects are not kept past its end
        self.ended = True


def _plain(counts: dict[Dropped, int]) -> dict[str, int]:
    """The counts by kind as plain strings: the page's JSON takes no other key."""
    return {str(kind): count for kind, count in counts.items()}


class RunRing:
    """The inspector's runs, and whether anyone is watching."""

    def __init__(self, max_runs: int, max_bytes: int, always: bool = False) -> None:
        self.max_runs = max_runs
        self.budget = Budget(max_bytes, self._free)
        self.always = always
        self.runs: OrderedDict[int, InspectedRun] = OrderedDict()
        self._next = 1
        self.watchers = 0
        self.watched_until = 0.0

    @property
    def watched(self) -> bool:
        return self.always or self.watchers > 0 or time.monotonic() < self.watched_until

    def watch(self) -> None:
        self.watchers += 1

    def unwatch(self) -> None:
        self.watchers -= 1
        self.watched_until = time.monotonic() + GRACE_SECONDS

    def begin(self, record: Any, capture: RunCapture | None, bodies: bool,
              dropped_now: Callable[[], dict[Dropped, int]] | None = None) -> InspectedRun:
        run = InspectedRun(self._next, record, capture, bodies, dropped_now)
        self._next += 1
        self.runs[run.number] = run
        while len(self.runs) > self.max_runs:
            self._forget(next(iter(self.runs)))
        return run

    def get(self, number: int) -> InspectedRun | None:
        return self.runs.get(number)

    def __iter__(self) -> Iterator[InspectedRun]:
        return iter(reversed(self.runs.values()))

    def _forget(self, number: int) -> None:
        run = self.runs.pop(number)
        capture = run.capture
        if capture is not None and capture.budget is self.budget:
            self.budget.used -= capture.size
            capture.budget = None  # a run still going keeps counting against nothing of the ring's

    def _free(self) -> bool:
        """Drop the captures of the oldest ended runs until the ring is within its bytes; whether still over."""
        budget = self.budget
        for run in list(self.runs.values()):
            if budget.used <= budget.limit:
                break
            capture = run.capture
            if run.ended and capture is not None and capture.budget is budget:
                budget.used -= capture.size
                capture.budget = None
                run.capture = None
        return budget.used > budget.limit
