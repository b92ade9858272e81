"""A fast upstream agent for the benchmark: one text message of N deltas, in any dialect.

Raw asyncio + uvloop + httptools, no framework, so that the upstream costs next to nothing per event. The path picks
the dialect (`/ag-ui`, `/ag-kit`, `/vercel`, `/agent-respond`; anything after it is ignored), any method works:

    RunStarted, TextStart, N x TextDelta("tok<k>@<epoch_us> "), TextEnd, RunFinished

encoded with the project's own encoders (`adapters.registry`), once per (dialect, N), so a stream is bytes that were
made before the request came. Each delta carries the moment it was written in its text, as 16 digits of epoch
microseconds (`tok7@1763823701123456 `): every dialect, and every translation of it, carries that text, so a client
can tell each event's one-way latency whatever path it took. Unpaced streams carry 16 zeros instead (nothing to
measure there, and the bytes stay the same length).

Parameters (query string first, then `n=<int>` / `delay_ms=<float>` written anywhere in the request body, which is
how they cross a gateway: the load client puts `bench n=200 delay_ms=5` in the user message; then the defaults):

- `n`: text deltas (default `--n`);
- `delay_ms`: pacing. 0 sends the whole response in one write. Otherwise the head (status, headers and the frames
  before the first delta) goes at once, delta k (0-based) at t0 + (k+1) * delay on a fixed schedule (no drift; t0 =
  when the request was read), each in its own write, stamped just before it, and the tail with the last delta.
  agent-respond is one JSON body: it goes whole, n * delay after the request (latency then means the whole run).

Every SSE frame piece is one HTTP/1.1 chunk (what a framework's streaming response sends); keep-alive is honoured.

    .venv/bin/python bench/upstream.py --port 18500
    curl -sN 'http://127.0.0.1:18500/ag-kit?n=3&delay_ms=5' -d '{}'
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import parse_qsl

import httptools

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from adapters import registry  # noqa: E402
from gateway.core.events import Event, RunFinished, RunStarted, TextDelta, TextEnd, TextStart  # noqa: E402

DIALECTS = tuple(registry.DIALECTS)
"""Every dialect: a client of the gateway in the benchmark may speak any."""
TS_DIGITS = 16
PLACEHOLDER = "#" * TS_DIGITS
ZERO_TS = b"0" * TS_DIGITS
MESSAGE_ID = "msg-bench"
_N_RE = re.compile(rb"\bn=(\d+)")
_DELAY_RE = re.compile(rb"\bdelay_ms=(\d+(?:\.\d*)?)")
LAST_CHUNK = b"0\r\n\r\n"
MAX_N = 100_000


def token(k: int, stamp: str = PLACEHOLDER) -> str:
    return f"tok{k}@{stamp} "


def canonical_run(n: int) -> list[Event]:
    events: list[Event] = [RunStarted(thread_id="thread-bench", run_id="run-bench"), TextStart(MESSAGE_ID)]
    events.extend(TextDelta(MESSAGE_ID, token(k)) for k in range(n))
    events += [TextEnd(MESSAGE_ID), RunFinished()]
    return events


def http_chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


@dataclass(slots=True)
class Plan:
    """One dialect's stream of N deltas, ready to send."""

    dialect: str
    n: int
    streaming: bool
    head: bytes
    """Status line and headers, without `connection:` and the blank line."""
    first: bytes
    """Chunk-framed frames before the first delta."""
    deltas: list[tuple[bytes, bytes]]
    """Per delta: (chunk size line + frame up to the stamp, frame after the stamp + chunk end)."""
    last: bytes
    """Chunk-framed frames after the last delta, and the last chunk."""
    unpaced: bytes
    """The whole body (after the head's blank line), zero-stamped."""
    body: bytes
    """The decoded body as the client reads it (no chunk framing), zero-stamped: for expected counts."""


