"""Where the gateway keeps conversations between requests, for dialects whose clients send only what is new.

One small async interface over opaque bytes (the caller serializes), three backends picked by URL (`schemes.py`):

```
memory://                   MemoryStore   per process, gone on restart; tests and single-shot use
sqlite:///var/agw/conv.db   SQLiteStore   the embedded default: survives a restart, one host
redis://host:6379/0         RedisStore    shared by every gateway replica pointed at it (the `redis` extra)
redis+sentinel://h:26379/mymaster/0        the same, on the primary that Redis Sentinel names, through failovers
```

Every backend is bounded three ways, because clients choose the keys and the values grow with each turn: a TTL, a
maximum number of conversations (the least recently written go first) and a maximum value size. A put may name a
`group` (the gateway passes the caller's principal): a group holds at most `max_per_group` conversations, its own
least recently written going first, so one caller filling the store evicts its own history before anyone else's,
and a group's values can be listed, most recently written first (`newest`). Backend failures come out as
`StoreError` and nothing else (`StoreUnreachable` when asking again may succeed), so the caller decides whether a
dead store fails the request. A store also keeps counters that expire (`counters`, for token budgets), shared as
its conversations are: by the replicas on one Redis, by the processes on one SQLite file, in the process for
memory. A store the replicas share offers them its Redis (`shared_redis`), for what else they share (the run
board).

```
store/base.py     the interface and its bounds (ConversationStore), StoreError, Listed and its cursors, scoped keys
store/counters.py Counters, the counters that expire a store keeps, and ProcessCounters, a process's own
store/memory.py   MemoryStore
store/sqlite.py   SQLiteStore, and what a sqlite:// URL names
store/redis.py    RedisStore
store/redis_servers.py  what a Redis URL names (one server, or sentinels and their primary), its clients, `Reach`
store/schemes.py  the backends by scheme: what opens, checks and looks at a URL's store (open_store)
```

Every name is importable from `gateway.conversations.store`.
"""

from __future__ import annotations

from gateway.conversations.store.base import (
    DEFAULT_MAX_ENTRIES,
    DEFAULT_MAX_VALUE_BYTES,
    DEFAULT_TTL,
    STORE_PATIENCE,
    Bounds,
    ConversationStore,
    Listed,
    SharedRedis,
    StoreError,
    StoreUnreachable,
    redact_url,
    scoped_digest,
    scoped_key,
)
from gateway.conversations.store.counters import Counters, ProcessCounters
from gateway.conversations.store.memory import MemoryStore
from gateway.conversations.store.redis import REDIS_MAX_CONNECTIONS, REDIS_MISSING, RedisStore, redis_exceptions
from gateway.conversations.store.redis_servers import Reach
from gateway.conversations.store.schemes import BACKENDS, KNOWN, Backend, backend_for, open_store
from gateway.conversations.store.sqlite import SQLiteStore

__all__ = ["BACKENDS", "DEFAULT_MAX_ENTRIES", "DEFAULT_MAX_VALUE_BYTES", "DEFAULT_TTL", "KNOWN",
           "REDIS_MAX_CONNECTIONS", "REDIS_MISSING", "STORE_PATIENCE", "Backend", "Bounds", "ConversationStore",
           "Counters", "Listed", "MemoryStore", "ProcessCounters", "Reach", "RedisStore", "SQLiteStore", "SharedRedis",
           "StoreError", "StoreUnreachable", "backend_for", "open_store", "redact_url", "redis_exceptions",
           "scoped_digest", "scoped_key"]
