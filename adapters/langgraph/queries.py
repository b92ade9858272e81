"""What a LangGraph client asks beside its runs: threads and their state (from the conversation store), its runs
(the run board and the store: on any replica), joining a run's stream (on a resumable route, also a run another
dialect's client started on the thread's conversation: `follows`), cancelling it, and the assistants (one per
route). A thread's runs and state are only ever its caller's: another principal's are not found."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson

from gateway.core.errors import InvalidRequest, RunNotFound
from gateway.core.ids import new_id
from gateway.core.queries import Answer, CallerRuns, Followed, RunQuery, RunRecord, StreamedAnswer
from gateway.core.turn import Turn

from . import threads
from .request import uuid_of
from .resources import QUERY

OPERATIONS = frozenset({"create_thread", "search_threads", "get_thread", "state", "history", "list_runs",
                        "get_run", "join", "join_values", "cancel", "assistants", "assistant", "info"})
SSE_HEADERS = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store"}
JSON_HEADERS = {"content-type": "application/json", "cache-control": "no-store"}
RUN_LIFETIME = 24 * 3600.0
"""How long a join waits for a run to end: as long as it runs (a route's total timeout ends it sooner)."""
LISTED = 100
"""Runs a thread's listing (and the threads' search) reads, newest first."""


def follows(query: RunQuery) -> Followed | None:
    """A join (`GET /threads/{thread_id}/runs/{run_id}/stream`) of a run the thread has none of: the run running in
    the conversation of the thread's id, whichever dialect's client started it, as a run of the id the join named,
    in the modes it asks (those of a run that names none, without it). A join with `Last-Event-ID` (the `id:` of a
    frame, counted from 0 as the encoder numbers them: a follower's position is that plus one) is sent the frames
    after it, while the run runs or once it has ended, while it is kept, as for the thread's own runs."""
    asked = query.request
    thread_id, run_id = asked.get("thread_id"), asked.get("run_id")
    if query.name != "join" or not isinstance(thread_id, str) or not isinstance(run_id, str):
        return None
    given = asked.get("body")
    modes = given.get("stream_mode") if isinstance(given, dict) else None
    metadata = {"langgraph": {"stream_mode": [modes] if isinstance(modes, str) else modes}} if modes else {}
    last = asked.get("last_event_id")
    after = int(last) + 1 if isinstance(last, str) and last.isdigit() and len(last) <= 15 else 0
    return Followed(thread_id, Turn(conversation_id=thread_id, run_id=run_id, metadata=metadata), after,
                    ended=after > 0)


def read_query(body: dict[str, Any]) -> RunQuery | None:
    operation = body.get(QUERY)
    if not isinstance(operation, str) or operation not in OPERATIONS:
        return None
    run_id = body.get("run_id")
    return RunQuery(operation, run_id if isinstance(run_id, str) else None, body,
                    streams=operation in ("join", "join_values"))


async def answer_query(query: RunQuery, runs: CallerRuns) -> Answer | StreamedAnswer:
    operation, asked = query.name, query.request
    thread_id = asked.get("thread_id")
    given = asked.get("body")
    body: dict[str, Any] = given if isinstance(given, dict) else {}
    if operation == "create_thread":
        named = body.get("thread_id")
        created = named if isinstance(named, str) and named else uuid_of(new_id("thread"))
        return _json(threads.thread(created, await runs.conversation(created), body.get("metadata")))
    if operation == "search_threads":
        return _json(await _threads(runs, body.get("ids")))
    if operation == "assistants":
        return _json([threads.assistant(runs.agent)])
    if operation == "assistant":
        found = threads.assistant(runs.agent)
        if asked.get("assistant_id") not in (found["assistant_id"], found["graph_id"]):
            raise RunNotFound(f"there is no assistant {asked.get('assistant_id')!r}: this route runs "
                              f"{runs.agent!r}")
        return _json(found)
    if operation == "info":
        return _json({"version": "agent-gateway", "flags": {"assistants": True, "crons": False, "langsmith": False}})
    if not isinstance(thread_id, str):
        raise InvalidRequest("the thread's id is missing")
    if operation in ("get_thread", "state", "history"):
        kept = await runs.conversation(thread_id)
        if operation == "get_thread":
            return _json(threads.thread(thread_id, kept))
        found_state = threads.state(thread_id, kept)
        return _json(found_state if operation == "state" else [found_state] if kept is not None else [])
    if operation == "list_runs":
        return _json([r.document for r in await runs.newest(None, LISTED, conversation=thread_id)])
    return await _about_run(operation, thread_id, asked, runs)


async def _about_run(operation: str, thread_id: str, asked: dict[str, Any], runs: CallerRuns
                     ) -> Answer | StreamedAnswer:
    run_id = asked.get("run_id")
    found = await runs.find(run_id) if isinstance(run_id, str) else None
    if found is None or found.record.conversation_id != thread_id:
        raise RunNotFound(f"there is no run {run_id!r} on thread {thread_id!r}")
    if operation == "get_run":
        return _json(found.record.document)
    if operation == "cancel":
        if found.running:
            await runs.cancel(found.record.run_id)
        return Answer(b"", 202, {})
    if operation == "join_values":
        return StreamedAnswer(_values_at_end(runs, found.record.run_id, thread_id), JSON_HEADERS, b" ")
    last = asked.get("last_event_id")
    resumed = isinstance(last, str) and last.isdigit()
    # From its start, without a Last-Event-ID: a background run is answered once it has started, and what it made
    # before its client joined is the client's too.
    after = int(last) + 1 if isinstance(last, str) and resumed else 0
    following = found.running or resumed  # the rest of an ended run, while its feed is kept
    return StreamedAnswer(_frames(runs.follow(found.record.run_id, after)) if following else _nothing(),
                          SSE_HEADERS, b": heartbeat\n\n")


async def _values_at_end(runs: CallerRuns, run_id: str, thread_id: str) -> AsyncIterator[bytes]:
    """The thread's values once the run has ended (LangGraph's `join`); what waits, by id. Spaces keep the
    connection open meanwhile, as LangGraph's server sends them: JSON readers skip them."""
    await runs.wait_end(run_id, RUN_LIFETIME)
    kept = await runs.conversation(thread_id)
    values = threads.values_of(kept)
    if kept is not None and kept.interrupts:
        values["__interrupt__"] = [{"id": i, "value": {}} for i in kept.interrupts]
    yield orjson.dumps(values)


async def _threads(runs: CallerRuns, ids: Any) -> list[dict[str, Any]]:
    """The caller's threads, newest first; only those of `ids` when the search names them (which a route that
    cannot tell its callers apart requires)."""
    if isinstance(ids, list):
        named = [thread_id for thread_id in ids if isinstance(thread_id, str)][:LISTED]
        found = [(thread_id, await runs.conversation(thread_id)) for thread_id in dict.fromkeys(named)]
        return [threads.thread(thread_id, kept) for thread_id, kept in found if kept is not None]
    seen: dict[str, RunRecord] = {}
    for record in await runs.newest(None, LISTED):
        if record.conversation_id is not None:
            seen.setdefault(record.conversation_id, record)
    return [threads.thread(thread_id, await runs.conversation(thread_id)) for thread_id in seen]


async def _frames(updates: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    try:
        async for update in updates:
            if update == threads.RUN_ENDED:
                return
            yield update
    finally:
        await updates.aclose()  # type: ignore[attr-defined]


async def _nothing() -> AsyncIterator[bytes]:
    return
    yield b""


def _json(value: Any) -> Answer:
    return Answer(orjson.dumps(value))