def make_plan(dialect: str, n: int) -> Plan:
    spec = registry.get(dialect)
    encoder = spec.new_encoder(None)
    pieces = [encoder.encode([event]) for event in canonical_run(n)]
    content_type = encoder.headers.get("content-type", "application/octet-stream")
    extra = "".join(f"{k}: {v}\r\n" for k, v in encoder.headers.items() if k != "content-type")
    if not encoder.streams:
        body = b"".join(pieces).replace(PLACEHOLDER.encode(), ZERO_TS)
        head = (f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n{extra}"
                f"content-length: {len(body)}\r\n").encode()
        return Plan(dialect, n, False, head, b"", [], b"", body, body)
    head = (f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\n{extra}cache-control: no-cache\r\n"
            "x-accel-buffering: no\r\ntransfer-encoding: chunked\r\n").encode()
    first = b"".join(http_chunk(p) for p in pieces[:2] if p)
    last = b"".join(http_chunk(p) for p in pieces[2 + n:] if p) + LAST_CHUNK
    deltas: list[tuple[bytes, bytes]] = []
    placeholder = PLACEHOLDER.encode()
    for piece in pieces[2:2 + n]:
        before, found, after = piece.partition(placeholder)
        if not found or placeholder in after:
            raise NotPaceable(f"{dialect}: a delta frame must carry the stamp exactly once: {piece!r}")
        deltas.append((b"%x\r\n" % len(piece) + before, after + b"\r\n"))
    unpaced = first + b"".join(pre + ZERO_TS + post for pre, post in deltas) + last
    body = b"".join(pieces).replace(placeholder, ZERO_TS)
    return Plan(dialect, n, True, head, first, deltas, last, unpaced, body)


class NotPaceable(Exception):
    """A dialect whose stream cannot be paced by stamping each delta as it goes out: its frames repeat the text so
    far (MCP's progress), or come fewer than one a delta."""


def _paceable(dialect: str) -> bool:
    try:
        make_plan(dialect, 2)
    except NotPaceable:
        return False
    return True


UPSTREAMS = tuple(dialect for dialect in DIALECTS if _paceable(dialect))
"""The dialects this upstream speaks: those whose stream carries each delta's stamp once."""


class Plans:
    """Plans made on first use, per (dialect, n)."""

    def __init__(self) -> None:
        self._plans: dict[tuple[str, int], Plan] = {}

    def get(self, dialect: str, n: int) -> Plan:
        plan = self._plans.get((dialect, n))
        if plan is None:
            if len(self._plans) > 64:
                self._plans.clear()
            plan = self._plans[dialect, n] = make_plan(dialect, n)
        return plan


PLANS = Plans()
DEFAULTS = {"n": 200, "delay_ms": 0.0}


class _Request:
    __slots__ = ("body", "keep_alive", "url")

    def __init__(self) -> None:
        self.url = b""
        self.body: list[bytes] = []
        self.keep_alive = True


def _params(req: _Request) -> tuple[str | None, int, float]:
    url = req.url
    q = url.find(b"?")
    path = url if q < 0 else url[:q]
    name = path.split(b"/", 2)[1].decode("latin-1") if path.startswith(b"/") else ""
    dialect = name if name in UPSTREAMS else None
    n, delay = int(DEFAULTS["n"]), float(DEFAULTS["delay_ms"])
    found_n = found_delay = False
    if q >= 0:
        for key, value in parse_qsl(url[q + 1:].decode("latin-1")):
            try:
                if key == "n":
                    n, found_n = int(value), True
                elif key == "delay_ms":
                    delay, found_delay = float(value), True
            except ValueError:
                pass
    if not (found_n and found_delay) and req.body:
        body = b"".join(req.body)
        if not found_n and (m := _N_RE.search(body)):
            n = int(m.group(1))
        if not found_delay and (m := _DELAY_RE.search(body)):
            delay = float(m.group(1))
    return dialect, min(max(n, 0), MAX_N), max(delay, 0.0)


