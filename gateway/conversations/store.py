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
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple, Protocol, TypeVar
from urllib.parse import unquote, urlsplit, urlunsplit

DEFAULT_TTL = 7 * 24 * 3600.0
DEFAULT_MAX_ENTRIES = 100_000
DEFAULT_MAX_VALUE_BYTES = 1 << 20
REDIS_MAX_CONNECTIONS = 64
"""Per gateway process. A store call takes well under a millisecond, so 64 serve thousands of turns a second."""

_T = TypeVar("_T")


class Listed(NamedTuple):
    """One value of a group's listing, and where the next page of the listing starts after it."""

    key: str
    value: bytes
    cursor: str
    """Opaque: pass it back as `after` to go on past this value."""


def _cursor(position: float, key: str) -> str:
    return f"{position!r}|{key}"


def _read_cursor(cursor: str | None) -> tuple[float, str] | None:
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


REDIS_MISSING = "the redis store needs the redis package: pip install 'agent-gateway[redis]'"


def redis_exceptions() -> ModuleType:
    """`redis.exceptions`, importing the redis package (an optional extra) on first use; raises `StoreError` saying
    how to install it when it is missing."""
    try:
        import redis.exceptions
    except ImportError:
        raise StoreError(REDIS_MISSING) from None
    return redis.exceptions


class ConversationStore(Protocol):
    async def get(self, key: str) -> bytes | None:
        """The value, or None if absent or expired."""
        ...

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        """Insert or replace; (re)starts the key's TTL and makes it the most recently written, of all and of its
        group. A key is always written with the same group (the gateway's keys are made from their principal)."""
        ...

    async def delete(self, key: str) -> None: ...

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        """Up to `limit` values of `group`, most recently written first, starting after the cursor `after` (None:
        from the newest)."""
        ...

    async def ping(self) -> bool:
        """Whether the backend answers, for /readyz. Never raises."""
        ...

    async def close(self) -> None: ...


def _check_bounds(ttl: float, max_entries: int, max_value_bytes: int, max_per_group: int | None = None) -> None:
    if max_per_group is not None and max_per_group < 1:
        raise ValueError(f"max_per_group must be at least 1, got {max_per_group!r}")
    if not ttl > 0:
        raise ValueError(f"ttl must be positive, got {ttl!r}")
    if max_entries < 1:
        raise ValueError(f"max_entries must be at least 1, got {max_entries!r}")
    if max_value_bytes < 1:
        raise ValueError(f"max_value_bytes must be at least 1, got {max_value_bytes!r}")


def _check_size(value: bytes, max_value_bytes: int) -> None:
    if len(value) > max_value_bytes:
        raise StoreError(f"value of {len(value)} bytes is over the {max_value_bytes}-byte limit")


class MemoryStore:
    """An LRU-by-write dict in this process. Since every entry gets the same TTL, write order is expiry order: purging
    expired entries only ever pops from the front."""

    def __init__(
        self,
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_per_group: int | None = None,
    ) -> None:
        _check_bounds(ttl, max_entries, max_value_bytes, max_per_group)
        self.ttl = ttl
        self.max_entries = max_entries
        self.max_value_bytes = max_value_bytes
        self.max_per_group = max_per_group or max_entries
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
        _check_size(value, self.max_value_bytes)
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
        start = _read_cursor(after)
        now = time.monotonic()
        found: list[Listed] = []
        for key in reversed(self._groups.get(group, {})):
            expires_at, value, _, written = self._entries[key]
            if expires_at <= now or (start is not None and written >= start[0]):
                continue
            found.append(Listed(key, value, _cursor(written, key)))
            if len(found) >= limit:
                break
        return found

    async def ping(self) -> bool:
        return not self._closed

    async def close(self) -> None:
        self._closed = True
        self._entries.clear()
        self._groups.clear()


