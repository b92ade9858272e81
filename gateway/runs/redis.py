"""The run board over the Redis the replicas share: a run claimed on one replica is attached to, resumed and
stopped from any.

```
{prefix}{key}:m          hash: state (running, ended, lost) and owner (the replica running it)
{prefix}{key}:s          stream: the reply's entries, entry id 1-<seq>, fields d (data) and e (the last one)
{prefix}c:{conversation} the key of the conversation's latest run
{prefix}alive:{replica}  set by each replica every BEAT seconds, for ALIVE: a run whose owner is gone is over
{prefix}stop             the channel a stop is published on; the owner's listener stops the run (a claimed
                         run's key, or a `stoppable` run's name)
```

On a Redis Cluster a run's two keys share its key as their hash tag (`{prefix}{{key}}:m`, `{prefix}{{key}}:s`), so
that the runs spread over the slots and a claim is still one script, and the stop channel is a shard channel
(`SPUBLISH`, `SSUBSCRIBE`).

The replica running a run writes its entries to the stream in the background, in batches (`redis_writes.py`: one
pipeline for every command the board has), as they go to its own client: Redis is never waited on between the
upstream and that client. If Redis fails, the run goes on and is resumable only on its own replica; a claim that
fails leaves the run unresumable. Both are logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from gateway.conversations.store import SharedRedis, StoreError
from gateway.conversations.store.redis_servers import add_script
from gateway.core.ids import new_id
from gateway.runs.board import KeptLimits, RunBoard
from gateway.runs.redis_writes import RedisMirror, RedisWrites
from gateway.runs.tape import Entry, RunReply, Tape, TapeBroken, TapeLost

log = logging.getLogger("agent_gateway.runs")

BEAT = 2.0
ALIVE = 10.0
READ_BATCH = 512
CLOSE_SECONDS = 5.0
"""How long closing waits for the writes still queued."""

# KEYS: meta, stream; ARGV: replica, lifetime ms, the owner known to be gone ('' for none). Returns the replica
# running the run, or nothing once the run is claimed for ARGV[1]. Whether an owner is still there is read beside
# the script: its key is in another slot on a cluster.
_CLAIM = """
if redis.call('HGET', KEYS[1], 'state') == 'running' then
  local owner = redis.call('HGET', KEYS[1], 'owner')
  if owner and owner ~= ARGV[3] then return owner end
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('HSET', KEYS[1], 'state', 'running', 'owner', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return false
"""


class RedisRunBoard(RunBoard):
    def __init__(self, store: SharedRedis, limits: KeptLimits | None = None, prefix: str = "agw:run:") -> None:
        super().__init__(limits)
        self._store = store
        self._redis = store.client
        self._prefix = prefix
        self.replica = new_id("replica")
        self._claim = self._redis.register_script(_CLAIM)
        self._cluster = store.cluster
        self._tagged = "{%s}" if store.cluster else "%s"
        """How a run's key is written in its keys' names: a hash tag on a cluster, so that both are in one slot."""
        self._readers = store.blocking_client()
        """Followers on other replicas block reading the stream: on their own connections, not the store's."""
        self._listener: asyncio.Task[None] | None = None
        self._switched = asyncio.Event()
        """Set when a new primary takes over (behind sentinels): the listener subscribes again, there."""
        self._forget_switches = store.on_switch(self._switched.set)
        self._closed = False
        self._writes = RedisWrites(store)

    def _meta(self, key: str) -> str:
        return f"{self._prefix}{self._tagged % key}:m"

    def _stream(self, key: str) -> str:
        return f"{self._prefix}{self._tagged % key}:s"

    def _conversation(self, conversation: str) -> str:
        return f"{self._prefix}c:{conversation}"

    async def claim(self, tape: Tape, lifetime: float) -> RunReply | None:
        running = self._running(tape.key)
        if running is not None:
            return running
        self._listen()
        lifetime_ms = max(1, round((lifetime + tape.keep) * 1000))
        owner = await self._claimed(tape, lifetime_ms, "")
        if owner is not None and not await self._there(owner):
            owner = await self._claimed(tape, lifetime_ms, owner)
        if owner:
            return self._running(tape.key) or _RemoteReply(self, tape.key)
        self._register(tape)
        tape.mirror = RedisMirror(self._writes, self._meta(tape.key), self._stream(tape.key), lifetime_ms,
                                  max(1, round(tape.keep * 1000)))
        return None

    async def _claimed(self, tape: Tape, lifetime_ms: int, gone: str) -> str | None:
        """Claim the run unless a replica other than `gone` runs it: that replica, or None once claimed. The
        conversation's latest run is this one either way."""
        keys, args = [self._meta(tape.key), self._stream(tape.key)], [self.replica, lifetime_ms, gone]
        conversation = tape.conversation

        def claiming(pipe: Any) -> None:
            add_script(pipe, self._claim, keys, args)
            if conversation:
                pipe.set(self._conversation(conversation), tape.key, px=lifetime_ms)

        owner, *_ = await self._writes.ask(claiming)
        return _text(owner) if owner else None

    async def _there(self, replica: str) -> bool:
        """Whether the replica is still there (it says so every `BEAT`)."""
        [alive] = await self._writes.ask(lambda pipe: pipe.exists(f"{self._prefix}alive:{replica}"))
        return bool(alive)

    async def find(self, key: str) -> RunReply | None:
        running = self._running(key)
        if running is not None:
            return running
        [(state, owner)] = await self._writes.ask(lambda pipe: pipe.hmget(self._meta(key), ["state", "owner"]))
        kept = _text(state) in ("running", "ended") if state is not None else False
        if kept and owner is not None and _text(owner) != self.replica:
            return _RemoteReply(self, key)  # claimed on another replica since this one's reply ended
        local = await super().find(key)
        if local is not None:
            return local
        return _RemoteReply(self, key) if kept else None

    async def running(self, key: str) -> RunReply | None:
        local = self._running(key)
        if local is not None:
            return local
        # Redis may not have heard yet that a run of this replica's ended: only another replica's counts.
        owner = await self._owner(key)
        return _RemoteReply(self, key) if owner is not None and owner != self.replica else None

    async def running_in(self, conversation: str) -> RunReply | None:
        local = await super().running_in(conversation)
        if local is not None:
            return local
        key = await self._run_of(conversation)
        return _RemoteReply(self, key) if key is not None and await self._alive(key) else None

    async def kept_in(self, conversation: str) -> RunReply | None:
        """The latest run of every replica's (a run here may be older than another replica's); this replica's own
        when Redis names none (its claim there failed)."""
        key = await self._run_of(conversation)
        return await self.find(key) if key is not None else await super().kept_in(conversation)

    async def stop(self, key: str) -> bool:
        if await super().stop(key):
            return True
        if not await self._alive(key):
            return False
        await self._writes.ask(lambda pipe: self._publish_stop(pipe, key))
        return True

    def stoppable(self, name: str, stop: Callable[[], None]) -> Callable[[], None]:
        self._listen()
        return super().stoppable(name, stop)

    async def stop_named(self, name: str) -> bool:
        """Here, or else asked of every replica: whichever runs it stops it (raises `StoreError`)."""
        if await super().stop_named(name):
            return True
        await self._writes.ask(lambda pipe: self._publish_stop(pipe, name))
        return True

    async def stop_conversation(self, conversation: str) -> bool:
        if await super().stop_conversation(conversation):
            return True
        key = await self._run_of(conversation)
        return key is not None and await self.stop(key)

    async def _run_of(self, conversation: str) -> str | None:
        [key] = await self._writes.ask(lambda pipe: pipe.get(self._conversation(conversation)))
        return _text(key) if key is not None else None

    async def _state(self, key: str) -> str | None:
        [state] = await self._writes.ask(lambda pipe: pipe.hget(self._meta(key), "state"))
        return _text(state) if state is not None else None

    async def _alive(self, key: str) -> bool:
        """Whether the run is running on a replica that is still there."""
        return await self._owner(key) is not None

    async def _owner(self, key: str) -> str | None:
        """The replica running the run, if one is and is still there."""
        [(state, owner)] = await self._writes.ask(lambda pipe: pipe.hmget(self._meta(key), ["state", "owner"]))
        if state is None or _text(state) != "running" or owner is None:
            return None
        return _text(owner) if await self._there(_text(owner)) else None

    def _publish_stop(self, pipe: Any, named: str) -> None:
        if self._cluster:
            pipe.spublish(f"{self._prefix}stop", named)
        else:
            pipe.publish(f"{self._prefix}stop", named)

    def _listen(self) -> None:
        if self._listener is None and not self._closed:
            self._listener = asyncio.create_task(self._serve())

    async def _serve(self) -> None:
        """Say this replica is alive, and stop the runs a stop names, whichever replica it was asked of. When a new
        primary takes over, subscribe again at once: the old one hears nothing published on the new."""
        failing = False
        while not self._closed:
            self._switched.clear()
            pubsub = self._redis.pubsub(ignore_subscribe_messages=True)
            try:
                if self._cluster and failing:
                    # A subscription's failure does not make the client relearn the slots, as a command's does: it
                    # would subscribe again on the primary that failed over, for good.
                    await self._redis.nodes_manager.initialize()
                await self._redis.initialize()  # a cluster's client: the stop channel's node is known
                if self._cluster:
                    await pubsub.ssubscribe(f"{self._prefix}stop")
                else:
                    await pubsub.subscribe(f"{self._prefix}stop")
                beat_at = 0.0
                while not self._switched.is_set():
                    if time.monotonic() >= beat_at:
                        # With the board's writes: a pipeline each beat, with it what Redis failing kept back.
                        await self._writes.ask(lambda pipe: pipe.set(f"{self._prefix}alive:{self.replica}", b"1",
                                                                     px=round(ALIVE * 1000)))
                        beat_at = time.monotonic() + BEAT
                        if failing:
                            log.warning("Redis at %s answers again: runs are resumable from any replica",
                                        self._store.url)
                            failing = False
                    reading = (pubsub.get_sharded_message(timeout=BEAT) if self._cluster
                               else pubsub.get_message(timeout=BEAT))
                    message = await _next_message(reading, self._switched)
                    if message is not None and _text(message.get("type", b"")) in ("message", "smessage"):
                        named = _text(message["data"])
                        tape = self._running(named)
                        if tape is not None and tape.stop is not None:
                            tape.stop()
                        elif (stop := self._stoppers.get(named)) is not None:
                            stop()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if not failing:
                    log.warning("Redis at %s failed (%s): runs started meanwhile are not resumable, and a stop "
                                "asked of another replica does not reach the runs here", self._store.url, exc)
                    failing = True
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()

    async def close(self) -> None:
        """Stop, once what the runs wrote has reached Redis (a drained run's end, for a replica to serve)."""
        await super().close()
        writing = self._writes.writing
        if writing is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(writing), CLOSE_SECONDS)
        self._closed = True
        self._forget_switches()
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(BaseException):
                await self._listener
        with contextlib.suppress(Exception):
            await self._readers.aclose()


