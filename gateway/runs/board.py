"""Where the resumable runs are: a run claims its key before it starts, so a retry of the same request attaches
to it instead of starting a second one; a resume finds its reply by key or by conversation; a stop reaches it.
A run whose reply is not kept may still be made `stoppable` by a name, for a stop asked of any replica.

`RunBoard` knows the runs of this process (the memory and SQLite stores: one process). `RedisRunBoard`
(gateway/runs/redis.py) adds every replica's, over the Redis the replicas share.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable
from dataclasses import dataclass

from gateway.runs.tape import RunReply, Tape


@dataclass(frozen=True, slots=True)
class KeptLimits:
    """What the ended runs' replies kept for late resumes may cost one process: past any bound, the oldest go first
    (of the principal's own, for `per_principal`, so that no caller can push out another's)."""

    bytes: int = 256 * 1024 * 1024
    """Their cost in memory, as `Tape.size` counts it."""
    replies: int = 10_000
    per_principal: int = 1_000


class RunBoard:
    """The resumable runs of this process, running and recently ended. An ended run's reply is kept for its tape's
    `keep` seconds, within `KeptLimits`."""

    def __init__(self, limits: KeptLimits | None = None) -> None:
        self.limits = limits or KeptLimits()
        self.tapes: dict[str, Tape] = {}
        self.conversations: dict[str, str] = {}
        """A conversation's key to its latest run's key."""
        self._kept: collections.OrderedDict[str, Tape] = collections.OrderedDict()
        """The ended replies kept, oldest first."""
        self._kept_of: dict[str, collections.OrderedDict[str, None]] = {}
        """Each principal's kept replies' keys, oldest first."""
        self._expiring: dict[float, collections.OrderedDict[str, float]] = {}
        """By `keep` (one per route): kept replies' keys and when each expires, which is also their order."""
        self._kept_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._stoppers: dict[str, Callable[[], None]] = {}
        """The runs of this process made `stoppable`, by name."""

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

    def finish(self, tape: Tape, *, kept: bool = True) -> None:
        """The run is over (ended, failed or cut off): keep its reply for late resumes, within the limits; not when
        nothing will look it up here again (`kept` False: its followers hold it already)."""
        tape.abandon()  # unless it ended: a reply without its end is no use to a follower
        tape.stop = None
        if self.tapes.get(tape.key) is not tape:
            return
        if tape.lost or tape.keep <= 0 or not kept:
            self._forget(tape.key)
            return
        key, limits = tape.key, self.limits
        self._kept[key] = tape
        self._kept_bytes += tape.size
        own = self._kept_of.setdefault(tape.owner, collections.OrderedDict())
        own[key] = None
        while len(own) > limits.per_principal:
            self._forget(next(iter(own)))
        while self._kept and (self._kept_bytes > limits.bytes or len(self._kept) > limits.replies):
            self._forget(next(iter(self._kept)))
        if key in self._kept:
            loop = asyncio.get_running_loop()
            expires = loop.time() + tape.keep
            self._expiring.setdefault(tape.keep, collections.OrderedDict())[key] = expires
            if self._timer is None or expires < self._timer_at:
                self._wake_at(expires)

    def _wake_at(self, when: float) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = asyncio.get_running_loop().call_at(when, self._expire)

    def _expire(self) -> None:
        """Forget the kept replies whose time is up, and wake again for the next."""
        self._timer = None
        now = asyncio.get_running_loop().time()
        for keys in list(self._expiring.values()):
            while keys and next(iter(keys.values())) <= now:
                self._forget(next(iter(keys)))
        fronts = [next(iter(keys.values())) for keys in self._expiring.values()]
        if fronts:
            self._wake_at(min(fronts))

    def _forget(self, key: str) -> None:
        tape = self.tapes.pop(key, None)
        if tape is None:
            return
        if tape.conversation is not None and self.conversations.get(tape.conversation) == key:
            del self.conversations[tape.conversation]
        if self._kept.pop(key, None) is None:
            return
        self._kept_bytes -= tape.size
        own = self._kept_of[tape.owner]
        del own[key]
        if not own:
            del self._kept_of[tape.owner]
        expiring = self._expiring.get(tape.keep)
        if expiring is not None and expiring.pop(key, None) is not None and not expiring:
            del self._expiring[tape.keep]

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

    async def kept_in(self, conversation: str) -> RunReply | None:
        """The reply of the conversation's latest run, running or kept after its end."""
        key = self.conversations.get(conversation)
        return await self.find(key) if key is not None else None

    async def stop(self, key: str) -> bool:
        """End the run `key` names upstream, wherever it runs; False if none is running."""
        tape = self._running(key)
        if tape is None or tape.stop is None:
            return False
        tape.stop()
        return True

    def stoppable(self, name: str, stop: Callable[[], None]) -> Callable[[], None]:
        """Let `stop_named(name)`, asked of any replica, call `stop` (a run with no reply kept: a request's that
        names its run, MCP's call ids); returns what forgets it, once the run is over."""
        self._stoppers[name] = stop

        def forget() -> None:
            if self._stoppers.get(name) is stop:
                del self._stoppers[name]

        return forget

    async def stop_named(self, name: str) -> bool:
        """Stop the run made `stoppable` by `name`; False if none is, here (another replica's: over Redis)."""
        stop = self._stoppers.get(name)
        if stop is None:
            return False
        stop()
        return True

    async def stop_conversation(self, conversation: str) -> bool:
        key = self.conversations.get(conversation)
        return key is not None and await self.stop(key)

    async def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
