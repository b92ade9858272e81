"""A fault-injecting upstream: a raw HTTP/1.1 server on 127.0.0.1 that misbehaves on request, in any dialect.

It is raw asyncio rather than an ASGI app because several faults live below HTTP: a TCP reset (SO_LINGER 0, then
close), a server that never sends a byte, and a slow reader's backpressure, which shows here as the server's
`drain()` blocking (so `Call.events_sent` stops growing). It keeps HTTP/1.1 keep-alive, as real agent servers do,
so the gateway's connection pool meets connections that broke, hung or were abandoned.

A request picks its fault by path, `/<dialect>/<fault>?<params>`, or by an `x-fault: <fault>?<params>` header,
which wins (a gateway route that forwards `x-fault` then serves every fault). The run it streams is numbered: text
deltas `"n=0 "`, `"n=1 "`, ... encoded with the dialect's own encoder, so every fault is realistic per dialect and
a client can tell lost, duplicated and reordered events apart.

| fault           | what the upstream does                                                                   |
|-----------------|------------------------------------------------------------------------------------------|
| `ok`            | a whole run of `n` numbered deltas, `gap` seconds apart                                  |
| `slow`          | waits `delay` seconds (default 0.5) before answering, then `ok`                          |
| `reset`         | the run's start and `after` deltas, then a TCP reset (RST) mid-stream                    |
| `hang-first`    | never sends a byte (not even headers) until the peer goes away                           |
| `hang-headers`  | sends the 200 headers, then nothing                                                      |
| `hang-between`  | the run's start and `after` deltas, then nothing                                         |
| `bad-json`      | after `after` deltas, a frame that is not JSON (agent-respond: a body that is not JSON)  |
| `unknown-event` | after `after` deltas, an event type no dialect knows, then the rest of the run (agent-     |
|                 | respond: a message with a role nobody knows, and a key nobody knows)                     |
| `huge`          | after delta 0, one text delta of `size` bytes (default 10 MiB), then the rest            |
| `forever`       | numbered deltas forever, `gap` seconds apart (default 0.01), never the end               |
| `html-502`      | HTTP 502 with an HTML body                                                               |
| `wrong-type`    | HTTP 200 with `content-type: text/html` and an HTML body                                 |
| `drop`          | reads the request, then closes the connection without a byte (a crash while handling it) |

Other parameters: `pad` (bytes of filler after each delta's number), `linger` (seconds between the last event and
the reset), `max_seconds` (cap on any hang or endless stream, default 60), `keepalive` (seconds the connection may
then stay idle before the server closes it; default: forever). A refused connection needs no server:
`servers.closed_port()` is a port nothing listens on.

```python
with FaultUpstream() as upstream:
    url = upstream.url("ag-kit", "reset", after=3)
    ...
    call = upstream.find("req-1")       # by the X-Request-Id the gateway forwards
    wait_until(lambda: call.end == "peer_closed", 2)
```

Run it alone (the soak benchmark does) with `python tests/faults.py --port 9100`.

`GatewayProcess` is the other half of these tests: the gateway as a real `python -m gateway serve` process, to
restart it, kill it, and read its memory (`rss_kb()`, from /proc/<pid>/status).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

if __package__ in (None, ""):  # run as a script: the repository root holds the project's packages
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import orjson
from servers import free_port

from adapters import registry
from gateway.core.capabilities import AgentDescription, NamedRoutes
from gateway.core.events import Event, RunFinished, RunStarted, TextDelta, TextEnd, TextStart
from gateway.core.named import InMemoryEndpoint

FAULTS = ("ok", "slow", "reset", "hang-first", "hang-headers", "hang-between", "bad-json", "unknown-event", "huge",
          "forever", "html-502", "wrong-type", "drop")
HTML = b"<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1><hr>nginx</body></html>"
MAX_HEAD = 64 * 1024
MAX_REQUESTS_PER_CONNECTION = 100_000
MAX_EVENTS = 10_000_000
_REASONS = {200: "OK", 404: "Not Found", 502: "Bad Gateway"}


def wait_until(predicate: Callable[[], bool], timeout: float, interval: float = 0.02) -> bool:
    """Poll `predicate` until it holds (True) or `timeout` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)


def delta_text(k: int, pad: int = 0) -> str:
    return f"n={k} " + "x" * pad


