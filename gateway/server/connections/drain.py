"""Stopping without cutting anyone off: on SIGTERM or Ctrl-C the gateway drains, then exits.

```
signal ─▶ uvicorn stops accepting and closes idle connections; /readyz says "draining"; new runs get a 503
       ─▶ the streams in flight run on, for up to `drain_seconds`
       ─▶ each still running then is ended in band, in its client's dialect (a second signal: at once)
       ─▶ the process exits 0
```

A run ended so is abandoned upstream as one whose client left is. A resumable run's reply is kept with its end,
so a client that comes back to another replica (over Redis) reads it whole; a client following a run here is cut
short without an end, and may come back to another replica.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

log = logging.getLogger("agent_gateway.app")

SIGNALS = (signal.SIGINT, signal.SIGTERM)

Handler = Callable[[int, FrameType | None], Any] | int | None


def exit_quietly_when_stopped() -> None:
    """Once uvicorn has shut down on a signal it raises the signal again, for whatever handled it before it ran:
    Python's SIGINT handler would print a KeyboardInterrupt traceback, SIGTERM's default would kill the process
    that had just drained. Handled here by nothing, the process exits 0. Call it before the server runs."""
    for sig in SIGNALS:
        signal.signal(sig, _nothing)


def _nothing(sig: int, frame: FrameType | None) -> None:
    return None


class Stream(Protocol):
    def shut_down(self) -> None:
        """End the exchange in band now (or as soon as it has something to end)."""


class Drain:
    """The exchanges of this process, and whether it is draining."""

    def __init__(self, grace: float) -> None:
        self.grace = grace
        self.streams: set[Stream] = set()
        self.draining = False
        self._signals = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._restore: dict[int, Handler] = {}
        self.on_begin: list[Callable[[float], None]] = []
        """Told the grace when the drain begins: what serves calls other than the HTTP server's (`Listener`)."""

    def begin(self, heard: int = signal.SIGTERM) -> None:
        """Start draining (in the event loop) on the signal `heard`; a second call ends what is left at once."""
        if self.draining:
            self._end_all("a second signal")
            return
        self.draining = True
        for begun in self.on_begin:
            begun(self.grace)
        if not self.streams:
            log.info("draining: no stream is running")
        else:
            again = "a second Ctrl-C" if heard == signal.SIGINT else f"another {signal.Signals(heard).name}"
            they, them = ("it", "it") if len(self.streams) == 1 else ("they", "them")
            log.info("draining %s: %s may run %gs more; %s ends %s now", _streams(len(self.streams)), they,
                     self.grace, again, them)
        self._task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.grace
        while self.streams and loop.time() < deadline:
            await asyncio.sleep(0.1)
        if self.streams:
            self._end_all(f"{self.grace:g}s")

    def _end_all(self, why: str) -> None:
        if self.streams:
            log.warning("ending %s still running after %s", _streams(len(self.streams)), why)
        for stream in list(self.streams):
            stream.shut_down()

    def install(self) -> None:
        """Hear the signals that stop the server before it does (in the main thread only: elsewhere, as in the
        tests' servers, nothing can be heard). The first starts the drain, and the server's own shutdown, which
        waits for the streams; a second ends them now; a third is the server's again (it forces the exit)."""
        if threading.current_thread() is not threading.main_thread():
            return
        self._loop = asyncio.get_running_loop()
        for sig in SIGNALS:
            server_handler = signal.getsignal(sig)
            self._restore[sig] = server_handler
            signal.signal(sig, self._heard(server_handler))

    def uninstall(self) -> None:
        for sig, handler in self._restore.items():
            signal.signal(sig, handler)
        self._restore.clear()
        if self._task is not None:
            self._task.cancel()

    def _heard(self, server_handler: Handler) -> Callable[[int, FrameType | None], None]:
        def heard(sig: int, frame: FrameType | None) -> None:
            self._signals += 1
            if self._signals <= 2 and self._loop is not None:
                self._loop.call_soon_threadsafe(self.begin, sig)
            if (self._signals == 1 or self._signals > 2) and callable(server_handler):
                server_handler(sig, frame)

        return heard


def _streams(count: int) -> str:
    return f"{count} stream{'' if count == 1 else 's'}"
