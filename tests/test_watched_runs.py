"""The feeds of runs their clients ask about (`gateway.runs.watched`): what an ended feed keeps, and for whom."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from gateway.conversations.store.memory import MemoryStore
from gateway.core.events import Event, RunFinished, RunStarted, TextDelta
from gateway.core.queries import RunQueries
from gateway.core.turn import Turn
from gateway.runs.board import RunBoard
from gateway.runs.records import RunRecords
from gateway.runs.watched import RouteRuns


class _Log:
    """A run's updates: each text delta's text."""

    def __init__(self, turn: Turn) -> None:
        self.text = ""

    def feed(self, events: list[Event]) -> list[bytes]:
        deltas = [e.delta for e in events if isinstance(e, TextDelta)]
        self.text += "".join(deltas)
        return [d.encode() for d in deltas]

    def document(self) -> dict[str, Any]:
        return {"text": self.text}


async def _nothing(*args: Any) -> Any:
    raise AssertionError("no query here")


QUERIES = RunQueries(read=lambda body: None, answer=_nothing, new_log=_Log,
                     continues=lambda turn: turn.run_id if turn.conversation_id == "continues" else None,
                     continued=lambda turn, record: turn)


def _runs(board: RunBoard) -> RouteRuns:
    return RouteRuns("route", board, RunRecords(MemoryStore()), lifetime=60.0, patience=5.0, max_entries=1000,
                     max_bytes=1 << 20)


def _turn(conversation: str = "c") -> Turn:
    return Turn(messages=[], conversation_id=conversation, run_id="run-1")


def test_the_feed_of_a_runs_first_request_is_let_go_when_it_ends_and_its_follower_still_reads_it_to_the_end(
) -> None:
    """Nothing looks an ended first request's feed up (a run is found running on the board, or in the store), so the
    board does not keep it; a follower that was reading it holds it."""
    async def main() -> None:
        board = RunBoard()
        runs = _runs(board)
        run = await runs.start("alice", QUERIES, _turn())
        key = runs.key("alice", "run-1")
        follower = runs.caller("alice").follow("run-1", 0)
        first = asyncio.ensure_future(anext(follower))
        await asyncio.sleep(0)
        await run.answered()
        run.feed([RunStarted(), TextDelta("m", "a"), TextDelta("m", "b"), RunFinished()])
        assert await asyncio.wait_for(first, 5) == b"a"
        await run.finish("success")
        assert await board.find(key) is None
        assert [update async for update in follower] == [b"b"]
        state = await runs.caller("alice").find("run-1")
        assert state is not None and state.record.status == "success" and state.record.document == {"text": "ab"}

    asyncio.run(main())


def test_the_feed_of_a_request_that_continues_a_run_is_kept_for_a_follower_that_waited_for_it() -> None:
    """A follower of a run that waited for its client looks up the feed of the request that continued it, however
    soon that request ended."""
    async def main() -> None:
        board = RunBoard()
        runs = _runs(board)
        first = await runs.start("alice", QUERIES, _turn())
        await first.answered()
        first.feed([RunStarted(), TextDelta("m", "question?")])
        await first.finish("interrupt")
        follower = runs.caller("alice").follow("run-1", 1)  # it has seen the question
        waiting = asyncio.ensure_future(anext(follower))
        await asyncio.sleep(0.05)
        second = await runs.start("alice", QUERIES, _turn("continues"))
        await second.answered()
        second.feed([TextDelta("m2", "answer"), RunFinished()])
        await second.finish("success")
        kept = await board.find(runs.key("alice", "run-1"))
        assert kept is not None
        entries = await kept.read(0, 0.0)
        assert orjson.loads(entries[0].data)["requests"] == 2  # the continuing request's feed
        assert [e.data for e in entries[1:] if e.data] == [b"answer"]
        assert await asyncio.wait_for(waiting, 5) == b"answer"

    asyncio.run(main())
