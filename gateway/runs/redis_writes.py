"""What a replica writes to the Redis its run board shares: every command of its runs and requests, in one
pipeline (`RedisWrites`), and each kept run's entries, copied to the run's stream as they are taped (`RedisMirror`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from gateway.conversations.store import SharedRedis, StoreError

log = logging.getLogger("agent_gateway.runs")

Commands = Callable[[Any], Any]
"""Adds commands to a Redis pipeline."""


class RedisWrites:
    """Every command the board's runs and requests have for Redis, in one pipeline, again while more came
    meanwhile: a burst of a thousand claims or replies is a few round trips on one connection, not a thousand
    callers waiting for the store's connections."""

    def __init__(self, store: SharedRedis) -> None:
        self._store = store
        self._redis = store.client
        self._pending: list[tuple[Commands, asyncio.Future[list[Any]] | None, RedisMirror | None]] = []
        self.writing: asyncio.Task[None] | None = None
        """Writing what is pending, while there is any."""
        self._failing = False
        self._unmarked: dict[str, int] = {}
        """The runs whose streams have a gap, not yet marked lost in Redis (their meta key, and how long to keep
        it): written with every pipeline until one goes through, for no follower to wait for what will not come."""

    async def ask(self, commands: Commands) -> list[Any]:
        """The replies to the commands `commands` adds to the next pipeline (raises `StoreError`)."""
        future: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        self.queue(commands, future, None)
        return await future

    def queue(self, commands: Commands, future: asyncio.Future[list[Any]] | None, mirror: RedisMirror | None) -> None:
        self._pending.append((commands, future, mirror))
        if self.writing is None:
            self.writing = asyncio.create_task(self._write())

    async def _write(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    with self._store.errors():
                        async with self._redis.pipeline(transaction=False) as pipe:
                            sizes = []
                            for commands, _, mirror in batch:
                                before = len(pipe)
                                if mirror is None or not mirror.failed:  # a failed one's stream has a gap
                                    commands(pipe)
                                sizes.append(len(pipe) - before)
                            marking = dict(self._unmarked)
                            for meta, keep_ms in marking.items():
                                _mark_lost(pipe, meta, keep_ms)
                            replies = await pipe.execute(raise_on_error=False)
                except StoreError as exc:
                    self._failed(batch, exc)
                    continue
                self._failing = False
                for meta in marking:
                    self._unmarked.pop(meta, None)
                at = 0
                for (_, future, mirror), size in zip(batch, sizes, strict=True):
                    part, at = replies[at:at + size], at + size
                    error = next((r for r in part if isinstance(r, Exception)), None)
                    if error is not None:
                        self._failed([(lambda pipe: None, future, mirror)], StoreError(f"Redis failed: {error}"))
                    elif future is not None and not future.done():
                        future.set_result(part)
        finally:
            self.writing = None

    def _failed(self, batch: list[tuple[Commands, asyncio.Future[list[Any]] | None, RedisMirror | None]],
                error: StoreError) -> None:
        mirrors = {mirror for _, _, mirror in batch if mirror is not None and not mirror.failed}
        for _, future, _mirror in batch:
            if future is not None and not future.done():
                future.set_exception(error)
        for mirror in mirrors:
            mirror.failed = True
            self._unmarked[mirror.meta] = mirror.keep_ms
        if mirrors and not self._failing:
            log.warning("%s: %d runs go on, resumable only on their replica", error, len(mirrors))
            self._failing = True


class RedisMirror:
    """Copies one tape's entries to its stream (`meta` and `stream` are the run's keys), through the board's one
    writer."""

    __slots__ = ("failed", "keep_ms", "lifetime_ms", "meta", "stream", "writes")

    def __init__(self, writes: RedisWrites, meta: str, stream: str, lifetime_ms: int, keep_ms: int) -> None:
        self.writes = writes
        self.meta = meta
        self.stream = stream
        self.lifetime_ms = lifetime_ms
        self.keep_ms = keep_ms
        self.failed = False

    def append(self, seq: int, data: bytes, last: bool) -> None:
        if not self.failed:
            self.writes.queue(lambda pipe: _mirror_commands(pipe, self, seq, data, last), None, self)

    def lose(self) -> None:
        self.append(-1, b"", last=True)


def _mirror_commands(pipe: Any, mirror: RedisMirror, seq: int, data: bytes, last: bool) -> None:
    meta, stream = mirror.meta, mirror.stream
    if seq < 0:  # lost: past the limits
        pipe.hset(meta, "state", "lost")
        pipe.delete(stream)
        pipe.pexpire(meta, mirror.keep_ms)
        return
    pipe.xadd(stream, {"d": data, "e": b"1"} if last else {"d": data}, id=f"1-{seq}")
    if seq == 0:
        pipe.pexpire(stream, mirror.lifetime_ms)
    if last:
        pipe.hset(meta, "state", "ended")
        pipe.pexpire(meta, mirror.keep_ms)
        pipe.pexpire(stream, mirror.keep_ms)


def _mark_lost(pipe: Any, meta: str, keep_ms: int) -> None:
    pipe.hset(meta, "state", "lost")
    pipe.pexpire(meta, keep_ms)  # a meta key the failover lost is made again: it must not stay for good
