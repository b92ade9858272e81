"""Runs their clients ask about after starting them (`gateway.core.queries`), on any replica.

Each request of such a run has a feed on the run board, under a key of its route, caller and run id: first the
run's record as the request found it, then every update the client dialect's log makes of the run's events. Over
Redis the feed is mirrored like a resumable run's reply, so any replica can read the run as it goes, follow it, and
stop it. The record goes to the store when the upstream has answered and when the request ends, so that a run
that is not running is read from the store, and listed from it.

```
request ─ claim feed ─ upstream 2xx: record (running) ─ events ▸ log ▸ updates ▸ feed ─ end: record ▸ feed's end
query ─ find: running? its feed (record + updates) : its record ─ cancel: stop it, read its feed to the end
watcher ─ follow: updates as they come; a run that waits for its client: the next request's too
```
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Protocol

from pydantic import TypeAdapter

from gateway.conversations.store import StoreError, scoped_key
from gateway.core.errors import ConversationMismatch, RunNotContinuable, RunNotFound, WebhooksNotSupported
from gateway.core.events import Event
from gateway.core.queries import RunLog, RunQueries, RunRecord, RunState, RunStatus
from gateway.core.turn import Turn
from gateway.runs.board import RunBoard
from gateway.runs.records import RunRecords
from gateway.runs.tape import Entry, RunReply, Tape, TapeLost
from gateway.runs.webhooks import CallerWebhooks, RouteWebhooks

log = logging.getLogger("agent_gateway.runs")

FEED_KEEP = 60.0
"""Seconds an ended feed is kept for readers that come late (its record is in the store by then)."""
SETTLE_SECONDS = 2.0
"""How long a request that continues a run waits for the run's previous request to be seen ended everywhere."""
CANCEL_SECONDS = 10.0
"""How long a cancel waits for the run to stop before it answers with the run as it stands."""
READ_WAIT = 1.0
SCAN_BATCH = 500
"""Records read at a time when a listing keeps one conversation's."""

_RECORD = TypeAdapter(RunRecord)


class UpdateSink(Protocol):
    """Where else a run's updates go as they come (the webhooks its clients registered)."""

    def offer(self, update: bytes) -> None: ...


class RouteRuns:
    """The runs of one route whose clients ask about them: started here, found, cancelled and followed anywhere."""

    def __init__(self, route: str, board: RunBoard, records: RunRecords, *, lifetime: float, patience: float,
                 max_entries: int, max_bytes: int, webhooks: RouteWebhooks | None = None,
                 pushes: Callable[[CallerWebhooks, str], UpdateSink] | None = None,
                 leftovers: Callable[[str, str], Awaitable[None]] | None = None) -> None:
        self.route = route
        self.board = board
        self.records = records
        self.webhooks = webhooks
        """The runs' webhooks, on a route that pushes updates."""
        self.pushes = pushes
        """A run's deliveries to its webhooks, given them and the run's id."""
        self.leftovers = leftovers
        """Deletes what else the gateway keeps of a run, given its caller and its id (the conversation as a run of a
        chain left it), when the run is forgotten."""
        self.lifetime = lifetime
        """How long a run may last (the route's total timeout)."""
        self.patience = patience
        """How long a watcher waits with nothing new before it is let go."""
        self.max_entries = max_entries
        self.max_bytes = max_bytes

    def key(self, principal: str, run_id: str) -> str:
        return scoped_key("feed", self.route, principal, run_id)

    def caller(self, principal: str) -> CallerRuns:
        return CallerRuns(self, principal)

    async def continuing(self, principal: str, queries: RunQueries, turn: Turn) -> Turn:
        """The turn, checked against the run it continues, if it names one: the run must be the caller's and wait
        for it (raises `RunNotFound`, `RunNotContinuable`, `ConversationMismatch`; `StoreError`)."""
        run_id = queries.continues(turn)
        if run_id is None:
            return turn
        runs = self.caller(principal)
        state = await runs.find(run_id)
        if state is not None and state.running:  # its previous request may have just ended, on another replica
            await runs.wait_end(run_id, SETTLE_SECONDS)
            state = await runs.find(run_id)
        if state is None:
            raise RunNotFound(f"there is no task {run_id!r}")
        record = state.record
        if state.running:
            raise RunNotContinuable(f"task {run_id!r} is still working: wait for it to ask for input, or cancel it")
        if record.status != "interrupt":
            raise RunNotContinuable(f"task {run_id!r} has ended ({_ENDINGS.get(record.status, record.status)}) and "
                                    "takes no more messages: start a new task")
        if turn.conversation_id and record.conversation_id and turn.conversation_id != record.conversation_id:
            raise ConversationMismatch(f"task {run_id!r} belongs to context {record.conversation_id!r}, not "
                                       f"{turn.conversation_id!r}")
        return queries.continued(turn, record)

    async def start(self, principal: str, queries: RunQueries, turn: Turn) -> WatchedRun:
        """The feed of a request of a run, claimed on the board (raises `RunNotContinuable` if another request of
        the run is running; `StoreError`)."""
        run_id = turn.run_id or ""
        sink: UpdateSink | None = None
        registered = queries.webhooks(turn)
        if self.webhooks is not None and self.pushes is not None:
            webhooks = self.webhooks.caller(principal)
            for webhook in registered:
                await webhooks.add(run_id, webhook)
            sink = self.pushes(webhooks, run_id)
        elif registered:
            raise WebhooksNotSupported("this agent sends no push notifications: follow the task with "
                                       "SubscribeToTask, or read it with GetTask")
        earlier = await self.records.load(self.route, principal, run_id) if queries.continues(turn) else None
        log = queries.new_log(turn)
        base = RunRecord(run_id, turn.conversation_id, "running", log.document(),
                         earlier.requests + 1 if earlier is not None else 1)
        key = self.key(principal, run_id)
        for attempt in (1, 2):
            tape = Tape(key, event_ids=False, max_entries=self.max_entries, max_bytes=self.max_bytes,
                        keep=FEED_KEEP, owner=principal)
            running = await self.board.claim(tape, self.lifetime)
            if running is None:
                tape.begin(_RECORD.dump_json(base))
                return WatchedRun(self, principal, log, tape, base, sink, queries.left_tools_wait)
            if attempt == 1:  # an earlier request of the run, ending as this one starts
                await _read_to_end(running, time.monotonic() + SETTLE_SECONDS)
        raise RunNotContinuable(f"task {run_id!r} is still working: wait for it to ask for input, or cancel it")


