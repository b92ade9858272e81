"""An AG-UI agent whose runs last until the test lets them end: each says its first words, then waits at a gate the
test opens before it says the rest and finishes. A test that must see a run still going (answered at once, followed
from elsewhere) then proves it by the gate, not by racing a clock on a loaded machine."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

FIRST, REST = "Held", " and let go."
DEADLINE_SECONDS = 30.0
"""The longest a run waits at a closed gate: past it, the run ends as if let go (a test that failed never leaves
its upstream's run open)."""


class GatedAgent:
    """`app` serves AG-UI at `/agui`; `gate` is closed until the test opens it; `waiting` counts the runs at it.
    With `chatter`, a run at the gate says one more word every `chatter` seconds (a run that keeps changing)."""

    def __init__(self, chatter: float | None = None) -> None:
        self.chatter = chatter
        self.gate = threading.Event()
        self.waiting = 0
        self.app = Starlette(routes=[Route("/agui", self._run, methods=["POST"])])

    async def _run(self, request: Request) -> StreamingResponse:
        body = orjson.loads(await request.body())
        ids = {"threadId": body.get("threadId", "thread"), "runId": body.get("runId", "run")}
        return StreamingResponse(self._events(ids), media_type="text/event-stream")

    async def _events(self, ids: dict[str, str]) -> AsyncIterator[bytes]:
        message = {"messageId": f"msg-{ids['runId']}"}
        yield _sse({"type": "RUN_STARTED", **ids})
        yield _sse({"type": "TEXT_MESSAGE_START", **message, "role": "assistant"})
        yield _sse({"type": "TEXT_MESSAGE_CONTENT", **message, "delta": FIRST})
        self.waiting += 1
        try:
            deadline = time.monotonic() + DEADLINE_SECONDS
            said = time.monotonic()
            while not self.gate.is_set() and time.monotonic() < deadline:
                if self.chatter is not None and time.monotonic() - said >= self.chatter:
                    said = time.monotonic()
                    yield _sse({"type": "TEXT_MESSAGE_CONTENT", **message, "delta": "."})
                await asyncio.sleep(0.02)
        finally:
            self.waiting -= 1
        yield _sse({"type": "TEXT_MESSAGE_CONTENT", **message, "delta": REST})
        yield _sse({"type": "TEXT_MESSAGE_END", **message})
        yield _sse({"type": "RUN_FINISHED", **ids})


def _sse(event: dict[str, str]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"