class _RemoteReply:
    """A run's reply read from its stream: the run is on another replica (or this one, before a restart)."""

    def __init__(self, board: RedisRunBoard, key: str) -> None:
        self._board = board
        self._key = key

    async def read(self, start: int, wait: float) -> list[Entry]:
        """A store that fails is nothing new for now, not a lost reply: the run may well be running (the reader's
        patience bounds how long the store may stay away)."""
        board = self._board
        after = "0-0" if start == 0 else f"1-{start - 1}"
        try:
            with board._store.errors():
                await board._readers.initialize()  # a cluster's client: as its first commands come at once
                found = await board._readers.xread({board._stream(self._key): after}, count=READ_BATCH,
                                                   block=max(1, round(wait * 1000)))
            if not found and not await board._alive(self._key) and await board._state(self._key) != "ended":
                raise TapeLost("the run's replica is gone")
        except StoreError:
            await asyncio.sleep(min(wait, 0.5))
            return []
        if not found:
            return []
        entries = [Entry(int(_text(entry_id).rpartition("-")[2]), fields[b"d"], b"e" in fields)
                   for entry_id, fields in found[0][1]]
        # Entries the run's replica wrote to a primary as the sentinels replaced it are lost with it: the follower
        # gets those before the gap, then is told, rather than passed over them in silence.
        if entries[0].seq != start:
            raise TapeBroken("part of the run's reply was lost with a failover of Redis")
        gap = next((n for n, entry in enumerate(entries) if entry.seq != start + n), len(entries))
        return entries[:gap]


async def _next_message(read: Coroutine[Any, Any, Any], switched: asyncio.Event) -> Any:
    """The subscription's next message (`read` it within BEAT), or None; None at once when a new primary takes
    over, the read cancelled here, by the one task that uses the subscription's connection, before that is
    closed."""
    reading = asyncio.ensure_future(read)
    waiting = asyncio.ensure_future(switched.wait())
    try:
        await asyncio.wait((reading, waiting), return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiting.cancel()
        if not reading.done():
            reading.cancel()
            await asyncio.gather(reading, return_exceptions=True)
    return None if reading.cancelled() else reading.result()


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