@dataclass
class Call:
    """One request the upstream answered (or is answering)."""

    path: str
    dialect: str
    fault: str
    params: dict[str, str]
    headers: dict[str, str]
    body: bytes
    started: float = field(default_factory=time.monotonic)
    events_sent: int = 0
    """Pieces of the run (one SSE event each, for SSE dialects) fully handed to the kernel."""
    bytes_sent: int = 0
    idle_before: float | None = None
    """Seconds its connection had been idle since the previous answer on it; None on a new connection."""
    ended: float | None = None
    end: str | None = None
    opening: bool = False
    """A request that opens a session for the run rather than being it (MCP's initialize, tools/list), or ends
    one (its DELETE)."""
    method: str = "POST"
    """How the answer ended: complete, reset, dropped, peer_closed (the gateway went away), capped (max_seconds)."""

    @property
    def request_id(self) -> str | None:
        return self.headers.get("x-request-id")

    def number(self, name: str, default: float) -> float:
        return float(self.params.get(name, default))


class _PeerGone(Exception):
    pass


class _Run:
    """A numbered run in one dialect, encoded piece by piece with that dialect's own encoder."""

    def __init__(self, dialect: str, pad: int = 0) -> None:
        self.dialect = registry.get(dialect)
        self.encoder = self.dialect.new_encoder(None)
        self.pad = pad
        self.message_id = "msg-fault"

    def encode(self, events: list[Event]) -> list[bytes]:
        if self.encoder.streams:
            return [piece for event in events if (piece := self.encoder.encode([event]))]
        return [piece] if (piece := self.encoder.encode(events)) else []

    def head(self) -> list[Event]:
        return [RunStarted(thread_id="thread-fault", run_id="run-fault"), TextStart(self.message_id)]

    def delta(self, k: int) -> TextDelta:
        return TextDelta(self.message_id, delta_text(k, self.pad))

    def tail(self) -> list[Event]:
        return [TextEnd(self.message_id), RunFinished()]

    def pieces(self, n: int, inserted: Event | None = None) -> tuple[list[bytes], int]:
        """The whole run's pieces (`inserted` after delta 0), and how many of them come before delta 0.

        In an SSE dialect every delta is one piece, so piece `head + k` carries delta k."""
        deltas: list[Event] = [self.delta(k) for k in range(n)]
        if inserted is not None:
            deltas.insert(min(1, n), inserted)
        if not self.dialect.new_encoder(None).streams:  # agent-respond: one JSON body
            return self.encode([*self.head(), *deltas, *self.tail()]), 0
        head = self.encode(self.head())
        return head + self.encode([*deltas, *self.tail()]), len(head)


def _unknown_frame(dialect: str) -> bytes:
    kind = "SOMETHING_NEW" if dialect == "ag-ui" else "something-new"
    return b"data: " + orjson.dumps({"type": kind, "value": {"nested": [1, 2, 3]}}) + b"\n\n"


BAD_JSON_FRAME = b'data: {"type": "text", "content": oops, not json}\n\n'


