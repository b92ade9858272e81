"""Logging: one JSON line per request (what log pipelines ingest), or a line for humans, who get it by default at a
terminal.

Access records carry ids, dialects, status and durations; never message contents or header values, which hold
users' words and secrets, unless `--log-bodies` is asked for while debugging.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
import time
from typing import Any, TextIO

import orjson

ACCESS = "agent_gateway.access"
_RESERVED = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None)))


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    """What the call passed as `extra=`: the record's attributes that logging itself does not set."""
    return {k: v for k, v in vars(record).items() if k not in _RESERVED and not k.startswith("_")}


class JsonFormatter(logging.Formatter):
    def __init__(self, worker: int | None = None) -> None:
        super().__init__()
        self._worker = worker
        """The worker process a line came from, under `serve --workers N`: its process id, as `ps` shows it."""
        self._second = -1
        self._stamp = ""

    def format(self, record: logging.LogRecord) -> str:
        return self.line(record.created, record.levelname, record.name, record.getMessage(), _extras(record),
                         self.formatException(record.exc_info) if record.exc_info else None)

    def line(self, created: float, level: str, logger: str, message: str, fields: dict[str, Any],
             exc: str | None = None) -> str:
        """A line from what a record holds (`created` is its `time.time()`), for `format` and for `AccessLog`."""
        second = int(created)
        if second != self._second:  # one strftime a second, not one a line
            self._second, self._stamp = second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        line: dict[str, Any] = {
            "ts": f"{self._stamp}.{int((created - second) * 1000):03d}Z",
            "level": level.lower(),
            "logger": logger,
            "msg": message,
        }
        line.update(fields)
        if self._worker is not None:
            line["worker"] = self._worker
        if exc is not None:
            line["exc"] = exc
        return orjson.dumps(line, default=str).decode()


class HumanFormatter(logging.Formatter):
    """One line per record whatever a client put in an id: control characters are written escaped (`\\n`,
    `\\x1b`), so no value can start a line of its own or drive the terminal."""

    def __init__(self, worker: int | None = None) -> None:
        super().__init__()
        self._worker = worker

    def format(self, record: logging.LogRecord) -> str:
        text = self.line(record.created, record.levelname, record.name, record.getMessage(), _extras(record))
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        return text

    def line(self, created: float, level: str, logger: str, message: str, fields: dict[str, Any]) -> str:
        if self._worker is not None:
            fields = {**fields, "worker": self._worker}
        extra = " ".join(f"{k}={_escaped(str(v))}" for k, v in fields.items())
        return f"{time.strftime('%H:%M:%S', time.localtime(created))} {level:<7} " \
               f"{_escaped(message)}{' ' + extra if extra else ''}"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escaped(text: str) -> str:
    return _CONTROL.sub(lambda match: repr(match.group())[1:-1], text) if _CONTROL.search(text) else text


class BatchedHandler(logging.StreamHandler[TextIO]):
    """Writes the lines logged on the event loop together, at most `FLUSH_SECONDS` after the first of them: one
    write to the stream for many lines, instead of a system call for each access line. Lines logged with no loop
    running in the thread (startup, shutdown, other threads) are written at once, after any still waiting; what
    waits at exit is written by `logging.shutdown`."""

    FLUSH_SECONDS = 0.05
    MAX_LINES = 256
    """Written at once when this many wait: what a burst holds back stays small."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__(stream)
        self._pending: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:
            self.handleError(record)
            return
        self.queue(line)

    def queue(self, line: str) -> None:
        """A formatted line, written with the others logged on the loop (see the class)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._pending.append(line)
            self.flush()
            return
        if not self._pending:
            loop.call_later(self.FLUSH_SECONDS, self.flush)
        self._pending.append(line)
        if len(self._pending) >= self.MAX_LINES:
            self.flush()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]  # a Handler's lock exists from its __init__
            if not self._pending:
                return
            text = self.terminator.join(self._pending) + self.terminator
            self._pending.clear()
            try:
                self.stream.write(text)
                self.stream.flush()
            except Exception:
                pass  # as StreamHandler would (through handleError): a log that cannot be written is not our error


def default_format(stream: TextIO) -> str:
    """Lines for a person reading a terminal, JSON for whatever reads a pipe or a file (a log pipeline), as the
    common logging libraries choose."""
    return "human" if stream.isatty() else "json"


def configure(fmt: str = "json", level: str = "info", worker: int | None = None) -> None:
    """Every line of ours on stderr, in `fmt`; a `worker`'s lines carry its process id."""
    # Neither format shows where a call was made, nor thread or process names: don't collect them per record
    # (the logging HOWTO's "Optimization"; the caller lookup walks the stack on every access line).
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    handler = BatchedHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(worker) if fmt == "json" else HumanFormatter(worker))
    root = logging.getLogger("agent_gateway")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False


class AccessLog:
    """Writes the access lines, one a request and most of what the gateway logs. Where they go to the handler
    `configure` installed and nowhere else, a line is formatted from its fields and queued on that handler
    directly: `logging` would make a `LogRecord` of it and pass it through its loggers, handlers and filters first,
    a cost per request several times the line's own. Anywhere else (a test capturing logs, an application that
    embeds the gateway with handlers of its own), a line goes through `logging`."""

    def __init__(self) -> None:
        self._logger = logging.getLogger(ACCESS)

    def write(self, level: int, fields: dict[str, Any]) -> None:
        logger = self._logger
        if not logger.isEnabledFor(level):
            return
        handler = _only_handler(logger)
        formatter = handler.formatter if handler is not None else None
        if isinstance(formatter, JsonFormatter | HumanFormatter):
            assert handler is not None
            handler.queue(formatter.line(time.time(), logging.getLevelName(level), ACCESS, "request", fields))
        else:
            logger.log(level, "request", extra=fields)


def _only_handler(logger: logging.Logger) -> BatchedHandler | None:
    """The `BatchedHandler` that alone handles `logger`'s lines, with no filter on the way; None if there is none."""
    if logger.handlers or logger.filters or not logger.propagate:
        return None
    parent = logger.parent
    if parent is None or parent.filters or parent.propagate or len(parent.handlers) != 1:
        return None
    handler = parent.handlers[0]
    if type(handler) is not BatchedHandler or handler.filters or logger.getEffectiveLevel() < handler.level:
        return None
    return handler
