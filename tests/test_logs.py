"""The log handler: access lines batched on the event loop, nothing lost or reordered."""

from __future__ import annotations

import asyncio
import io
import logging
import weakref

from gateway.server.operations.logs import BatchedHandler


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
