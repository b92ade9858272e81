"""Push notifications: a run's updates POSTed to the webhooks its clients registered, by the replica running it.

```
run's update ─offer─▶ the run's queue ─▶ one task per run: for each update, for each webhook (read from the store,
                      (bounded per process)    again at most every second), POST with the webhook's headers;
                                                a connection error, a 5xx or a 429 is retried with backoff
```

Deliveries never slow the run: an update is queued and the run goes on. Bounded: the process holds at most
`max_pending` notifications waiting (past it new ones are dropped, and logged), a webhook gets at most
`max_notifications` of one run, an update larger than `max_bytes` is not sent, and every delivery has
`delivery_timeout`.
Only a host and port the route allows is called (checked when the webhook is registered, and again before each
delivery), and no redirect is followed.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time

from gateway.config import Push
from gateway.conversations.store import StoreError
from gateway.core.queries import Webhook
from gateway.runs.webhooks import CallerWebhooks, origin_of
from gateway.upstream.http1 import HTTPError, Pool, Target

log = logging.getLogger("agent_gateway.push")

RELOAD_SECONDS = 1.0
"""How stale the list of a run's webhooks may be: one registered meanwhile gets the updates after it."""
FIRST_RETRY_SECONDS = 0.5


class Pusher:
    """The process's deliveries, for every route that pushes, on the gateway's own HTTP client (which follows no
    redirect, and here no environment proxy: the allowed hosts are called directly)."""

    def __init__(self, pool: Pool | None = None) -> None:
        self.pool = pool or Pool()
        self.pending = 0
        """Notifications queued in this process and not yet delivered (or given up)."""
        self._running: set[asyncio.Task[None]] = set()

    def run(self, settings: Push, webhooks: CallerWebhooks, run_id: str, route: str) -> RunPush:
        return RunPush(self, settings, webhooks, run_id, route)

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
        "_pusher",
        "_queue",
        "_route",
        "_run_id",
        "_sent",
        "_settings",
        "_task",
        "_webhooks",
    )

    def __init__(self, pusher: Pusher, settings: Push, webhooks: CallerWebhooks, run_id: str, route: str) -> None:
        self._pusher = pusher
        self._settings = settings
        self._webhooks = webhooks
        self._run_id = run_id
        self._route = route
        self._queue: collections.deque[bytes] = collections.deque()
        self._task: asyncio.Task[None] | None = None
        self._known: list[Webhook] = []
        self._loaded_at = 0.0
        self._sent: collections.Counter[str] = collections.Counter()
        self._dropped = False

    def offer(self, update: bytes) -> None:
        """Queue an update for the run's webhooks (dropped, once logged, when the process holds too many)."""
        pusher = self._pusher
        if pusher.pending >= self._settings.max_pending:
            if not self._dropped:
                log.warning("route %s: task %s: %d push notifications are waiting in this process; dropping new "
                            "ones", self._route, self._run_id, pusher.pending, extra={"route": self._route})
                self._dropped = True
            return
        pusher.pending += 1
        self._queue.append(update)
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._deliver())
            pusher.keep(self._task)

    async def _deliver(self) -> None:
        try:
            while self._queue:
                update = self._queue.popleft()
                try:
                    for webhook in await self._current():
                        await self._send(webhook, update)
                finally:
                    self._pusher.pending -= 1
        finally:
            self._pusher.pending -= len(self._queue)
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
            try:
                status = await self._pusher.post(webhook.url, update, headers, settings.delivery_timeout)
            except (HTTPError, TimeoutError, ValueError) as exc:
                failure = f"{type(exc).__name__}: {exc}"
            else:
                if status < 300:
                    return
                failure = f"HTTP {status}"
                if status < 500 and status != 429:
                    break  # the webhook refuses it: sending it again would not change that
            if attempt < settings.retries:
                await asyncio.sleep(wait)
                wait *= 2
        log.warning("route %s: task %s: a push notification to %s was not delivered (%s)", self._route,
                    self._run_id, origin, failure, extra={"route": self._route})
