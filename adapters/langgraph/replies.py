"""What a LangGraph run's request is answered with (`resources.REPLY`): its stream (`encode.LangGraphEncoder`), the
`Run` at once while the run goes on (a background run, `POST /threads/{id}/runs`), or the thread's values at the
run's end (`POST .../runs/wait`), as LangGraph's server answers them.

A background run is answered once it has started (its first events), not before the upstream is called: the run
then exists, and a join (`GET .../runs/{run_id}/stream`, `.../join`) finds it on any replica.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.encoding import BodyEncoder, Encoder
from gateway.core.turn import Turn

from .encode import LangGraphEncoder
from .threads import run_document, status_after

JSON = "application/json"


def new_encoder(request: Turn | None = None) -> Encoder:
    asked = request.metadata.get("langgraph") if request is not None else None
    reply = asked.get("reply") if isinstance(asked, dict) else None
    if request is not None and reply == "run":
        return RunAtOnce(request)
    if request is not None and reply == "wait":
        return ValuesAtEnd(request)
    return LangGraphEncoder(request)


def _location(request: Turn) -> dict[str, str]:
    if request.conversation_id and request.run_id:
        return {"content-location": f"/threads/{request.conversation_id}/runs/{request.run_id}"}
    return {}


class RunAtOnce(BodyEncoder):
    """The `Run`, in one body, with the run's first events: the relay answers with it, and the run goes on without
    its client to its end (stored, listed and joinable like any)."""

    __slots__ = ("_answered", "_run")

    def __init__(self, request: Turn) -> None:
        super().__init__({"content-type": JSON, **_location(request)})
        self._run = run_document(request)
        self._answered = False

    def encode(self, events: list[canonical.Event]) -> bytes:
        if self._answered or not events:
            return b""
        self._answered = True
        self._run["status"] = status_after(events, "running")
        return orjson.dumps(self._run)


class ValuesAtEnd(BodyEncoder):
    """The thread's values once the run ends (what waits in `__interrupt__`), or `{"__error__": {error, message}}`
    for a run that failed or was cancelled, in one body."""

    __slots__ = ("_stream",)

    def __init__(self, request: Turn) -> None:
        super().__init__({"content-type": JSON, **_location(request)})
        self._stream = LangGraphEncoder(request)
        self.dropped = self._stream.dropped  # what the thread's values could not carry

    def encode(self, events: list[canonical.Event]) -> bytes:
        self._stream.encode(events)  # what the thread's values become
        last = events[-1] if events else None
        if type(last) is canonical.RunError:
            return orjson.dumps({"__error__": {"error": last.code or "Error", "message": last.message}})
        if type(last) is canonical.RunFinished:
            if last.outcome == "cancelled":
                return orjson.dumps({"__error__": {"error": "CancelledError", "message": "the run was cancelled"}})
            values: dict[str, Any] = self._stream.values()
            return orjson.dumps(values)
        return b""