class SQLiteStore:
    """One SQLite file, WAL mode, wall-clock expiry so a restart keeps both the data and its deadlines.

    One connection, used only from one dedicated thread: sqlite3 blocks, and a single writer needs no locking of
    its own. The row count is tracked in memory so trimming costs an index lookup per put, not a scan; it is
    recounted every `_RECOUNT_EVERY` puts in case another process writes the same file.
    """

    _RECOUNT_EVERY = 1000

    def __init__(
        self,
        path: str | Path,
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        max_per_group: int | None = None,
    ) -> None:
        _check_bounds(ttl, max_entries, max_value_bytes, max_per_group)
        self.path = str(path)
        self.ttl = ttl
        self.max_entries = max_entries
        self.max_value_bytes = max_value_bytes
        self.max_per_group = max_per_group or max_entries
        self._puts = 0
        self._closed = False
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across crashes, not power loss
            self._conn.execute("PRAGMA busy_timeout=5000")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS conversations"
                "(key TEXT PRIMARY KEY, value BLOB NOT NULL, expires_at REAL NOT NULL, updated_at REAL NOT NULL)"
            )
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(conversations)")}
            if "grp" not in columns:  # a file from before groups
                self._conn.execute("ALTER TABLE conversations ADD COLUMN grp TEXT NOT NULL DEFAULT ''")
            self._conn.execute("CREATE INDEX IF NOT EXISTS conversations_updated_at ON conversations(updated_at)")
            self._conn.execute("CREATE INDEX IF NOT EXISTS conversations_grp ON conversations(grp, updated_at)")
            self._conn.execute("CREATE INDEX IF NOT EXISTS conversations_expires_at ON conversations(expires_at)")
            self._rows = self._count()
        except sqlite3.Error as exc:
            self._conn.close()
            raise StoreError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agw-sqlite")

    def _count(self) -> int:
        row = self._conn.execute("SELECT count(*) FROM conversations").fetchone()
        return int(row[0])

    async def _run(self, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise StoreError(f"SQLite store at {self.path} is closed")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store at {self.path} failed: {exc}") from exc
        except RuntimeError as exc:  # the executor was shut down by a concurrent close()
            raise StoreError(f"SQLite store at {self.path} is closed") from exc

    async def get(self, key: str) -> bytes | None:
        def get() -> bytes | None:
            row = self._conn.execute(
                "SELECT value FROM conversations WHERE key = ? AND expires_at > ?", (key, time.time())
            ).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(get)

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        _check_size(value, self.max_value_bytes)

        def put() -> None:
            now = time.time()
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                rows = self._rows
                if conn.execute("SELECT 1 FROM conversations WHERE key = ?", (key,)).fetchone() is None:
                    rows += 1
                conn.execute(
                    "INSERT INTO conversations (key, value, expires_at, updated_at, grp) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET "
                    "value = excluded.value, expires_at = excluded.expires_at, updated_at = excluded.updated_at",
                    (key, value, now + self.ttl, now, group),
                )
                in_group = conn.execute("SELECT count(*) FROM conversations WHERE grp = ?", (group,)).fetchone()[0]
                if in_group > self.max_per_group:
                    rows -= conn.execute(
                        "DELETE FROM conversations WHERE key IN "
                        "(SELECT key FROM conversations WHERE grp = ? ORDER BY updated_at LIMIT ?)",
                        (group, in_group - self.max_per_group),
                    ).rowcount
                # Both are index range scans that touch only the rows they delete.
                rows -= conn.execute("DELETE FROM conversations WHERE expires_at <= ?", (now,)).rowcount
                if (self._puts + 1) % self._RECOUNT_EVERY == 0:
                    rows = self._count()
                if rows > self.max_entries:
                    rows -= conn.execute(
                        "DELETE FROM conversations WHERE key IN "
                        "(SELECT key FROM conversations ORDER BY updated_at LIMIT ?)",
                        (rows - self.max_entries,),
                    ).rowcount
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._rows = rows
            self._puts += 1

        await self._run(put)

    async def delete(self, key: str) -> None:
        def delete() -> None:
            self._rows -= self._conn.execute("DELETE FROM conversations WHERE key = ?", (key,)).rowcount

        await self._run(delete)

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        start = _read_cursor(after)

        def newest() -> list[Listed]:
            query = "SELECT key, value, updated_at FROM conversations WHERE grp = ? AND expires_at > ?"
            args: list[Any] = [group, time.time()]
            if start is not None:
                query += " AND (updated_at < ? OR (updated_at = ? AND key < ?))"
                args += [start[0], start[0], start[1]]
            rows = self._conn.execute(query + " ORDER BY updated_at DESC, key DESC LIMIT ?", (*args, limit))
            return [Listed(key, bytes(value), _cursor(written, key)) for key, value, written in rows]

        return await self._run(newest)

    async def ping(self) -> bool:
        try:
            await self._run(lambda: self._conn.execute("SELECT 1").fetchone())
        except StoreError:
            return False
        return True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Queued behind any operation still running, so none of them sees a closed connection.
        await asyncio.get_running_loop().run_in_executor(self._executor, self._conn.close)
        self._executor.shutdown(wait=False)


# Write, index, purge and trim in one atomic step: replicas sharing the Redis never see a half-trimmed index, and a
# key rewritten by one replica cannot be deleted by another that had just picked it as the oldest. Scores come from
# the Redis clock (microseconds) so replicas with skewed clocks still agree on the order.
# A group's index holds its keys likewise; a key evicted by the other index leaves a stale member there, which ages
# out with the TTL or goes first when the group is trimmed.
# KEYS[1] value key, KEYS[2] index, KEYS[3] group index; ARGV[1] value, ARGV[2] TTL in ms, ARGV[3] max entries,
# ARGV[4] max per group.
_PUT_SCRIPT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local ttl_ms = tonumber(ARGV[2])
local function trim(index, limit)
  redis.call('ZREMRANGEBYSCORE', index, '-inf', now - ttl_ms * 1000)
  local excess = redis.call('ZCARD', index) - limit
  while excess > 0 do
    local n = math.min(excess, 1000)
    local oldest = redis.call('ZRANGE', index, 0, n - 1)
    redis.call('DEL', unpack(oldest))
    redis.call('ZREM', index, unpack(oldest))
    excess = excess - n
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ttl_ms)
redis.call('ZADD', KEYS[2], now, KEYS[1])
redis.call('ZADD', KEYS[3], now, KEYS[1])
trim(KEYS[3], tonumber(ARGV[4]))
trim(KEYS[2], tonumber(ARGV[3]))
return 0
"""


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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def redact_url(url: str) -> str:
    """The URL fit for logs and error messages: no password, no query string (it may carry one too)."""
    parts = urlsplit(url)
    if parts.password is None and not parts.query:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", parts.fragment))


class RedisStore:
    """Conversations in Redis, shared by every gateway replica using the same URL and prefix.

    Values live at `{prefix}v:{key}` with a PX expiry; the sorted set `{prefix}index` scores each by its last write
    so the oldest can be trimmed beyond `max_entries`, and `{prefix}group:{group}` does the same per group for
    `max_per_group`. Index entries of expired values are dropped on the next put.
    redis-py reconnects by itself after an outage; the client retries a command a few times, quickly, so a pooled
    connection that died with the server costs a retry rather than an error.
    """

    def __init__(
        self,
        url: str,
        ttl: float = DEFAULT_TTL,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_value_bytes: int = DEFAULT_MAX_VALUE_BYTES,
        prefix: str = "agw:conv:",
        *,
        timeout: float = 1.0,
        max_per_group: int | None = None,
    ) -> None:
        _check_bounds(ttl, max_entries, max_value_bytes, max_per_group)
        self._exceptions = redis_exceptions()
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff

        self.url = redact_url(url)
        self._url = url
        self.ttl = ttl
        self.max_entries = max_entries
        self.max_value_bytes = max_value_bytes
        self.max_per_group = max_per_group or max_entries
        self.prefix = prefix
        self._ttl_ms = max(1, round(ttl * 1000))
        self._index = f"{prefix}index"
        self._timeout = timeout
        self._closed = False
        pool = aioredis.BlockingConnectionPool.from_url(
            url,
            # A burst of turns waits for one of these (at most `timeout`) instead of failing: redis-py's default
            # pool refuses the 101st concurrent caller. `?max_connections=` in the URL wins over this.
            max_connections=REDIS_MAX_CONNECTIONS,
            timeout=timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # A dropped connection is retried (Redis restarted); a timeout is not: a hung Redis must cost a turn
            # one timeout per call, not three.
            retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=2,
                        supported_errors=(self._exceptions.ConnectionError,)),
        )
        self._redis = aioredis.Redis.from_pool(pool)
        self._put_script = self._redis.register_script(_PUT_SCRIPT)

    def _key(self, key: str) -> str:
        return f"{self.prefix}v:{key}"

    @property
    def client(self) -> Any:
        """The store's Redis client, for what else the gateway keeps in the same Redis (resumable runs)."""
        return self._redis

    def blocking_client(self) -> Any:
        """A client of the same Redis for commands that wait (a blocking `XREAD`): its own connections, without the
        store's short socket timeout, and the same retry of a connection that died with the server."""
        import redis.asyncio as aioredis
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff

        return aioredis.Redis.from_url(self._url, max_connections=10_000, socket_connect_timeout=self._timeout,
                                       retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=2,
                                                   supported_errors=(self._exceptions.ConnectionError,)))

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Redis's failures as `StoreError`."""
        if self._closed:
            raise StoreError(f"Redis store for {self.url} is closed")
        errors = self._exceptions
        try:
            yield
        except (errors.AuthenticationError, errors.AuthorizationError) as exc:
            raise StoreError(f"Redis at {self.url} refused the credentials: {exc}") from exc
        except (errors.ConnectionError, errors.TimeoutError, OSError) as exc:
            raise StoreError(f"Redis at {self.url} is unreachable: {exc}") from exc
        except errors.RedisError as exc:
            raise StoreError(f"Redis at {self.url} failed: {exc}") from exc

    async def get(self, key: str) -> bytes | None:
        with self.errors():
            value = await self._redis.get(self._key(key))
        return value.encode() if isinstance(value, str) else value

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        _check_size(value, self.max_value_bytes)
        with self.errors():
            await self._put_script(keys=[self._key(key), self._index, f"{self.prefix}group:{group}"],
                                   args=[value, self._ttl_ms, self.max_entries, self.max_per_group])

    async def delete(self, key: str) -> None:
        with self.errors():
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(self._key(key))
                pipe.zrem(self._index, self._key(key))
                await pipe.execute()

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        position = _read_cursor(after)
        index, prefix = f"{self.prefix}group:{group}", self._key("")
        found: list[Listed] = []
        batch = limit + 64
        with self.errors():
            while len(found) < limit:
                top = "+inf" if position is None else repr(position[0])
                listed: list[Any] = await self._redis.zrevrangebyscore(index, top, "-inf", start=0, num=batch,
                                                                       withscores=True)
                members = [(_text(name)[len(prefix):], float(score)) for name, score in listed]
                # Ties on the position's score come again: those at or before its key were listed already.
                fresh = [(key, score) for key, score in members if position is None or score < position[0]
                         or (score == position[0] and key < position[1])]
                if not fresh:
                    break
                values = await self._redis.mget([prefix + key for key, _ in fresh])
                for (key, score), value in zip(fresh, values, strict=True):
                    position = (score, key)
                    if value is not None:  # else expired, its index entry not yet trimmed
                        found.append(Listed(key, value.encode() if isinstance(value, str) else value,
                                            _cursor(score, key)))
                        if len(found) >= limit:
                            break
                if len(members) < batch:
                    break
        return found

    async def ping(self) -> bool:
        if self._closed:
            return False
        try:
            async with asyncio.timeout(self._timeout):
                return bool(await self._redis.ping())
        except Exception:
            return False

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._redis.aclose()


SCHEMES = ("memory://", "sqlite:///<path>", "redis://", "rediss://")


def sqlite_path(url: str) -> str:
    """The file a `sqlite://` URL names (raises ValueError for one that names none the way SQLAlchemy does)."""
    rest = url[len("sqlite://") :]
    if rest and not rest.startswith("/"):
        raise ValueError(f"a SQLite store URL is sqlite:///<relative path> or sqlite:////<absolute path>, got "
                         f"{url!r}")
    return unquote(rest[1:].partition("?")[0]) or ":memory:"


def sqlite_problem(path: str) -> str | None:
    """Why a SQLite store at `path` could not be opened, found without creating or changing anything; None if it
    could be."""
    if path == ":memory:":
        return None
    file = Path(path).absolute()
    if file.exists():
        try:
            with contextlib.closing(sqlite3.connect(f"{file.as_uri()}?mode=ro", uri=True)) as conn:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            return f"{file} cannot be read as SQLite: {exc}"
        return None if os.access(file, os.W_OK) else f"{file} is not writable"
    folder = file.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"{file} cannot be created: {folder} is not a writable directory"
    return None


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
