"""What every conversation store is: the interface, its bounds, its error, the listing's cursors, and the keys
callers make."""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol, TypedDict
from urllib.parse import urlsplit, urlunsplit

from gateway.conversations.store.counters import Counters, ProcessCounters
from gateway.conversations.store.redis_servers import Reach

DEFAULT_TTL = 7 * 24 * 3600.0
DEFAULT_MAX_ENTRIES = 100_000
DEFAULT_MAX_VALUE_BYTES = 1 << 20
STORE_PATIENCE = 5.0
"""Seconds a turn that needs its history waits for a store that does not answer, before it is refused (by default:
`store.patience`)."""


class Listed(NamedTuple):
    """One value of a group's listing, and where the next page of the listing starts after it."""

    key: str
    value: bytes
    cursor: str
    """Opaque: pass it back as `after` to go on past this value."""

    @classmethod
    def at(cls, position: float, key: str, value: bytes) -> Listed:
        """A value listed at `position` in its store's order (a write's number, time or score)."""
        return cls(key, value, f"{position!r}|{key}")

    @staticmethod
    def after(cursor: str | None) -> tuple[float, str] | None:
        """A cursor's (position, key), or None for the start of the listing (or a cursor this store never gave)."""
        if not cursor:
            return None
        position, _, key = cursor.partition("|")
        try:
            return float(position), key
        except ValueError:
            return None


class StoreError(Exception):
    """The store could not do what was asked: backend down or failing, value over the size bound, store closed, or
    the package its backend needs not installed."""


class StoreUnreachable(StoreError):
    """The store did not answer (down, failing over, timed out): the same call may succeed once it is back."""


class SharedRedis(Protocol):
    """The Redis a store keeps its conversations in, which the gateway's replicas share: they keep what else they
    share there too (the run board, `gateway/runs/redis.py`)."""

    url: str
    """For messages: without credentials."""
    cluster: bool
    """A Redis Cluster: the keys one operation touches share a hash tag, and pub/sub is sharded."""

    @property
    def client(self) -> Any: ...

    def blocking_client(self) -> Any:
        """A client of the same Redis for commands that wait, on connections of its own."""
        ...

    def errors(self) -> AbstractContextManager[None]:
        """Redis's failures as `StoreError`."""
        ...

    async def reach(self) -> Reach:
        """The kind of Redis, its primary, and whether that answers (for `/readyz` and `serve --check`)."""
        ...

    def on_switch(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` whenever a new primary takes over (behind sentinels), for a subscriber to follow it;
        returns what forgets it."""
        ...


class Bounds(TypedDict, total=False):
    """The bounds a store is opened with, by name (`ConversationStore` says what each is, and its default)."""

    ttl: float
    max_entries: int
    max_value_bytes: int
    max_per_group: int | None


class ConversationStore(ABC):
    """What every store is: its operations, and the bounds it keeps because clients choose the keys and the values
    grow with each turn: a TTL (`ttl` seconds from a conversation's last write), a number of conversations
    (`max_entries`, the least recently written going first), of them per group (`max_per_group`, by default as
    many), and a value size (`max_value_bytes`)."""

    def __init__(self, ttl: float = DEFAULT_TTL, max_entries: int = DEFAULT_MAX_ENTRIES,
                 max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES, max_per_group: int | None = None) -> None:
        if max_per_group is not None and max_per_group < 1:
            raise ValueError(f"max_per_group must be at least 1, got {max_per_group!r}")
        if not ttl > 0:
            raise ValueError(f"ttl must be positive, got {ttl!r}")
        if max_entries < 1:
            raise ValueError(f"max_entries must be at least 1, got {max_entries!r}")
        if max_value_bytes < 1:
            raise ValueError(f"max_value_bytes must be at least 1, got {max_value_bytes!r}")
        self.ttl = ttl
        self.max_entries = max_entries
        self.max_value_bytes = max_value_bytes
        self.max_per_group = max_per_group or max_entries
        self._counters: Counters | None = None

    @abstractmethod
    async def get(self, key: str) -> bytes | None:
        """The value, or None if absent or expired."""

    @abstractmethod
    async def put(self, key: str, value: bytes, group: str = "") -> None:
        """Insert or replace; (re)starts the key's TTL and makes it the most recently written, of all and of its
        group. A key is always written with the same group (the gateway's keys are made from their principal)."""

    @abstractmethod
    async def delete(self, key: str) -> None: ...

    @abstractmethod
    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        """Up to `limit` values of `group`, most recently written first, starting after the cursor `after` (None:
        from the newest)."""

    @abstractmethod
    async def ping(self) -> bool:
        """Whether the backend answers, for /readyz. Never raises."""

    @abstractmethod
    async def close(self) -> None: ...

    def counters(self) -> Counters:
        """Counters kept where the conversations are, so that the processes sharing this store share them; this
        process's (`ProcessCounters`) for a store of one process."""
        if self._counters is None:
            self._counters = ProcessCounters()
        return self._counters

    def shared_redis(self) -> SharedRedis | None:
        """The Redis the gateway's replicas share through this store; None for a store of one process or host."""
        return None

    def _check_size(self, value: bytes) -> None:
        if len(value) > self.max_value_bytes:
            raise StoreError(f"value of {len(value)} bytes is over the {self.max_value_bytes}-byte limit")


def scoped_key(namespace: str, *parts: str) -> str:
    """A store key: a hash of its parts, each length-prefixed, under a namespace no client id can write into (the
    ids clients choose are one part of a "client" key; an eval run's derived keys are "derived" ones)."""
    return f"{namespace}:{scoped_digest(namespace, *parts)[:40]}"


def scoped_digest(namespace: str, *parts: str) -> str:
    """The SHA-256 of a namespace and its parts, each length-prefixed (so no two lists of parts collide)."""
    digest = hashlib.sha256(namespace.encode())
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(4, "big") + data)
    return digest.hexdigest()


def redact_url(url: str) -> str:
    """The URL fit for logs and error messages: no password, no query string (it may carry one too). Read as text,
    so that a URL naming several hosts (`redis+sentinel://h1:26379,h2:26379/...`) keeps them all."""
    parts = urlsplit(url)
    userinfo, _, hosts = parts.netloc.rpartition("@")
    if ":" not in userinfo and not parts.query:
        return url
    user = userinfo.partition(":")[0]
    netloc = f"{user}@{hosts}" if user else hosts
    return urlunsplit((parts.scheme, netloc, parts.path, "", parts.fragment))
