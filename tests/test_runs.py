"""The tape of a resumable run's reply and the board of where runs are, in one process."""

from __future__ import annotations

import asyncio

import pytest

from gateway.runs.board import KeptLimits, RunBoard
from gateway.runs.tape import PIECE_COST, TAPE_COST, Entry, Head, Tape, TapeLost


def tape(key: str = "k", *, event_ids: bool = False, max_entries: int = 100, max_bytes: int = 10_000,
         keep: float = 60.0, conversation: str | None = None) -> Tape:
    return Tape(key, event_ids=event_ids, max_entries=max_entries, max_bytes=max_bytes, keep=keep,
                conversation=conversation)


def test_each_sse_event_gets_the_id_it_is_kept_under() -> None:
    kept = tape(event_ids=True)
    kept.open(Head(200, {"content-type": "text/event-stream"}, b": ping\n\n"))
    sent = kept.record(b"data: 1\n\ndata: 2\n\n")
    assert sent == b"id: 1\ndata: 1\n\nid: 2\ndata: 2\n\n"
    assert kept.record(b"data: 3\n\n", last=True) == b"id: 3\ndata: 3\n\n"
    entries = asyncio.run(kept.read(2, 0.01))
    assert entries == [Entry(2, b"id: 2\ndata: 2\n\n", False), Entry(3, b"id: 3\ndata: 3\n\n", True)]


def test_without_ids_a_piece_is_kept_as_it_was_sent() -> None:
    kept = tape()
    kept.open(Head(200, {}, b""))
    assert kept.record(b"data: a\n\ndata: b\n\n") == b"data: a\n\ndata: b\n\n"
    kept.record(b"", last=True)
    assert [e.seq for e in asyncio.run(kept.read(0, 0.01))] == [0, 1, 2]
    assert Head.load(asyncio.run(kept.read(0, 0.01))[0].data) == Head(200, {}, b"")


def test_a_follower_waiting_for_the_next_piece_is_woken_by_it() -> None:
    async def main() -> list[Entry]:
        kept = tape()
        kept.open(Head(200, {}, b""))
        waiting = asyncio.create_task(kept.read(1, 5.0))
        await asyncio.sleep(0.01)
        kept.record(b"piece")
        return await asyncio.wait_for(waiting, 1.0)

    assert asyncio.run(main()) == [Entry(1, b"piece", False)]


def test_a_reply_past_its_limit_is_dropped_whole_and_its_followers_told() -> None:
    async def main() -> None:
        kept = tape(max_bytes=100)
        kept.open(Head(200, {}, b""))
        waiting = asyncio.create_task(kept.read(1, 5.0))
        await asyncio.sleep(0.01)
        kept.record(b"x" * 200)
        with pytest.raises(TapeLost):
            await waiting
        assert kept.entries == []
        assert kept.record(b"more") == b"more"  # the run's own client still gets it

    asyncio.run(main())


def test_a_run_claims_its_key_and_a_second_claim_attaches_to_it() -> None:
    async def main() -> None:
        board = RunBoard()
        first = tape(conversation="c")
        assert await board.claim(first, 60) is None
        assert await board.claim(tape(), 60) is first
        assert await board.running_in("c") is first
        first.open(Head(200, {}, b""))
        first.record(b"end", last=True)
        board.finish(first)
        assert await board.running_in("c") is None  # ended: nothing to resume by conversation
        assert await board.find("k") is first  # but kept for a client that had part of it
        assert await board.claim(tape(), 60) is None  # and the same request again is a new run

    asyncio.run(main())


def test_a_stop_reaches_the_running_run_once() -> None:
    async def main() -> None:
        board = RunBoard()
        stops: list[str] = []
        running = tape(conversation="c")
        running.stop = lambda: stops.append("stopped")
        await board.claim(running, 60)
        assert await board.stop_conversation("c") is True
        assert await board.stop_conversation("other") is False
        board.finish(running)  # it ended without its end kept: nothing to stop, nothing to resume
        assert await board.stop("k") is False
        assert await board.find("k") is None
        assert stops == ["stopped"]

    asyncio.run(main())


def test_ended_replies_beyond_the_process_budget_go_oldest_first() -> None:
    async def main() -> None:
        board = RunBoard(KeptLimits(bytes=2 * (TAPE_COST + 2 * PIECE_COST + 200)))
        for key in ("a", "b", "c"):
            kept = tape(key)
            await board.claim(kept, 60)
            kept.open(Head(200, {}, b""))
            kept.record(b"x" * 80, last=True)
            board.finish(kept)
        assert await board.find("a") is None
        assert await board.find("b") is not None and await board.find("c") is not None

    asyncio.run(main())


def test_an_ended_reply_expires_after_its_keep() -> None:
    async def main() -> None:
        board = RunBoard()
        kept = tape(keep=0.05)
        await board.claim(kept, 60)
        kept.open(Head(200, {}, b""))
        kept.record(b"", last=True)
        board.finish(kept)
        assert await board.find("k") is kept
        await asyncio.sleep(0.1)
        assert await board.find("k") is None

    asyncio.run(main())


def test_replies_kept_for_different_times_each_expire_after_their_own() -> None:
    async def main() -> None:
        board = RunBoard()
        for key, keep in (("long", 0.3), ("short", 0.05)):
            kept = tape(key, keep=keep)
            await board.claim(kept, 60)
            kept.open(Head(200, {}, b""))
            kept.record(b"", last=True)
            board.finish(kept)
        await asyncio.sleep(0.15)
        assert await board.find("short") is None and await board.find("long") is not None
        await asyncio.sleep(0.25)
        assert await board.find("long") is None
        assert board._kept_bytes == 0 and not board._expiring and not board._kept_of

    asyncio.run(main())
