"""Push notifications: a run's updates POSTed to the webhooks its clients registered, by the replica running it.

```
run's update ─offer─▶ the run's queue ─▶ one task per run: for each update, for each webhook (read from the store,
   (bounded per principal        again at most every second), POST with the webhook's headers (a principal's
    and per process)             deliveries in flight bounded); a connection error, a 5xx or a 429 is retried
                                 with backoff, and a webhook that timed out twice in a row is left alone a while
```

Deliveries never slow the run: an update is queued and the run goes on. Bounded: the process holds at most
`max_pending` notifications waiting, and each principal its share of them (past either, its new ones are dropped,
and logged), a principal has at most `max_deliveries_per_principal` in flight, a webhook gets at most
`max_notifications` of one run, an update larger than `max_bytes` is not sent, every delivery has
`delivery_timeout`, and a webhook's origin that timed out twice in a row is skipped for `cool_off`
(`gateway.server.endpoints.cool_off`). So one principal whose webhooks hang cannot keep another's waiting.
Only a host and port the route allows is called (checked when the webhook is registered, and again before each
delivery), and no redirect is followed.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import AsyncIterator

from gateway.config import Push
from gateway.conversations.store import StoreError
from gateway.core.queries import Webhook
from gateway.runs.webhooks import CallerWebhooks, Origin, origin_of
from gateway.server.endpoints.cool_off import CoolOff
from gateway.server.operations.metrics import PushOutcomes
from gateway.upstream.http1 import ConnectTimeout, HTTPError, Pool, Target

log = logging.getLogger("agent_gateway.push")

RELOAD_SECONDS = 1.0
"""How stale the list of a run's webhooks may be: one registered meanwhile gets the updates after it."""
FIRST_RETRY_SECONDS = 0.5

Owner = tuple[str, str]
"""A principal on a route: whose share of the process's deliveries a notification takes."""


class Shares:
    """What the process's principals hold of its deliveries: notifications waiting, and deliveries in flight."""

    def __init__(self) -> None:
        self.pending = 0
        """Notifications queued in this process and not yet delivered (or given up), every principal's."""
        self._pending: collections.Counter[Owner] = collections.Counter()
        self._delivering: dict[Owner, tuple[asyncio.Semaphore, int]] = {}
        """Each principal's delivery slots, and how many of its deliveries hold or wait for one."""

    def admit(self, owner: Owner, settings: Push) -> str | None:
        """Count one more notification of `owner`'s waiting; or, when the process or its share is full, say which."""
        if self.pending >= settings.max_pending:
            return f"{self.pending} push notifications are waiting in this process"
        if self._pending[owner] >= settings.pending_share:
            return f"{owner[1]} has {self._pending[owner]} push notifications waiting in this process, its share"
        self.pending += 1
        self._pending[owner] += 1
        return None

    def release(self, owner: Owner, count: int = 1) -> None:
        """`count` of `owner`'s notifications no longer wait."""
        if not count:
            return
        self.pending -= count
        self._pending[owner] -= count
        if self._pending[owner] <= 0:
            del self._pending[owner]

    @contextlib.asynccontextmanager
    async def delivering(self, owner: Owner, limit: int) -> AsyncIterator[None]:
        """Hold one of `owner`'s `limit` delivery slots, waiting for one while its others are all in flight."""
        semaphore, users = self._delivering.get(owner) or (asyncio.Semaphore(limit), 0)
        self._delivering[owner] = semaphore, users + 1
        try:
            async with semaphore:
                yield
        finally:
            semaphore, users = self._delivering[owner]
            if users > 1:
                self._delivering[owner] = semaphore, users - 1
            else:
                del self._delivering[owner]


class Pusher:
    """The process's deliveries, for every route that pushes, on the gateway's own HTTP client (which follows no
    redirect, and here no environment proxy: the allowed hosts are called directly)."""

    def __init__(self, pool: Pool | None = None) -> None:
        self.pool = pool or Pool()
        self.shares = Shares()
        self.cool_off = CoolOff()
        self._running: set[asyncio.Task[None]] = set()

    def run(self, settings: Push, webhooks: CallerWebhooks, run_id: str, route: str,
            outcomes: PushOutcomes) -> RunPush:
        return RunPush(self, settings, webhooks, run_id, route, outcomes)

    def keep(self, task: asyncio.Task[None]) -> None:
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def close(self) -> None:
        for task in list(self._running):
            task.cancel()

    async def post(self, url: str, body: bytes, headers: dict[str, str], timeout: float) -> int:
        """POST and read the answer's status (raises `HTTPError`, `TimeoutError` or `ValueError` for a URL that is
        none)."""
        async with asyncio.timeout(timeout):
            response = await self.pool.post(Target(url, timeout), body, headers)
            try:
                await response.drain(timeout)
            finally:
                response.release()
        return response.status