class FaultUpstream:
    """The fault server, in a thread with its own event loop. `calls` lists every request, oldest first."""

    def __init__(self, port: int = 0) -> None:
        self.port = port
        self.calls: list[Call] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve_in_thread, name="fault-upstream", daemon=True)
        self._tasks: set[asyncio.Task[None]] = set()
        self._error: BaseException | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, dialect: str, fault: str = "ok", **params: float | int | str) -> str:
        query = f"?{urlencode(params)}" if params else ""
        return f"{self.base}/{dialect}/{fault}{query}"

    def find(self, request_id: str, timeout: float = 5.0) -> Call:
        """The first call that carried this X-Request-Id (the gateway forwards the client's): the run's own, before
        any the gateway made for it (an A2A run's re-attach after a broken stream), after those that opened its
        session (MCP's)."""
        found: list[Call] = []

        def seen() -> bool:
            found[:] = [c for c in list(self.calls) if c.request_id == request_id and not c.opening]
            return bool(found)

        if not wait_until(seen, timeout):
            raise AssertionError(f"the upstream never got a request with x-request-id {request_id}")
        return found[0]

    # lifecycle

    def __enter__(self) -> FaultUpstream:
        self._thread.start()
        if not self._ready.wait(10) or self._error is not None:
            raise RuntimeError(f"fault upstream did not start: {self._error!r}")
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def _serve_in_thread(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(self.serve())
        except BaseException as exc:  # reported to the thread that waits for startup
            self._error = exc
            self._ready.set()
        finally:
            loop.close()

    async def serve(self, ready: Callable[[int], None] | None = None) -> None:
        """Serve until `_stop` is set (in a thread) or forever (standalone)."""
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._connection, "127.0.0.1", self.port, backlog=4096, limit=MAX_HEAD)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        if ready is not None:
            ready(self.port)
        try:
            await self._stop.wait()
        finally:
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    # HTTP

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        leftover = b""
        reset = False
        idle: float | None = None
        last_answer: float | None = None
        try:
            for _ in range(MAX_REQUESTS_PER_CONNECTION):
                try:
                    async with asyncio.timeout(idle):
                        call = await _read_request(reader, leftover)
                except TimeoutError:
                    return  # idle too long: close, as servers do (uvicorn after 5 s, gunicorn after 2 s)
                if call is None:
                    return
                call.idle_before = None if last_answer is None else call.started - last_answer
                idle = float(call.params["keepalive"]) if "keepalive" in call.params else None
                self.calls.append(call)
                if len(self.calls) > 200_000:  # a long soak: keep the most recent
                    del self.calls[:100_000]
                answer = _Answer(reader, writer, call)
                try:
                    keep = await answer.respond()
                except (_PeerGone, ConnectionError):
                    call.end = call.end or "peer_closed"
                    keep = False
                finally:
                    leftover = await answer.stop_watching()
                    call.ended = time.monotonic()
                reset = call.end == "reset"
                last_answer = time.monotonic()
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            return
        finally:
            self._tasks.discard(task)
            if not reset:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()


_SESSIONS: dict[str, dict[str, Any]] = {}
"""The sessions opened with any fault upstream, for a dialect that has them (MCP's)."""


