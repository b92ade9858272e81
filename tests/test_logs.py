"""The log handler: access lines batched on the event loop, nothing lost or reordered; and written straight to it
where it is theirs alone, as logging would write them."""

from __future__ import annotations

import asyncio
import io
import logging
import sys
import weakref
from collections.abc import Callable, Iterator

import orjson
import pytest

from gateway.server.operations.logs import ACCESS, AccessLog, BatchedHandler, configure
from gateway.server.operations.record import RequestOutcome


class CountingStream(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def _logger(stream: CountingStream) -> logging.Logger:
    logger = logging.getLogger(f"test_logs.{id(stream)}")
    logger.handlers[:] = [BatchedHandler(stream)]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def test_lines_logged_on_the_loop_are_written_together_soon_after() -> None:
    stream = CountingStream()
    logger = _logger(stream)

    async def main() -> None:
        for i in range(10):
            logger.info("line %d", i)
        assert stream.getvalue() == ""  # held for a moment...
        await asyncio.sleep(BatchedHandler.FLUSH_SECONDS * 2)
        assert stream.getvalue() == "".join(f"line {i}\n" for i in range(10))  # ...then written in one piece
        assert stream.writes == 1

    asyncio.run(main())


def test_a_burst_is_written_once_it_reaches_max_lines() -> None:
    stream = CountingStream()
    logger = _logger(stream)

    async def main() -> None:
        for i in range(BatchedHandler.MAX_LINES):
            logger.info("line %d", i)
        assert stream.getvalue().count("\n") == BatchedHandler.MAX_LINES

    asyncio.run(main())


def test_a_line_logged_off_the_loop_is_written_at_once_after_those_waiting() -> None:
    stream = CountingStream()
    logger = _logger(stream)

    async def on_the_loop() -> None:
        logger.info("first")

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(on_the_loop())  # the loop stops before the line's flush comes due
    finally:
        loop.close()
    logger.info("second")
    assert stream.getvalue() == "first\nsecond\n"


def test_what_waits_at_exit_is_written_by_logging_shutdown() -> None:
    stream = CountingStream()
    logger = _logger(stream)

    async def main() -> None:
        logger.info("last words")

    asyncio.run(main())
    logging.shutdown([weakref.ref(logger.handlers[0])])  # what the interpreter runs at exit, for every handler
    assert stream.getvalue() == "last words\n"


@pytest.fixture
def configured(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, int | None], CountingStream]]:
    """`configure` as `serve` calls it, writing to a stream the test reads; the loggers as they were afterwards."""
    root = logging.getLogger("agent_gateway")
    saved = root.handlers[:], root.level, root.propagate

    def configured(fmt: str, worker: int | None) -> CountingStream:
        stream = CountingStream()
        monkeypatch.setattr(sys, "stderr", stream)
        configure(fmt, "info", worker)
        return stream

    yield configured
    root.handlers[:], root.level, root.propagate = saved


FIELDS = {"request_id": "req_1", "route": "r\n1", "status": 200, "events": 3, "outcome": RequestOutcome.SUCCESS,
          "duration_ms": 1.5}


class Taking(logging.Handler):
    """A handler of an application's own: it keeps the records it is given."""

    def __init__(self) -> None:
        super().__init__()
        self.taken: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.taken.append(record)


def _without_time(line: str, fmt: str) -> str:
    if fmt == "json":
        value = orjson.loads(line)
        del value["ts"]
        return orjson.dumps(value).decode()
    return line.split(" ", 1)[1]


@pytest.mark.parametrize("fmt", ["json", "human"])
@pytest.mark.parametrize("worker", [None, 4242])
def test_an_access_line_written_directly_is_the_line_logging_writes(
        configured: Callable[[str, int | None], CountingStream], fmt: str, worker: int | None) -> None:
    stream = configured(fmt, worker)
    AccessLog().write(logging.WARNING, FIELDS)
    logging.getLogger(ACCESS).warning("request", extra=FIELDS)
    logging.getLogger("agent_gateway").handlers[0].flush()
    direct, logged = stream.getvalue().splitlines()
    assert _without_time(direct, fmt) == _without_time(logged, fmt)
    assert ("4242" in direct) is (worker is not None)


def test_access_lines_go_through_logging_where_another_handler_takes_them(
        configured: Callable[[str, int | None], CountingStream]) -> None:
    stream = configured("json", None)
    other = Taking()
    access = logging.getLogger(ACCESS)
    access.addHandler(other)
    try:
        AccessLog().write(logging.INFO, FIELDS)
    finally:
        access.removeHandler(other)
    logging.getLogger("agent_gateway").handlers[0].flush()
    assert [(record.getMessage(), record.__dict__["request_id"]) for record in other.taken] == [("request", "req_1")]
    assert orjson.loads(stream.getvalue())["request_id"] == "req_1"  # and the gateway's own handler still has it


def test_an_access_line_below_the_level_is_not_written(
        configured: Callable[[str, int | None], CountingStream]) -> None:
    stream = configured("json", None)
    logging.getLogger("agent_gateway").setLevel(logging.WARNING)
    AccessLog().write(logging.INFO, FIELDS)
    logging.getLogger("agent_gateway").handlers[0].flush()
    assert stream.getvalue() == ""
