"""Where the gateway keeps conversations between requests, for dialects whose clients send only what is new.

One small async interface over opaque bytes (the caller serializes), three backends picked by URL:

```
memory://                   MemoryStore   per process, gone on restart; tests and single-shot use
sqlite:///var/agw/conv.db   SQLiteStore   the embedded default: survives a restart, one host
redis://host:6379/0         RedisStore    shared by every gateway replica pointed at it (the `redis` extra)
```

Every backend is bounded three ways, because clients choose the keys and the values grow with each turn: a TTL, a
maximum number of conversations (the least recently written go first) and a maximum value size. A put may name a
`group` (the gateway passes the caller's principal): a group holds at most `max_per_group` conversations, its own
least recently written going first, so one caller filling the store evicts its own history before anyone else's,
and a group's values can be listed, most recently written first (`newest`). Backend failures come out as
`StoreError` and nothing else, so the caller decides whether a dead store fails the request.

```
store/base.py     the interface (ConversationStore), its bounds, StoreError, Listed and its cursors, scoped keys
store/memory.py   MemoryStore
store/sqlite.py   SQLiteStore, and what a sqlite:// URL names
store/redis.py    RedisStore
```

Every name is importable from `gateway.conversations.store`, which picks the backend a URL names (`open_store`).
"""

from __future__ import annotations

from gateway.conversations.store.base import (
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_VALUE_BYTES,
    DEFAULT_TTL,
    ConversationStore,
    Listed,
    StoreError,
    redact_url,
    scoped_digest,
    scoped_key,
)
from gateway.conversations.store.memory import MemoryStore
from gateway.conversations.store.redis import REDIS_MAX_CONNECTIONS, REDIS_MISSING, RedisStore, redis_exceptions
from gateway.conversations.store.sqlite import SQLiteStore, sqlite_path, sqlite_problem

__all__ = ["DEFAULT_MAX_ENTRIES", "DEFAULT_MAX_VALUE_BYTES", "DEFAULT_TTL", "REDIS_MAX_CONNECTIONS", "REDIS_MISSING",
           "SCHEMES", "ConversationStore", "Listed", "MemoryStore", "RedisStore", "SQLiteStore", "StoreError",
           "open_store", "redact_url", "redis_exceptions", "scoped_digest", "scoped_key", "sqlite_path",
           "sqlite_problem"]

SCHEMES = ("memory://", "sqlite:///<path>", "redis://", "rediss://")


def open_store(
    url: str,
    *,
    ttl: float = DEFAULT_TTL,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
    max_per_group: int | None = None,
) -> ConversationStore:
    """The backend a URL names. `sqlite:///rel/path.db` is relative to the working directory,
    `sqlite:////abs/path.db` absolute, `sqlite://` or `sqlite:///:memory:` an in-memory database."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme == "memory":
        return MemoryStore(ttl=ttl, max_entries=max_entries, max_value_bytes=max_value_bytes,
                           max_per_group=max_per_group)
    if scheme == "sqlite":
        return SQLiteStore(sqlite_path(url), ttl=ttl, max_entries=max_entries, max_value_bytes=max_value_bytes,
                           max_per_group=max_per_group)
    if scheme in ("redis", "rediss"):
        return RedisStore(url, ttl=ttl, max_entries=max_entries, max_value_bytes=max_value_bytes,
                          max_per_group=max_per_group)
    raise ValueError(f"unsupported store URL {redact_url(url)!r}: use one of {', '.join(SCHEMES)}")