def _method(body: bytes) -> str | None:
    """A JSON-RPC request's method, if the body is one."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    method = value.get("method") if isinstance(value, dict) else None
    return method if isinstance(method, str) else None


async def _read_request(reader: asyncio.StreamReader, leftover: bytes) -> Call | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError:
        return None
    head = leftover + head
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = [*lines[0].split(" ", 2), "", ""][:3]
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0") or 0)) if method != "GET" else b""
    url = urlsplit(target)
    spec = headers.get("x-fault")
    parts = [p for p in url.path.split("/") if p]
    dialect = parts[0] if parts and parts[0] in registry.DIALECTS else "ag-kit"
    fault = parts[1] if len(parts) > 1 else "ok"
    params = dict(parse_qsl(url.query))
    if spec:
        fault_part, _, query = spec.partition("?")
        fault = fault_part.strip() or fault
        params.update(parse_qsl(query))
    return Call(url.path, dialect, fault, params, headers, body, method=method)


class _Answer:
    """Writing one response, watching for the peer going away meanwhile."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, call: Call) -> None:
        self.reader = reader
        self.writer = writer
        self.call = call
        self.max_seconds = call.number("max_seconds", 60.0)
        self._watch: asyncio.Task[bytes] = asyncio.ensure_future(self._read_one())

    async def _read_one(self) -> bytes:
        try:
            return await self.reader.read(1)
        except ConnectionError:
            return b""

    async def stop_watching(self) -> bytes:
        """Stop reading; the bytes of the next request the watcher read, if the client was that quick."""
        self._watch.cancel()
        await asyncio.wait({self._watch})  # the reader is free only once the cancelled read has unwound
        return b"" if self._watch.cancelled() else self._watch.result()

    @property
    def peer_gone(self) -> bool:
        return self._watch.done() and not self._watch.cancelled() and self._watch.result() == b""

    async def pause(self, seconds: float) -> None:
        """Sleep, unless the peer leaves first (then `_PeerGone`)."""
        if seconds > 0 and not self._watch.done():
            await asyncio.wait({self._watch}, timeout=seconds)
        if self.peer_gone:
            raise _PeerGone

    async def hang(self) -> None:
        """Send nothing until the peer leaves (`_PeerGone`) or `max_seconds` pass (then the caller hangs up)."""
        await self.pause(self.max_seconds)
        self.call.end = "capped"

    async def send(self, data: bytes, *, count: bool = True) -> None:
        if self.peer_gone:
            raise _PeerGone
        self.writer.write(data)
        await self.writer.drain()
        if count:
            self.call.events_sent += 1
            self.call.bytes_sent += len(data)

    async def start(self, status: int = 200, content_type: str = "text/event-stream", length: int | None = None,
                    extra: dict[str, str] | None = None) -> None:
        framing = f"content-length: {length}" if length is not None else "transfer-encoding: chunked"
        more = "".join(f"{name}: {value}\r\n" for name, value in (extra or {}).items())
        head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\ncontent-type: {content_type}\r\n"
                f"{framing}\r\ncache-control: no-cache\r\n{more}\r\n")
        await self.send(head.encode(), count=False)

    async def chunk(self, data: bytes) -> None:
        await self.send(b"%x\r\n%b\r\n" % (len(data), data))

    async def end_chunks(self) -> None:
        await self.send(b"0\r\n\r\n", count=False)

    async def reset(self) -> None:
        """RST: SO_LINGER 0, then close, once what was written had time to reach the peer."""
        await self.pause(self.call.number("linger", 0.05))
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()
        self.call.end = "reset"

    async def respond(self) -> bool:
        """Answer the call; True when the connection can serve another request."""
        call, dialect = self.call, self.call.dialect
        if call.path in ("/healthz", "/_healthz"):
            await self.start(200, "text/plain", 2)
            await self.send(b"ok", count=False)
            call.end = "complete"
            return True
        if dialect == "a2a" and _method(call.body) in ("SubscribeToTask", "GetTask"):
            # It keeps no tasks: a re-attach to the run that broke off (see `A2ADecoder.reattach_request`) is "not
            # found", and the gateway reports the break itself.
            body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "error": {"code": -32001, "message": "task not found"}})
            await self.start(200, "application/json", len(body))
            await self.send(body, count=False)
            call.end = "complete"
            return True
        named = registry.get(dialect).capability(NamedRoutes)
        if named is not None and (call.body or call.method == "DELETE"):
            # What is not a run (MCP's initialize, tools/list, a session's end) is answered as the dialect answers
            # it, fault or not.
            answered = await named.answer(InMemoryEndpoint(call.method, call.headers,
                                                           orjson.loads(call.body) if call.body else None,
                                                           [AgentDescription("agent", "", "")], _SESSIONS))
            if answered.run is None:
                headers = dict(answered.headers)
                await self.start(answered.status, headers.pop("content-type", "application/json"),
                                 len(answered.body), extra=headers)
                await self.send(answered.body, count=False)
                call.end, call.opening = "complete", True
                return True
        if dialect == "langgraph" and "/runs/" in call.path and not call.path.endswith("/runs/stream"):
            # It keeps no runs either: a join (see `LangGraphDecoder.reattach_request`) or a cancel finds none.
            body = orjson.dumps({"detail": "run not found"})
            await self.start(404, "application/json", len(body))
            await self.send(body, count=False)
            call.end = "complete"
            return True
        fault = call.fault
        if fault not in FAULTS:
            body = f"unknown fault {fault!r}; known: {', '.join(FAULTS)}".encode()
            await self.start(404, "text/plain", len(body))
            await self.send(body, count=False)
            call.end = "complete"
            return True
        run = _Run(dialect, int(call.number("pad", 0)))
        n = int(call.number("n", 5))
        gap = call.number("gap", 0.01 if fault == "forever" else 0.0)
        after = int(call.number("after", 2))
        streaming = run.dialect.new_encoder(None).streams
        if fault == "slow":
            await self.pause(call.number("delay", 0.5))
        if fault == "hang-first":
            await self.hang()
            return False
        if fault == "drop":
            call.end = "dropped"
            return False
        if fault in ("html-502", "wrong-type"):
            await self.start(502 if fault == "html-502" else 200, "text/html; charset=utf-8", len(HTML))
            await self.send(HTML)
            call.end = "complete"
            return True
        content_type = "text/event-stream" if streaming else "application/json"
        if fault == "forever":
            return await self._forever(run, gap)
        inserted: Event | None = None
        if fault == "huge":
            inserted = TextDelta(run.message_id, "x" * int(call.number("size", 10 * 1024 * 1024)))
        pieces, first = run.pieces(n, inserted)
        cut = min(first + after, len(pieces))
        if not streaming:
            body = pieces[0]
            if fault == "bad-json":
                body = body[: len(body) // 2] + b"oops, not json"
            elif fault == "unknown-event":
                value = orjson.loads(body)
                value["messages"].insert(0, {"role": "narrator", "content": "nobody knows this role"})
                value["something_new"] = {"nested": [1, 2, 3]}
                body = orjson.dumps(value)
            pieces, cut = [body[: len(body) // 2], body[len(body) // 2:]], 1
            await self.start(200, content_type, len(body))
        else:
            await self.start(200, content_type)
            if fault == "bad-json":
                pieces.insert(cut, BAD_JSON_FRAME)
            elif fault == "unknown-event":
                pieces.insert(cut, _unknown_frame(dialect))
        if fault == "hang-headers":
            await self.hang()
            return False
        write = self.chunk if streaming else self.send
        for index, piece in enumerate(pieces):
            if fault in ("reset", "hang-between") and index == cut:
                if fault == "reset":
                    await self.reset()
                else:
                    await self.hang()
                return False
            if index and gap:
                await self.pause(gap)
            await write(piece)
        if streaming:
            await self.end_chunks()
        call.end = "complete"
        return True

    async def _forever(self, run: _Run, gap: float) -> bool:
        call = self.call
        await self.start(200, "text/event-stream" if run.dialect.new_encoder(None).streams else "application/json")
        deadline = time.monotonic() + self.max_seconds
        for piece in self._endless(run):
            if time.monotonic() > deadline:
                call.end = "capped"
                return False
            await self.chunk(piece)
            await self.pause(gap)
        call.end = "capped"
        return False

    def _endless(self, run: _Run) -> Iterator[bytes]:
        if run.dialect.new_encoder(None).streams:
            yield from run.encode(run.head())
            for k in range(MAX_EVENTS):
                yield from run.encode([run.delta(k)])
        else:  # a JSON body that never ends
            yield b'{"messages": [{"role": "assistant", "content": "'
            for k in range(MAX_EVENTS):
                yield delta_text(k, run.pad).encode()


ROOT = Path(__file__).resolve().parent.parent


class GatewayProcess:
    """`python -m gateway serve --config <file>` on 127.0.0.1, its stderr in a file beside the config.

    `with GatewayProcess(config) as gateway:` starts it and waits until `/healthz` answers; `restart()` stops it
    and starts it again on the same port (the same config, so the same store).
    """

    def __init__(self, config: Path, port: int = 0, *, log_level: str = "warning", startup: float = 20.0) -> None:
        self.config = config
        self.port = port or free_port()
        self.log_level = log_level
        self.startup = startup
        self.log = config.with_name(f"{config.stem}-{self.port}.log")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None, "the gateway is not running"
        return self.process.pid

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def launch(self) -> None:
        """Start the process without waiting for it (start several, then `wait_ready()` for each)."""
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gateway", "serve", "--config", str(self.config), "--port", str(self.port),
                 "--log-level", self.log_level],
                cwd=self.config.parent, env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log)

    def wait_ready(self) -> None:
        """Wait until `/healthz` answers; stop the process and raise with its log if it does not in time."""
        assert self.process is not None, "launch() first"
        deadline = time.monotonic() + self.startup
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"gateway did not start:\n{self.log_tail()}")
            time.sleep(0.05)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)

    def restart(self) -> None:
        self.stop()
        self.start()

    def rss_kb(self) -> int:
        """Resident memory of the gateway process, in KiB (VmRSS)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS in /proc/<pid>/status")

    def log_tail(self, size: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-size:]
        except OSError:
            return ""

    def __enter__(self) -> GatewayProcess:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.stop()


@contextlib.asynccontextmanager
async def _standalone(port: int) -> AsyncIterator[FaultUpstream]:
    upstream = FaultUpstream(port)
    task = asyncio.ensure_future(upstream.serve(lambda p: print(f"fault upstream on http://127.0.0.1:{p}",
                                                                flush=True)))
    try:
        yield upstream
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the fault-injecting upstream until interrupted.")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)

    async def run() -> None:
        async with _standalone(args.port):
            await asyncio.Event().wait()

    try:
        try:
            import uvloop

            uvloop.run(run())
        except ImportError:
            asyncio.run(run())
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
