"""A resumable run's reply as its client was sent it, kept so that a client that lost its connection can be sent
the rest, in order, each piece once.

```
seq 0       the response head: status, headers, the dialect's keep-alive bytes, the dialect's name (JSON)
seq 1..n    the pieces of the body, as they went out (with an SSE `id: <seq>` line when the dialect has ids)
seq n       the last piece is flagged: the reply ended there
```

A tape's `size` is what it costs the process, not only its bytes: each piece costs its bytes and a Python object,
and the tape its bookkeeping. Pieces are kept at their own size: orjson's output (a whole-body reply, a task's
update) sits in a buffer larger than it, 4 KiB for a small one and several times it for a large one, so a piece
that may be one is copied.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import NamedTuple, Protocol

import orjson


class TapeLost(Exception):
    """The run's reply is no longer kept (it outgrew the limits, its replica went away, or it was never kept): it
    cannot be resumed."""


class TapeBroken(TapeLost):
    """Entries in the middle of the run's reply are gone (written to a Redis primary as it was replaced): what
    follows them cannot be sent without a hole."""


PIECE_COST = 64
"""Bytes a kept piece costs beyond its data: its bytes object's header and its slot in the list, rounded."""
TAPE_COST = 1024
"""Bytes a kept tape costs beyond its pieces: the tape, its keys and its places on the board."""


class Entry(NamedTuple):
    seq: int
    data: bytes
    last: bool


class Head(NamedTuple):
    status: int
    headers: dict[str, str]
    keep_alive: bytes
    dialect: str = ""
    """The dialect the reply is written in, for a follower of another to translate it ("" where unknown)."""
    run_id: str = ""
    """The run's id, the same for every follower, for one whose dialect names the run where the reply does not."""

    def dump(self) -> bytes:
        return orjson.dumps({"status": self.status, "headers": self.headers, "keep_alive": self.keep_alive.decode(),
                             "dialect": self.dialect, "run_id": self.run_id})

    @staticmethod
    def load(data: bytes) -> Head:
        value = orjson.loads(data)
        return Head(value["status"], value["headers"], value["keep_alive"].encode(), value.get("dialect", ""),
                    value.get("run_id", ""))


class RunReply(Protocol):
    """A run's kept reply as a resuming client reads it, wherever the run is."""

    async def read(self, start: int, wait: float) -> list[Entry]:
        """The entries from `start` on, waiting up to `wait` seconds for one when there are none yet (then []).
        Raises `TapeLost` when the reply is no longer kept."""
        ...


class Mirror(Protocol):
    """Where a tape's entries are copied for other replicas to read (Redis)."""

    def append(self, seq: int, data: bytes, last: bool) -> None: ...

    def lose(self) -> None: ...


class Tape:
    """A run's reply in the process that runs it: appended by the run's request, read by any number of followers.
    Bounded: past `max_entries` pieces or `max_bytes` it is dropped whole (`lost`), and the run goes on unkept."""

    __slots__ = ("_changed", "conversation", "dialect", "ended", "entries", "event_ids", "keep", "key", "lost",
                 "max_bytes", "max_entries", "mirror", "owner", "run_id", "size", "stop")

    def __init__(self, key: str, *, event_ids: bool, max_entries: int, max_bytes: int, keep: float,
                 conversation: str | None = None, owner: str = "anonymous", dialect: str = "",
                 run_id: str = "") -> None:
        self.key = key
        self.dialect = dialect
        """The dialect of the client the reply is written for, named in its head, with `run_id`."""
        self.run_id = run_id
        self.owner = owner
        """The principal whose run it is: the board bounds what each principal's ended runs keep."""
        self.keep = keep
        """Seconds the reply is kept once the run has ended, for a client that comes back late."""
        self.conversation = conversation
        """The board's key for the run's conversation, when it has one: a resume may name the conversation."""
        self.event_ids = event_ids
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.entries: list[bytes] = []
        self.size = TAPE_COST
        """What the kept reply costs in memory, in bytes (see the module's docstring)."""
        self.ended = False
        self.lost = False
        self.stop: Callable[[], None] | None = None
        """Ends the run upstream (set by the request running it): an explicit stop, from any replica."""
        self.mirror: Mirror | None = None
        """Copies each entry where other replicas read it (Redis), when there are other replicas."""
        self._changed: asyncio.Future[None] | None = None

    def open(self, head: Head) -> None:
        self.begin(head._replace(dialect=self.dialect, run_id=self.run_id).dump())

    def begin(self, first: bytes) -> None:
        """The first entry: a reply's head, or what the readers of a run's feed start from."""
        self._append(_at_its_size(first), last=False)

    def record(self, body: bytes, *, last: bool = False) -> bytes:
        """Keep a piece of the reply (`last`: its end); returns it as the client is to be sent it (with each SSE
        event's `id:`, for a dialect whose clients reconnect with `Last-Event-ID`)."""
        if self.lost:
            return body
        if not self.event_ids or not body:
            self._append(_at_its_size(body), last=last)  # it may be orjson's output, in a buffer of 4 KiB or many MiB
            return body
        frames = body.split(b"\n\n")
        tail = frames.pop()  # b"" when the body is whole frames, as encoders write them
        seq = len(self.entries)
        pieces = [b"id: %d\n%s\n\n" % (seq + n, frame) for n, frame in enumerate(frames)]
        if tail:
            pieces.append(tail)
        for n, piece in enumerate(pieces, 1):
            self._append(piece, last=last and n == len(pieces))
        return b"".join(pieces)

    def abandon(self) -> None:
        """Stop keeping the reply (it outgrew the limits, or the run ended without its end being kept): followers
        are told it is lost, and its memory goes."""
        if not self.ended and not self.lost:
            self.lost = True
            self.entries = []
            if self.mirror is not None:
                self.mirror.lose()
            self._wake()

    def _append(self, data: bytes, *, last: bool) -> None:
        if self.lost:
            return
        self.entries.append(data)
        self.size += len(data) + PIECE_COST
        if len(self.entries) > self.max_entries or self.size > self.max_bytes:
            self.abandon()
            return
        if last:
            self.ended = True
        if self.mirror is not None:
            self.mirror.append(len(self.entries) - 1, data, last)
        self._wake()

    def _wake(self) -> None:
        changed = self._changed
        if changed is not None:
            self._changed = None
            if not changed.done():
                changed.set_result(None)

    async def read(self, start: int, wait: float) -> list[Entry]:
        if self.lost:
            raise TapeLost
        entries = self.entries
        if start >= len(entries) and not self.ended:
            changed = self._changed
            if changed is None:
                changed = self._changed = asyncio.get_running_loop().create_future()
            try:
                await asyncio.wait_for(asyncio.shield(changed), wait)
            except TimeoutError:
                return []
            if self.lost:
                raise TapeLost
            entries = self.entries
        end = len(entries) - 1 if self.ended else -1
        return [Entry(seq, entries[seq], seq == end) for seq in range(start, len(entries))]


def _at_its_size(data: bytes) -> bytes:
    """A copy of `data` in a buffer of its own size."""
    return bytes(memoryview(data))
