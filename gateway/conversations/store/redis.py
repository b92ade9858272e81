"""Conversations in Redis, shared by every gateway replica pointed at it (the `redis` extra)."""

from __future__ import annotations

import contextlib
import heapq
import math
import zlib
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, Unpack

from gateway.conversations.store.base import (
    Bounds,
    ConversationStore,
    Listed,
    SharedRedis,
    StoreError,
    StoreUnreachable,
    redact_url,
)
from gateway.conversations.store.counters import Counters
from gateway.conversations.store.redis_servers import (
    ClusterTurns,
    Reach,
    RedisServers,
    add_script,
    replicas_to_wait_for,
)

REDIS_MAX_CONNECTIONS = 64
"""Per gateway process. A store call takes well under a millisecond, so 64 serve thousands of turns a second."""

CLUSTER_SHARDS = 64
"""On a cluster, the conversations are spread over this many slots (a hash tag each), with their indexes: enough
to spread them over a cluster's primaries, few enough for a listing to ask each."""

REDIS_MISSING = "the redis store needs the redis package: pip install 'agent-gateway[redis]'"


def redis_exceptions() -> ModuleType:
    """`redis.exceptions`, importing the redis package (an optional extra) on first use; raises `StoreError` saying
    how to install it when it is missing."""
    try:
        import redis.exceptions
    except ImportError:
        raise StoreError(REDIS_MISSING) from None
    return redis.exceptions


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


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _raised_in_redis(exc: BaseException) -> bool:
    """Whether the exception was raised inside redis-py (not by the code that called it)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb is not None and str(tb.tb_frame.f_globals.get("__name__", "")).startswith("redis.")


class _Descending(str):
    """A key that sorts after the keys it is greater than: ties on a score list the greater key first."""

    __slots__ = ()

    def __lt__(self, other: str) -> bool:
        return str.__gt__(self, other)


def shared_bound(bound: int, shards: int) -> int:
    """One shard's share of a bound, with a margin of three standard deviations of how many of the bound's
    conversations a hash sends to one shard: the whole holds a little more than the bound rather than lose a
    conversation early in the fullest shard."""
    if shards == 1:
        return bound
    share = bound / shards
    return min(bound, math.ceil(share + 3 * math.sqrt(share)) + 1)


class RedisStore(ConversationStore):
    """Conversations in Redis, shared by every gateway replica using the same URL and prefix.

    Values live at `{prefix}v:{key}` with a PX expiry; the sorted set `{prefix}index` scores each by its last write
    so the oldest can be trimmed beyond `max_entries`, and `{prefix}group:{group}` does the same per group for
    `max_per_group`. Index entries of expired values are dropped on the next put.
    On a cluster the same keys are spread over `CLUSTER_SHARDS` slots by a hash of the conversation's key, each shard
    with its own indexes in its slot (`{agw:conv:17}v:{key}`, `{agw:conv:17}index`), so that a put is still one
    atomic script; each shard keeps its share of the bounds (`shared_bound`).
    The URL names one server or, behind sentinels, a primary found through them (`redis_servers.py`); with
    `?wait_replicas=N`, a conversation is saved once N replicas have it too (`WAIT`).
    redis-py reconnects by itself after an outage; the client retries a command a few times, quickly, so a pooled
    connection that died with the server costs a retry rather than an error.
    """

    def __init__(self, url: str, prefix: str = "agw:conv:", *, timeout: float = 1.0, **bounds: Unpack[Bounds]) -> None:
        super().__init__(**bounds)
        self._exceptions = redis_exceptions()
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff

        self.url = redact_url(url)
        url, self._acks = replicas_to_wait_for(url)
        self.prefix = prefix
        self._ttl_ms = max(1, round(self.ttl * 1000))
        self._timeout = timeout
        self._closed = False
        self._servers = RedisServers(url, timeout)
        self._redis = self._servers.client(
            blocking_pool=True,
            # A burst of turns waits for one of these (at most `timeout`) instead of failing: redis-py's default
            # pool refuses the 101st concurrent caller. `?max_connections=` in the URL wins over this.
            max_connections=REDIS_MAX_CONNECTIONS,
            timeout=timeout,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            # A dropped connection is retried (Redis restarted, or failed over); a timeout is not: a hung Redis
            # must cost a turn one timeout per call, not three.
            retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=2,
                        supported_errors=(self._exceptions.ConnectionError,)),
        )
        self._put_script = self._redis.register_script(_PUT_SCRIPT)
        self._counting = RedisCounters(self)
        self.cluster = self._servers.kind == "cluster"
        self._shards = [f"{{{prefix}{n}}}" for n in range(CLUSTER_SHARDS)] if self.cluster else [prefix]
        self._max_entries = shared_bound(self.max_entries, len(self._shards))
        self._max_per_group = shared_bound(self.max_per_group, len(self._shards))
        self._turns: contextlib.AbstractAsyncContextManager[Any] = (
            ClusterTurns(self._redis, REDIS_MAX_CONNECTIONS) if self.cluster else contextlib.nullcontext())

    def _shard(self, key: str) -> str:
        """The prefix of the keys that hold the conversation and its index entries (one slot's, on a cluster)."""
        shards = self._shards
        return shards[zlib.crc32(key.encode()) % len(shards)] if len(shards) > 1 else shards[0]

    def _key(self, key: str) -> str:
        return f"{self._shard(key)}v:{key}"

    def shared_redis(self) -> SharedRedis:
        return self

    def counters(self) -> Counters:
        return self._counting

    @property
    def client(self) -> Any:
        """The store's Redis client, for what else the gateway keeps in the same Redis (resumable runs)."""
        return self._redis

    def blocking_client(self) -> Any:
        """A client of the same Redis for commands that wait (a blocking `XREAD`): its own connections, without the
        store's short socket timeout, and the same retry of a connection that died with the server."""
        from redis.asyncio.retry import Retry
        from redis.backoff import ExponentialBackoff

        return self._servers.client(blocking_pool=False, max_connections=10_000,
                                    socket_connect_timeout=self._timeout,
                                    retry=Retry(ExponentialBackoff(cap=0.1, base=0.01), retries=2,
                                                supported_errors=(self._exceptions.ConnectionError,)))

    def on_switch(self, callback: Callable[[], None]) -> Callable[[], None]:
        return self._servers.on_switch(callback)

    async def reach(self) -> Reach:
        if self._closed:
            return Reach(self._servers.kind, None, False)
        self._servers.follow()
        return await self._servers.reach(self._redis)

    @contextlib.contextmanager
    def errors(self) -> Iterator[None]:
        """Redis's failures as `StoreError`."""
        if self._closed:
            raise StoreError(f"Redis store for {self.url} is closed")
        self._servers.follow()
        errors = self._exceptions
        try:
            yield
        except (errors.AuthenticationError, errors.AuthorizationError) as exc:
            raise StoreError(f"Redis at {self.url} refused the credentials: {exc}") from exc
        except (errors.ConnectionError, errors.TimeoutError, OSError) as exc:
            raise StoreUnreachable(f"Redis at {self.url} is unreachable: {exc}") from exc
        except (errors.ClusterDownError, errors.TryAgainError, errors.SlotNotCoveredError) as exc:
            raise StoreUnreachable(f"Redis Cluster at {self.url} is failing over: {exc}") from exc
        except (errors.CrossSlotTransactionError, errors.InvalidPipelineStack) as exc:
            raise StoreError(f"Redis Cluster at {self.url} refused: {exc}") from exc
        except errors.RedisClusterException as exc:  # no node of it answers
            raise StoreUnreachable(f"Redis Cluster at {self.url} is unreachable: {exc}") from exc
        except RuntimeError as exc:
            # uvloop refuses a write on a connection it closed as the server went away (a RuntimeError, which
            # redis-py neither maps nor retries): a dropped connection all the same.
            raise StoreUnreachable(f"Redis at {self.url} dropped the connection: {exc}") from exc
        except errors.RedisError as exc:
            raise StoreError(f"Redis at {self.url} failed: {exc}") from exc
        except AttributeError as exc:
            if not _raised_in_redis(exc):
                raise
            # A cluster's client closes every connection as it relearns the slots in a failover (CLUSTERDOWN), those
            # other commands are using too: theirs fail on a transport that is gone, unmapped and not retried.
            raise StoreUnreachable(f"Redis at {self.url} dropped the connection: {exc}") from exc

    async def get(self, key: str) -> bytes | None:
        with self.errors():
            async with self._turns:
                value = await self._redis.get(self._key(key))
        return value.encode() if isinstance(value, str) else value

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        self._check_size(value)
        shard = self._shard(key)
        keys = [f"{shard}v:{key}", f"{shard}index", f"{shard}group:{group}"]
        args = [value, self._ttl_ms, self._max_entries, self._max_per_group]
        with self.errors():
            async with self._turns:
                if not self._acks and not self.cluster:
                    await self._put_script(keys=keys, args=args)
                    return
                if not self._acks:  # a node new to the script (a promoted replica) has it at once
                    await self._redis.eval(_PUT_SCRIPT, len(keys), *keys, *args)
                    return
                # WAIT counts the replicas that have this connection's writes: the write and the WAIT on one (a
                # cluster's pipeline sends a node's commands on one connection).
                async with self._redis.pipeline(transaction=False) as pipe:
                    add_script(pipe, self._put_script, keys, args)
                    # Half the timeout: WAIT's answer must come before the socket's timeout.
                    wait = ("WAIT", self._acks, max(1, round(self._timeout * 500)))
                    if self.cluster:
                        pipe.execute_command(*wait, target_nodes=self._redis.get_node_from_key(keys[0]))
                    else:
                        pipe.execute_command(*wait)
                    _, acknowledged = await pipe.execute()
        if acknowledged < self._acks:
            raise StoreUnreachable(f"Redis at {self.url}: {acknowledged} of the {self._acks} replicas asked for "
                                   f"acknowledged the write within {self._timeout / 2:g}s")

    async def delete(self, key: str) -> None:
        shard = self._shard(key)
        with self.errors():
            async with self._turns, self._redis.pipeline(transaction=True) as pipe:
                pipe.delete(f"{shard}v:{key}")
                pipe.zrem(f"{shard}index", f"{shard}v:{key}")
                await pipe.execute()

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        """Each shard's newest past the position, merged by score (on a cluster, each shard's scores are its
        primary's clock); again from the last one looked at while shards had more and too few were live."""
        position = Listed.after(after)
        found: list[Listed] = []
        batch = limit + 64
        with self.errors():
            async with self._turns:
                while len(found) < limit:
                    top = "+inf" if position is None else repr(position[0])
                    async with self._redis.pipeline(transaction=False) as pipe:
                        for shard in self._shards:
                            pipe.zrevrangebyscore(f"{shard}group:{group}", top, "-inf", start=0, num=batch,
                                                  withscores=True)
                        listed: list[list[Any]] = await pipe.execute()
                    merged = list(heapq.merge(*(self._fresh(shard, members, position)
                                                for shard, members in zip(self._shards, listed, strict=True)),
                                              key=lambda member: (-member[1], _Descending(member[0]))))
                    fresh = merged[:batch]
                    if not fresh:
                        break
                    async with self._redis.pipeline(transaction=False) as pipe:
                        for key, _ in fresh:
                            pipe.get(self._key(key))
                        values = await pipe.execute()
                    for (key, score), value in zip(fresh, values, strict=True):
                        position = (score, key)
                        if value is not None:  # else expired, its index entry not yet trimmed
                            found.append(Listed.at(score, key, value.encode() if isinstance(value, str) else value))
                            if len(found) >= limit:
                                break
                    if len(merged) <= batch and all(len(members) < batch for members in listed):
                        break
        return found

    @staticmethod
    def _fresh(shard: str, members: list[Any], position: tuple[float, str] | None) -> list[tuple[str, float]]:
        """A shard's listed members past the position, newest first. Ties on the position's score come again:
        those at or before its key were listed already."""
        prefix = f"{shard}v:"
        named = [(_text(name)[len(prefix):], float(score)) for name, score in members]
        return [(key, score) for key, score in named if position is None or score < position[0]
                or (score == position[0] and key < position[1])]

    async def ping(self) -> bool:
        return (await self.reach()).reachable

    async def close(self) -> None:
        if not self._closed:
            self._closed = True
            await self._redis.aclose()
            await self._servers.close()


class RedisCounters(Counters):
    """A Redis store's counters, shared by every replica: an `INCRBY` and a `PEXPIRE` in one transaction. Their keys
    are written as given, outside the store's prefix (`agw:budget:...`, where replicas have always counted)."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store

    async def add(self, key: str, n: int, ttl: float) -> int:
        with self._store.errors():
            async with self._store.client.pipeline(transaction=True) as pipe:
                pipe.incrby(key, n)
                pipe.pexpire(key, max(1, round(ttl * 1000)))
                count, _ = await pipe.execute()
        return int(count)

    async def get(self, key: str) -> int:
        with self._store.errors():
            found = await self._store.client.get(key)
        return int(found or 0)