_ENDINGS = {"success": "completed", "cancelled": "canceled", "error": "failed"}


class WatchedRun:
    """One request of a run: its updates on the feed, its record in the store."""

    __slots__ = ("_base", "_ended", "_left_tools_wait", "_log", "_principal", "_runs", "_saved", "_sink", "tape")

    def __init__(self, runs: RouteRuns, principal: str, log: RunLog, tape: Tape, base: RunRecord,
                 sink: UpdateSink | None = None, left_tools_wait: bool = False) -> None:
        self._runs = runs
        self._left_tools_wait = left_tools_wait
        self._sink = sink
        self._principal = principal
        self._log = log
        self.tape = tape
        self._base = base
        self._saved = False
        self._ended = False

    async def answered(self) -> None:
        """The upstream has answered: the run is listed, and readable from the store, as running."""
        await self._save(self._base)
        self._saved = True

    def feed(self, events: list[Event]) -> None:
        """A batch of the run's events: their updates on the feed."""
        for update in self._log.feed(events):
            self.tape.record(update)
            if self._sink is not None:
                self._sink.offer(update)

    async def finish(self, status: RunStatus, tools_left: bool = False) -> None:
        """The request ended the run, or paused it: its record as it stands, then the end of the feed. A run that
        ended on calls of the client's tools (`tools_left`) is paused where its dialect waits for their results."""
        if status == "success" and tools_left and self._left_tools_wait:
            status = "interrupt"
        if self._ended:
            return
        self._ended = True
        base = self._base
        await self._save(RunRecord(base.run_id, base.conversation_id, status, self._log.document(), base.requests))
        self._end()

    async def close(self) -> None:
        """The request is over: a run it started and never finished (the gateway failed mid-run) is recorded as
        failed; one whose upstream never answered keeps the record it had."""
        if not self._ended and self._saved:
            await self.finish("error")
        self._ended = True
        self._end()

    def _end(self) -> None:
        """The end of the feed. An ended feed is looked up only by a follower of a run that waited for its client,
        for the request that continued it (`CallerRuns.follow`): the feed of a run's first request is not kept here
        (a follower on another replica reads its copy in Redis, kept as long as the others)."""
        if not self.tape.ended and not self.tape.lost:
            self.tape.record(b"", last=True)
        self._runs.board.finish(self.tape, kept=self._base.requests > 1)

    async def _save(self, record: RunRecord) -> None:
        """Keep the record; a store that fails costs the record, not the run."""
        try:
            await self._runs.records.save(self._runs.route, self._principal, record)
        except StoreError as exc:
            log.warning("route %s: task %s not saved: %s", self._runs.route, record.run_id, exc)