class RunPush:
    """One run's deliveries: its updates, in order, to each of its webhooks."""

    __slots__ = (
        "_dropped",
        "_known",
        "_loaded_at",
        "_outcomes",
        "_owner",
        "_pusher",
        "_queue",
        "_route",
        "_run_id",
        "_sent",
        "_settings",
        "_task",
        "_webhooks",
    )

    def __init__(self, pusher: Pusher, settings: Push, webhooks: CallerWebhooks, run_id: str, route: str,
                 outcomes: PushOutcomes) -> None:
        self._pusher = pusher
        self._settings = settings
        self._webhooks = webhooks
        self._run_id = run_id
        self._route = route
        self._owner: Owner = (route, webhooks.principal)
        self._outcomes = outcomes
        self._queue: collections.deque[bytes] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._known: list[Webhook] = []
        self._loaded_at = 0.0
        self._sent: collections.Counter[str] = collections.Counter()
        self._dropped = False

    def offer(self, update: bytes) -> None:
        """Queue an update for the run's webhooks (dropped, once logged, when the process or the caller's share
        holds too many)."""
        full = self._pusher.shares.admit(self._owner, self._settings)
        if full is not None:
            self._outcomes.dropped.inc()
            if not self._dropped:
                log.warning("route %s: task %s: %s; dropping new ones", self._route, self._run_id, full,
                            extra={"route": self._route})
                self._dropped = True
            return
        self._queue.append(update)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._deliver())
            self._pusher.keep(self._task)

    async def _deliver(self) -> None:
        shares = self._pusher.shares
        try:
            while self._queue:
                update = self._queue.popleft()
                try:
                    for webhook in await self._current():
                        await self._send(webhook, update)
                finally:
                    shares.release(self._owner)
        finally:
            shares.release(self._owner, len(self._queue))
            self._queue.clear()
            self._task = None

    async def _current(self) -> list[Webhook]:
        if time.monotonic() - self._loaded_at >= RELOAD_SECONDS:
            try:
                self._known = await self._webhooks.all(self._run_id)
            except StoreError as exc:
                log.warning("route %s: task %s: its webhooks could not be read: %s", self._route, self._run_id, exc,
                            extra={"route": self._route})
            self._loaded_at = time.monotonic()
        return self._known

    async def _send(self, webhook: Webhook, update: bytes) -> None:
        settings = self._settings
        origin = origin_of(webhook.url)
        if origin is None or self._sent[webhook.id] >= settings.max_notifications or len(update) > settings.max_bytes \
                or not settings.allows(origin.host, origin.port):
            return
        self._sent[webhook.id] += 1
        headers = {**webhook.headers, "content-type": "application/json"}
        wait = FIRST_RETRY_SECONDS
        for attempt in range(settings.retries + 1):
            if attempt:
                if self._pusher.cool_off.cooling(origin):  # no retry is awaited for a webhook that hangs
                    self._outcomes.skipped.inc()
                    return
                await asyncio.sleep(wait)
                wait *= 2
            outcome = await self._try(origin, webhook.url, update, headers)
            if outcome is None:
                return
            failure, again = outcome
            if not again:
                break
        self._outcomes.failed.inc()
        log.warning("route %s: task %s: a push notification to %s was not delivered (%s)", self._route,
                    self._run_id, origin, failure, extra={"route": self._route})

    async def _try(self, origin: Origin, url: str, update: bytes, headers: dict[str, str]) -> tuple[str, bool] | None:
        """One attempt, in one of the caller's delivery slots: None once it is done with (delivered, or skipped for
        its origin's cool-off), else why it failed and whether another attempt may do better."""
        settings, pusher = self._settings, self._pusher
        async with pusher.shares.delivering(self._owner, settings.max_deliveries_per_principal):
            if pusher.cool_off.cooling(origin):
                self._outcomes.skipped.inc()
                return None
            try:
                status = await pusher.post(url, update, headers, settings.delivery_timeout)
            except (TimeoutError, ConnectTimeout):
                pusher.cool_off.timed_out(origin, settings.cool_off, self._route)
                return f"no answer within {settings.delivery_timeout:g} s", True
            except (HTTPError, ValueError) as exc:
                pusher.cool_off.answered(origin)
                return f"{type(exc).__name__}: {exc}", True
        pusher.cool_off.answered(origin)
        if status < 300:
            self._outcomes.delivered.inc()
            return None
        # a 4xx other than 429 is the webhook refusing it: sending it again would not change that
        return f"HTTP {status}", status >= 500 or status == 429
