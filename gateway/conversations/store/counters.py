"""Counters that expire: what the gateway counts in its store besides conversations (tokens per key and window,
`gateway/server/request/budget.py`), so that the processes sharing a store share the counts too.

A store offers them as `ConversationStore.counters()`: Redis's are shared by every replica, SQLite's by every
process on the file's host, and a store of one process counts in it (`ProcessCounters`).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod


class Counters(ABC):
    """Integers by key, each gone `ttl` seconds after its last `add`. Keys are the caller's, each use under a prefix
    of its own (`agw:budget:`). Failures come out as `StoreError`, as the store's own do."""

    @abstractmethod
    async def add(self, key: str, n: int, ttl: float) -> int:
        """Add `n` to `key`'s count (0 if it is absent or expired), keep it `ttl` seconds from now; the new count."""

    @abstractmethod
    async def get(self, key: str) -> int:
        """`key`'s count: 0 if it is absent or expired."""


class ProcessCounters(Counters):
    """Counters in this process's memory. Expired ones are swept by a pass over all of them at most once every
    `SWEEP_EVERY` seconds: there are as many as keys counting in a window, and `get` ignores the expired."""

    SWEEP_EVERY = 60.0

    def __init__(self) -> None:
        self._counts: dict[str, tuple[float, int]] = {}
        """key -> (expires at, count)"""
        self._swept = time.monotonic()

    async def add(self, key: str, n: int, ttl: float) -> int:
        now = time.monotonic()
        if now - self._swept >= self.SWEEP_EVERY:
            self._swept = now
            self._counts = {k: kept for k, kept in self._counts.items() if kept[0] > now}
        expires_at, count = self._counts.get(key, (now, 0))
        count = (count if expires_at > now else 0) + n
        self._counts[key] = (now + ttl, count)
        return count

    async def get(self, key: str) -> int:
        expires_at, count = self._counts.get(key, (0.0, 0))
        return count if expires_at > time.monotonic() else 0