class UpstreamProtocol(asyncio.Protocol):
    """One client connection: requests in order, one response at a time."""

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpRequestParser(self)
        self.current: _Request | None = None
        self.queue: deque[_Request] = deque()
        self.busy = False
        self.closed = False
        self.timer: asyncio.TimerHandle | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio subclasses

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError:
            self._write(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            self._close()

    # httptools callbacks

    def on_message_begin(self) -> None:
        self.current = _Request()

    def on_url(self, url: bytes) -> None:
        assert self.current is not None
        self.current.url += url

    def on_body(self, body: bytes) -> None:
        assert self.current is not None
        self.current.body.append(body)

    def on_message_complete(self) -> None:
        req = self.current
        assert req is not None
        req.keep_alive = bool(self.parser.should_keep_alive())
        self.current = None
        if self.busy:
            self.queue.append(req)
        else:
            self._handle(req)

    # responses

    def _write(self, data: bytes) -> None:
        if self.transport is not None and not self.closed:
            self.transport.write(data)

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _handle(self, req: _Request) -> None:
        dialect, n, delay_ms = _params(req)
        conn = b"connection: keep-alive\r\n\r\n" if req.keep_alive else b"connection: close\r\n\r\n"
        if dialect is None:
            self._write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n" + conn)
            self._done(req)
            return
        plan = PLANS.get(dialect, n)
        if delay_ms <= 0 or (plan.streaming and n == 0):
            self._write(plan.head + conn + plan.unpaced)
            self._done(req)
            return
        self.busy = True
        delay = delay_ms / 1000.0
        t0 = self.loop.time()
        if not plan.streaming:
            self.timer = self.loop.call_at(t0 + n * delay, self._send_whole, req, plan, conn)
            return
        self._write(plan.head + conn + plan.first)
        self.timer = self.loop.call_at(t0 + delay, self._send_delta, req, plan, t0, delay, 0)

    def _send_whole(self, req: _Request, plan: Plan, conn: bytes) -> None:
        self.timer = None
        stamp = b"%d" % (time.time_ns() // 1000)
        self._write(plan.head + conn + plan.unpaced.replace(ZERO_TS, stamp))
        self._done(req)

    def _send_delta(self, req: _Request, plan: Plan, t0: float, delay: float, k: int) -> None:
        self.timer = None
        if self.closed:
            return
        pre, post = plan.deltas[k]
        data = pre + b"%d" % (time.time_ns() // 1000) + post
        k += 1
        if k == plan.n:
            self._write(data + plan.last)
            self._done(req)
            return
        self._write(data)
        self.timer = self.loop.call_at(t0 + (k + 1) * delay, self._send_delta, req, plan, t0, delay, k)

    def _done(self, req: _Request) -> None:
        self.busy = False
        if not req.keep_alive:
            self._close()
        elif self.queue and not self.closed:
            self._handle(self.queue.popleft())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=18500)
    parser.add_argument("--n", type=int, default=200, help="default text deltas per stream")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="default pacing")
    parser.add_argument("--backlog", type=int, default=4096)
    args = parser.parse_args(argv)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        parser.error("the benchmark upstream listens on loopback only")
    DEFAULTS.update(n=args.n, delay_ms=args.delay_ms)
    for dialect in UPSTREAMS:  # fail at start, not on the first request
        PLANS.get(dialect, args.n)

    import uvloop

    async def serve() -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(UpstreamProtocol, args.host, args.port, backlog=args.backlog,
                                          reuse_address=True)
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        print(f"bench upstream on http://{args.host}:{args.port} pid={os.getpid()}", file=sys.stderr, flush=True)
        await stop.wait()
        server.close()

    uvloop.run(serve())
    return 0


def expected(upstream: str, client: str | None, n: int) -> dict[str, Any]:
    """What a client reads from one stream of N deltas: SSE frames and stamped tokens. `client=None` is the
    upstream's own stream (direct, nginx); otherwise the gateway's translation, made with the same codecs."""
    plan = PLANS.get(upstream, n)
    if client is None:
        out, streaming = plan.body, plan.streaming
    else:
        decoder = registry.get(upstream).new_decoder()
        encoder = registry.get(client).new_encoder(None)
        events = decoder.feed(plan.body) + decoder.close()
        out, streaming = encoder.encode(events), encoder.streams
    return {"frames": out.count(b"\n\n") if streaming else 0, "tokens": out.count(b"@"), "bytes": len(out),
            "streaming": streaming}


if __name__ == "__main__":
    sys.exit(main())
