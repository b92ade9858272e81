"""Threads, their state, runs and assistants as LangGraph's API schema writes them (`Thread`, `ThreadState`, `Run`,
`Assistant`), from what the gateway keeps: a conversation is a thread, a run's record its `Run`."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from gateway.core import events as canonical
from gateway.core.queries import KeptConversation
from gateway.core.turn import Turn

from .encode import LangGraphEncoder
from .messages import to_langchain
from .request import assistant_id


def now() -> str:
    return datetime.now(UTC).isoformat()


def values_of(kept: KeptConversation | None) -> dict[str, Any]:
    if kept is None:
        return {"messages": []}
    state = kept.state if isinstance(kept.state, dict) else {}
    return {**state, "messages": [to_langchain(m) for m in kept.messages if m.role != "reasoning"]}


def thread(thread_id: str, kept: KeptConversation | None, metadata: Any = None) -> dict[str, Any]:
    stamp = now()
    return {"thread_id": thread_id, "created_at": stamp, "updated_at": stamp, "state_updated_at": stamp,
            "metadata": metadata if isinstance(metadata, dict) else {}, "config": {},
            "status": "interrupted" if kept is not None and kept.interrupts else "idle",
            "values": values_of(kept) if kept is not None else None,
            "interrupts": {i: [{"id": i, "value": {}}] for i in kept.interrupts} if kept is not None else {}}


def state(thread_id: str, kept: KeptConversation | None) -> dict[str, Any]:
    """The thread's state: its messages and shared state as the store keeps them, and what it waits on (the
    interrupts by id: their values are the stream's, which the store does not keep)."""
    interrupts = [{"id": i, "value": {}} for i in kept.interrupts] if kept is not None else []
    tasks = [{"id": f"task-{i['id']}", "name": "agent", "interrupts": [i]} for i in interrupts]
    return {"values": values_of(kept), "next": ["agent"] if interrupts else [], "tasks": tasks,
            "checkpoint": {"thread_id": thread_id, "checkpoint_ns": ""}, "metadata": {}, "created_at": now(),
            "interrupts": interrupts}


def assistant(name: str) -> dict[str, Any]:
    stamp = now()
    return {"assistant_id": assistant_id(name), "graph_id": name, "name": name,
            "description": None, "config": {}, "context": {}, "metadata": {}, "version": 1,
            "created_at": stamp, "updated_at": stamp}


def run_document(turn: Turn) -> dict[str, Any]:
    """The `Run` a request starts, running."""
    stamp = now()
    return {"run_id": turn.run_id, "thread_id": turn.conversation_id, "assistant_id": turn.agent,
            "created_at": stamp, "updated_at": stamp, "status": "running", "metadata": {}, "kwargs": {},
            "multitask_strategy": "reject"}


def status_after(events: list[canonical.Event], status: str) -> str:
    """A run's status once these events have come: `success`, `interrupted` (a cancel or an interrupt, as LangGraph
    says both) or `error` when one ends it."""
    for event in events:
        if type(event) is canonical.RunFinished:
            status = "success" if event.outcome == "success" else "interrupted"
        elif type(event) is canonical.RunError:
            status = "error"
    return status


RUN_ENDED = b": run ended\n\n"
"""The last update of a run's feed: a run that stopped for its client is not continued by a later request (the
answer is a run of its own), so whoever follows it stops here."""


class RunLog:
    """A run as its clients see it after it started (`gateway.core.queries.RunLog`): each frame of its stream an
    update, numbered as the client's own stream numbers them, so that a join from after a `Last-Event-ID` gets
    the rest; the `Run` its record keeps."""

    def __init__(self, turn: Turn) -> None:
        self._encoder = LangGraphEncoder(turn)
        self._run = run_document(turn)

    def feed(self, events: list[canonical.Event]) -> list[bytes]:
        self._run["status"] = status_after(events, self._run["status"])
        written = self._encoder.encode(events)
        frames = [frame + b"\n\n" for frame in written.split(b"\n\n") if frame]
        ended = any(type(event) is canonical.RunFinished or type(event) is canonical.RunError for event in events)
        return [*frames, RUN_ENDED] if ended else frames

    def document(self) -> dict[str, Any]:
        self._run["updated_at"] = now()
        return dict(self._run)
