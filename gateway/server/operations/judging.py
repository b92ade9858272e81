"""A route's runs judged live (`judge:`): a sampled run is captured (`observed.Observer`), and once its last byte has
gone its two sides are judged in a thread by their dialects' rules (`gateway.recordings.judged`). Each broken rule is
counted, and a run's are logged in one line, so the client never waits for a judge.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable

from gateway.recordings.capture import RunCapture
from gateway.recordings.judged import Broken, judge_run
from gateway.recordings.options import JudgeOptions
from gateway.server.operations.metrics import Metrics

log = logging.getLogger("agent_gateway.conformance")
MAX_PENDING = 16
"""A route's runs waiting for their judge at most: while that many wait, no run is sampled (none is captured for
a judge that cannot keep up)."""


class Judging:
    """One route's judge: which runs it samples, and what it makes of each."""

    def __init__(self, route: str, options: JudgeOptions, metrics: Metrics) -> None:
        self.route = route
        self.options = options
        self.metrics = metrics
        self._pending: set[asyncio.Task[None]] = set()
        """Judgements under way: held, as the loop keeps only weak references to tasks."""

    def sampled(self) -> bool:
        return len(self._pending) < MAX_PENDING and random.random() < self.options.sample

    def judge(self, capture: RunCapture, request_id: str, client_dialect: str, upstream_dialect: str,
              then: Callable[[list[Broken]], None] | None = None) -> None:
        """Judge a run whose last byte has gone, off the loop; what it found is counted and logged when done, and
        given to `then` (the inspector's line of the run)."""
        task = asyncio.get_running_loop().create_task(
            self._judged(capture, request_id, client_dialect, upstream_dialect, then))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def _judged(self, capture: RunCapture, request_id: str, client_dialect: str, upstream_dialect: str,
                      then: Callable[[list[Broken]], None] | None) -> None:
        try:
            found = await asyncio.to_thread(judge_run, capture, client_dialect, upstream_dialect)
        except Exception:  # a judge that fails on a reply is the judge's bug, never the run's
            log.exception("route %s: the run %s could not be judged", self.route, request_id,
                          extra={"route": self.route, "request_id": request_id})
            return
        if found is None:
            return
        for broken in found:
            self.metrics.violations.labels(self.route, broken.side, broken.dialect, broken.violation.rule).inc()
        if found:
            # What only the documents ask, and no client enforces (`convention-...`), is no warning.
            level = logging.WARNING if any(not b.violation.convention for b in found) else logging.INFO
            log.log(level, "route %s: the run %s broke %d rule%s of its dialects: %s", self.route, request_id,
                    len(found), "s" * (len(found) != 1), "; ".join(_described(b) for b in found),
                    extra={"route": self.route, "request_id": request_id,
                           "rules": sorted({f"{b.side}:{b.violation.rule}" for b in found})})
        if then is not None:
            then(found)
        self.metrics.judged.labels(self.route).inc()  # last: what the run broke is counted and logged by now


def _described(broken: Broken) -> str:
    violation = broken.violation
    where = f" (frame {violation.index})" if violation.index is not None else ""
    return f"{broken.side} {broken.dialect} {violation.rule}{where}: {violation.message}"