class CallerRuns:
    """One caller's runs on one route (`gateway.core.queries.CallerRuns`)."""

    def __init__(self, runs: RouteRuns, principal: str) -> None:
        self._runs = runs
        self._principal = principal
        self.webhooks: CallerWebhooks | None = runs.webhooks.caller(principal) if runs.webhooks is not None else None

    async def find(self, run_id: str) -> RunState | None:
        runs = self._runs
        reply = await runs.board.running(runs.key(self._principal, run_id))
        if reply is not None:
            try:
                entries = await _read_to_end(reply, time.monotonic())
            except TapeLost:
                entries = []
            if entries:
                record = _RECORD.validate_json(entries[0].data)
                return RunState(record, [e.data for e in entries[1:] if e.data], not entries[-1].last)
        stored = await runs.records.load(runs.route, self._principal, run_id)
        return RunState(stored) if stored is not None else None

    async def cancel(self, run_id: str) -> RunState | None:
        state = await self.find(run_id)
        if state is None or not state.running:
            return state
        await self._runs.board.stop(self._runs.key(self._principal, run_id))
        await self.wait_end(run_id, CANCEL_SECONDS)
        return await self.find(run_id)

    async def wait_end(self, run_id: str, seconds: float) -> None:
        """Until the running request of the run ends, or `seconds` have passed."""
        reply = await self._runs.board.running(self._runs.key(self._principal, run_id))
        if reply is not None:
            with contextlib.suppress(TapeLost):
                await _read_to_end(reply, time.monotonic() + seconds)

    async def save(self, record: RunRecord) -> None:
        await self._runs.records.save(self._runs.route, self._principal, record)

    async def forget(self, run_id: str) -> bool:
        runs = self._runs
        if await runs.records.load(runs.route, self._principal, run_id) is None:
            return False
        await runs.records.delete(runs.route, self._principal, run_id)
        if runs.leftovers is not None:
            await runs.leftovers(self._principal, run_id)
        return True

    async def newest(self, after: str | None, limit: int, *, conversation: str | None = None) -> list[RunRecord]:
        runs = self._runs
        if conversation is None:
            return await runs.records.newest(runs.route, self._principal, after, limit)
        found: list[RunRecord] = []
        while len(found) < limit and (batch := await runs.records.newest(runs.route, self._principal, after,
                                                                           SCAN_BATCH)):
            found += [record for record in batch if record.conversation_id == conversation]
            after = batch[-1].cursor
        return found[:limit]

    async def follow(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        runs = self._runs
        key = runs.key(self._principal, run_id)
        reply = await runs.board.running(key)
        seen = await self._requests(reply) if reply is not None else None
        skip = after
        while True:
            if reply is None:
                record = await runs.records.load(runs.route, self._principal, run_id)
                if record is None or record.status != "interrupt":
                    return
                # The run waits for its client: the request that continues it goes on, however soon it ends.
                found = await self._next_request(key, max(seen or 0, record.requests))
                if found is None:
                    return
                reply, seen = found
                skip = 0
            start, silent = 1 + skip, 0.0
            while True:
                try:
                    entries = await reply.read(start, READ_WAIT)
                except TapeLost:
                    return
                if not entries:
                    silent += READ_WAIT
                    if silent > runs.patience:
                        return
                    continue
                silent = 0.0
                for entry in entries:
                    if entry.data and entry.seq > 0:
                        yield entry.data
                start = entries[-1].seq + 1
                if entries[-1].last:
                    break
            reply = None

    async def _next_request(self, key: str, requests: int) -> tuple[RunReply, int] | None:
        """The feed of the run's request after its `requests`-th, once one starts (running, or already ended)."""
        deadline = time.monotonic() + self._runs.patience
        while time.monotonic() < deadline:
            reply = await self._runs.board.find(key)
            count = await self._requests(reply) if reply is not None else None
            if reply is not None and count is not None and count > requests:
                return reply, count
            await asyncio.sleep(READ_WAIT / 4)
        return None

    @staticmethod
    async def _requests(reply: RunReply) -> int | None:
        """Which request of its run a feed is (its first entry says)."""
        try:
            first = await reply.read(0, 0.0)
        except TapeLost:
            return None
        return _RECORD.validate_json(first[0].data).requests if first else None


async def _read_to_end(reply: RunReply, deadline: float) -> list[Entry]:
    """A feed's entries so far, and as they come until its end or `deadline`."""
    entries: list[Entry] = []
    while True:
        more = await reply.read(len(entries), max(0.0, min(READ_WAIT, deadline - time.monotonic())))
        entries += more
        if (entries and entries[-1].last) or (not more and time.monotonic() >= deadline):
            return entries

