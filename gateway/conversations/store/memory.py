"""The store in this process's memory: gone on restart; tests and single-shot use."""

from __future__ import annotations

import collections
import time
from typing import Unpack

from gateway.conversations.store.base import Bounds, ConversationStore, Listed, StoreError


class MemoryStore(ConversationStore):
    """An LRU-by-write dict in this process. Since every entry gets the same TTL, write order is expiry order: purging
    expired entries only ever pops from the front."""

    def __init__(self, **bounds: Unpack[Bounds]) -> None:
        super().__init__(**bounds)
        self._entries: collections.OrderedDict[str, tuple[float, bytes, str, int]] = collections.OrderedDict()
        """key -> (expires at, value, group, write number)"""
        self._groups: dict[str, collections.OrderedDict[str, None]] = {}
        self._writes = 0
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError("memory store is closed")

    async def get(self, key: str) -> bytes | None:
        self._check_open()
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, value, _, _ = entry
        if expires_at <= time.monotonic():
            self._forget(key)
            return None
        return value

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        self._check_open()
        self._check_size(value)
        now = time.monotonic()
        self._entries.pop(key, None)
        self._writes += 1
        self._entries[key] = (now + self.ttl, value, group, self._writes)
        members = self._groups.setdefault(group, collections.OrderedDict())
        members.pop(key, None)
        members[key] = None
        while len(members) > self.max_per_group:
            self._forget(next(iter(members)))
        while self._entries:
            oldest_key, (expires_at, _, _, _) = next(iter(self._entries.items()))
            if expires_at > now and len(self._entries) <= self.max_entries:
                break
            self._forget(oldest_key)

    def _forget(self, key: str) -> None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            members = self._groups[entry[2]]
            del members[key]
            if not members:
                del self._groups[entry[2]]

    async def delete(self, key: str) -> None:
        self._check_open()
        self._forget(key)

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        self._check_open()
        start = Listed.after(after)
        now = time.monotonic()
        found: list[Listed] = []
        for key in reversed(self._groups.get(group, {})):
            expires_at, value, _, written = self._entries[key]
            if expires_at <= now or (start is not None and written >= start[0]):
                continue
            found.append(Listed.at(written, key, value))
            if len(found) >= limit:
                break
        return found

    async def ping(self) -> bool:
        return not self._closed

    async def close(self) -> None:
        self._closed = True
        self._entries.clear()
        self._groups.clear()
