"""Token budgets per key (`limits.tokens_per_key`): a key past its budget is refused before its request goes
upstream; a run already started finishes, and its tokens count.

Windows are calendar ones (UTC minutes, hours, days), so every process agrees when one turns. The count is one of
the store's counters (`ConversationStore.counters`), a key per (route, key, window) that expires after its window:
shared as the store is, by the replicas on one Redis and by the workers on one SQLite file; a memory store's are
the process's. A store that fails lets requests through (logged): a budget is an accounting limit, not what keeps
the gateway up.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time

from gateway.config.usage import TokenBudget
from gateway.conversations.store import ConversationStore, Counters, StoreError
from gateway.core.errors import OverBudget

log = logging.getLogger("agent_gateway.budget")

PREFIX = "agw:budget:"


class Budget:
    """One route's budget: `check` before a request is admitted, `spend` once its run reported its usage."""

    def __init__(self, route: str, budget: TokenBudget, store: ConversationStore) -> None:
        self.route = route
        self.max = budget.max
        self.seconds = budget.seconds
        self.per = budget.per
        self._counters: Counters = store.counters()
        self._spending: set[asyncio.Task[None]] = set()

    def _current(self) -> tuple[int, int]:
        """The current window's start, and the whole seconds until the next one."""
        now = time.time()
        start = int(now // self.seconds) * self.seconds
        return start, max(1, math.ceil(start + self.seconds - now))

    def _key(self, who: str, start: int) -> str:
        return f"{PREFIX}{self.route}:{who}:{start}"

    async def check(self, who: str) -> None:
        """Raise `OverBudget` when `who` has used its window's tokens."""
        start, retry_after = self._current()
        try:
            used = await self._counters.get(self._key(who, start))
        except StoreError as exc:
            log.warning("route %s: token budget not checked, the store failed: %s", self.route, exc)
            return
        if used >= self.max:
            raise OverBudget(f"this key has used its {self.max} tokens for this {self.per}: retry in {retry_after} "
                             "seconds", retry_after)

    def spend(self, who: str, tokens: int) -> None:
        """Count a finished run's tokens against `who`'s window, in the background."""
        if tokens <= 0:
            return
        start, _ = self._current()
        task = asyncio.get_running_loop().create_task(self._add(self._key(who, start), tokens))
        self._spending.add(task)
        task.add_done_callback(self._spending.discard)

    async def _add(self, key: str, tokens: int) -> None:
        try:
            # Kept a minute past its window: processes whose clocks differ a little still find it.
            await self._counters.add(key, tokens, self.seconds + 60)
        except StoreError as exc:
            log.warning("route %s: %d tokens not counted against a budget, the store failed: %s", self.route,
                        tokens, exc)

    async def settled(self) -> None:
        """Wait for the counts being written (tests, shutdown)."""
        while self._spending:
            await asyncio.gather(*self._spending, return_exceptions=True)
