"""Where the resumable runs are: a run claims its key before it starts, so a retry of the same request attaches
to it instead of starting a second one; a resume finds its reply by key or by conversation; a stop reaches it.

`RunBoard` knows the runs of this process (the memory and SQLite stores: one process). `RedisRunBoard`
(gateway/runs/redis.py) adds every replica's, over the Redis the replicas share.
"""

from __future__ import annotations

import asyncio
import collections

from gateway.runs.tape import RunReply, Tape


class RunBoard:
    """The resumable runs of this process, running and recently ended. An ended run's reply is kept for its tape's
    `keep` seconds, and all ended replies together for at most `max_kept_bytes` (the oldest go first)."""

    def __init__(self, max_kept_bytes: int) -> None:
        self.max_kept_bytes = max_kept_bytes
        self.tapes: dict[str, Tape] = {}
        self.conversations: dict[str, str] = {}
        """A conversation's key to its latest run's key."""
        self._kept: collections.OrderedDict[str, Tape] = collections.OrderedDict()
        self._kept_bytes = 0

    def _running(self, key: str) -> Tape | None:
        tape = self.tapes.get(key)
        return tape if tape is not None and not tape.ended and not tape.lost else None

    async def claim(self, tape: Tape, lifetime: float) -> RunReply | None:
        """Make `tape` the reply of the run its key names, unless a run of that key is running: then that run's
        reply, to attach to. `lifetime` bounds how long the run may run (its total timeout)."""
        running = self._running(tape.key)
        if running is not None:
            return running
        self._register(tape)
        return None

    def _register(self, tape: Tape) -> None:
        self._forget(tape.key)
        self.tapes[tape.key] = tape
        if tape.conversation is not None:
            self.conversations[tape.conversation] = tape.key

    def finish(self, tape: Tape) -> None:
        """The run is over (ended, failed or cut off): keep its reply for late resumes, within the bounds."""
        tape.abandon()  # unless it ended: a reply without its end is no use to a follower
        tape.stop = None
        if self.tapes.get(tape.key) is not tape:
            return
        if tape.lost or tape.keep <= 0:
            self._forget(tape.key)
            return
        self._kept[tape.key] = tape
        self._kept_bytes += tape.size
        while self._kept_bytes > self.max_kept_bytes and self._kept:
            self._forget(next(iter(self._kept)))
        asyncio.get_running_loop().call_later(tape.keep, self._expire, tape)

    def _expire(self, tape: Tape) -> None:
        if self.tapes.get(tape.key) is tape:
            self._forget(tape.key)

    def _forget(self, key: str) -> None:
        tape = self.tapes.pop(key, None)
        if tape is None:
            return
        if tape.conversation is not None and self.conversations.get(tape.conversation) == key:
            del self.conversations[tape.conversation]
        if self._kept.pop(key, None) is not None:
            self._kept_bytes -= tape.size

    async def find(self, key: str) -> RunReply | None:
        """The reply of the run `key` names, running or kept after its end."""
        tape = self.tapes.get(key)
        return tape if tape is not None and not tape.lost else None

    async def running(self, key: str) -> RunReply | None:
        """The reply of the run `key` names, if it is running."""
        return self._running(key)

    async def running_in(self, conversation: str) -> RunReply | None:
        """The reply of the conversation's run, if one is running."""
        key = self.conversations.get(conversation)
        return self._running(key) if key is not None else None

    async def stop(self, key: str) -> bool:
        """End the run `key` names upstream, wherever it runs; False if none is running."""
        tape = self._running(key)
        if tape is None or tape.stop is None:
            return False
        tape.stop()
        return True

    async def stop_conversation(self, conversation: str) -> bool:
        key = self.conversations.get(conversation)
        return key is not None and await self.stop(key)

    async def close(self) -> None:
        return None
