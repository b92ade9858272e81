"""SSE load client: C keep-alive streams at once, every stream read to its end and checked; one JSON line out.

    .venv/bin/python bench/load.py URL --dialect ag-ui --n 200 [--delay-ms 5] [-c 16] [-d 4] [--warmup 1]
        [--expect-frames 204 --expect-tokens 200] [--track] [--watch gateway=PID ...]

Raw asyncio + uvloop + httptools: one connection per worker, the response parser's `on_body` bound to a C-level
`list.append`, and one pass over the bytes per socket read (`bytes.count`), so the client costs far less per event
than anything it measures and leaves the most CPU to the system under test.

The request is a body in the client's dialect (`--dialect`), made once: one user message `bench n=<n>
delay_ms=<d>` (how the parameters reach the upstream through a gateway) and a conversation id of fixed width
that is new for every request (so a gateway's conversation store neither grows a history nor mixes runs).

Measurement. Workers start spread over `--ramp` seconds; `--warmup` seconds later a window of `--duration` seconds
opens; when it closes no new request starts, the streams in flight run to their end (at most `--grace` seconds, the
rest are cut) and are checked. Figures:

- events: the text deltas (tokens, `tok<k>@<epoch_us>`) that arrived inside the window; frames: SSE frames (blank
  lines) likewise. `events_per_s`, `frames_per_s` and the CPU per event use exactly the window;
- `req_per_s`: streams that ended inside the window, whole and correct;
- `ttfe_ms`: request written -> first whole SSE frame (first body byte for a JSON reply), for streams started in
  the window; `total_ms` likewise to the end of the stream;
- `lat_us` (`--track`): per event, the time it was read minus the stamp the upstream wrote in it (same host, same
  clock). Events read in one socket read share its time: the earliest moment the client could see them;
- `errors` by kind: `http_<status>`, `timeout`, `conn_<Error>`, `frames` / `tokens` (a stream with another count than
  `--expect-*`), `in_band` (the dialect's own error event), `cut` (still open `--grace` after the window);
- `cpu`: for this client, for each `--watch name=pid` process tree (all threads, `/proc/<pid>/task/*/schedstat`,
  ns) and the machine (`/proc/stat`): CPU seconds, % of a core and µs per event in the window; `user_share`, the part
  of a tree's CPU spent in user space rather than in the kernel (its threads' `utime` and `stime`, sampled at the
  clock's ticks: `ticks` says how many it rests on); `other_cores` is the machine's load minus everything watched,
  i.e. noise from other processes;
- `rss_kb` per watched tree (`VmRSS` of each process, summed): before the load (`idle`), `peak` and `end` (last
  sample in the window), and `after` the streams closed.

Bounded: the run stops by itself (window + warm-up + grace + a margin), every request has `--timeout`, `--requests`
caps the count, and only loopback URLs are accepted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httptools

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from adapters import registry  # noqa: E402
from gateway.core.events import RunError  # noqa: E402

perf = time.perf_counter
_STAMP = re.compile(rb"@(\d{16}) ")
ID_WIDTH = 16


def request_body(dialect: str, n: int, delay_ms: float) -> tuple[bytes, bytes]:
    """The body as (before the conversation id, after it): the id goes between, fixed width, new per request."""
    marker = "@@ID@@"
    body = registry.get(dialect).sample_request(f"bench n={n} delay_ms={delay_ms:g}", marker)
    before, _, after = json.dumps(body, separators=(",", ":")).encode().partition(marker.encode())
    return before, after


def in_band_error_marker(dialect: str) -> bytes | None:
    """The bytes a streamed error of `dialect` starts with, found by encoding one: None for a one-body dialect,
    whose errors are HTTP statuses."""
    message = "@@ERROR@@"
    encoder = registry.get(dialect).new_encoder(None)
    if not encoder.streams:
        return None
    frame = encoder.encode([RunError(message)])
    return frame[frame.index(b"{"):frame.index(message.encode())]


# ---------------------------------------------------------------------------------------------------------------
# one run's state


@dataclass(slots=True)
class Stats:
    recording: bool = False
    track: bool = False
    frames: int = 0
    tokens: int = 0
    ok: int = 0
    lat_us: list[int] = field(default_factory=list)
    ttfe: list[float] = field(default_factory=list)
    total: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    warmup_errors: dict[str, int] = field(default_factory=dict)
    started: int = 0

    def error(self, kind: str, counted: bool) -> None:
        target = self.errors if counted else self.warmup_errors
        target[kind] = target.get(kind, 0) + 1


class Stream:
    """The bytes of one response body, read as they come: frames and tokens counted, stamps read (`--track`)."""

    __slots__ = ("carry", "first", "frames", "in_band", "json", "marker", "parts", "stats", "tokens")

    def __init__(self, stats: Stats, json_reply: bool, marker: bytes | None) -> None:
        self.stats = stats
        self.json = json_reply
        self.marker = marker
        self.carry = b""
        self.first = 0.0
        self.frames = 0
        self.tokens = 0
        self.in_band = False
        self.parts: list[bytes] = []

    def feed(self, data: bytes) -> None:
        if self.json:
            if not self.first:
                self.first = perf()
            self.parts.append(data)
            return
        if self.carry:
            data = self.carry + data
        end = data.rfind(b"\n\n")
        if end < 0:
            self.carry = data
            return
        end += 2
        if end < len(data):
            self.carry = data[end:]
            data = data[:end]
        else:
            self.carry = b""
        if b"\r" in data:
            data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        frames = data.count(b"\n\n")
        if not self.first:
            self.first = perf()
        stats = self.stats
        if stats.track:
            stamps = _STAMP.findall(data)
            tokens = len(stamps)
            if stats.recording and tokens:
                now = time.time_ns() // 1000
                stats.lat_us.extend(now - int(s) for s in stamps if s[0] != 48)  # "0": an unstamped event
        else:
            tokens = data.count(b"@")
        self.frames += frames
        self.tokens += tokens
        if stats.recording:
            stats.frames += frames
            stats.tokens += tokens
        if self.marker is not None and self.marker in data:
            self.in_band = True

    def end(self) -> None:
        if self.json:
            body = b"".join(self.parts)
            self.tokens = body.count(b"@")
            if self.stats.recording:
                self.stats.tokens += self.tokens


# ---------------------------------------------------------------------------------------------------------------
# HTTP/1.1 over one keep-alive connection


class _Callbacks:
    """What httptools calls; `on_body` is the C `list.append` of the protocol's parts."""

    __slots__ = ("on_body", "on_headers_complete", "on_message_complete")
    on_body: Callable[[bytes], None]
    on_headers_complete: Callable[[], None]
    on_message_complete: Callable[[], None]


class _Protocol(asyncio.Protocol):
    def __init__(self) -> None:
        self.parts: list[bytes] = []
        callbacks = _Callbacks()
        callbacks.on_body = self.parts.append
        callbacks.on_headers_complete = self._headers_complete
        callbacks.on_message_complete = self._message_complete
        self.parser = httptools.HttpResponseParser(callbacks)
        self.waiter: asyncio.Future[None] | None = None
        self.stream: Stream | None = None
        self.status = 0
        self.keep_alive = True
        self.lost = False

    def begin(self, stream: Stream) -> asyncio.Future[None]:
        self.stream = stream
        self.status = 0
        self.waiter = asyncio.get_running_loop().create_future()
        return self.waiter

    def _flush(self) -> None:
        parts = self.parts
        if parts and self.stream is not None:
            self.stream.feed(parts[0] if len(parts) == 1 else b"".join(parts))
        parts.clear()

    def data_received(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self.lost = True
            self._fail(ConnectionError(f"bad response: {exc}"))
            return
        self._flush()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._fail(ConnectionResetError(f"connection lost: {exc}"))

    def _fail(self, exc: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    def _headers_complete(self) -> None:
        self.status = self.parser.get_status_code()

    def _message_complete(self) -> None:
        self._flush()
        self.keep_alive = bool(self.parser.should_keep_alive())
        self.stream = None
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)


class Connection:
    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.transport: asyncio.Transport | None = None
        self.protocol: _Protocol | None = None

    async def request(self, data: bytes, stream: Stream) -> int:
        if self.transport is None or self.protocol is None or self.protocol.lost:
            loop = asyncio.get_running_loop()
            transport, protocol = await loop.create_connection(_Protocol, self.host, self.port)
            self.transport, self.protocol = transport, protocol
        protocol = self.protocol
        waiter = protocol.begin(stream)
        self.transport.write(data)
        try:
            await waiter
        except BaseException:
            self.close()
            raise
        if not protocol.keep_alive:
            self.close()
        return protocol.status

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.transport = self.protocol = None


# ---------------------------------------------------------------------------------------------------------------
# /proc: CPU and memory of the processes watched


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    stat = f.read()
                ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            kids.setdefault(ppid, []).append(int(entry))
    return kids


def process_tree(pid: int, kids: dict[int, list[int]] | None = None) -> list[int]:
    kids = _children() if kids is None else kids
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, ()))
    return out


@dataclass(slots=True)
class CpuTime:
    """A process tree's CPU so far: all of it in ns (the scheduler's own count), and its user and kernel parts in
    clock ticks (the kernel's sampled split, 10 ms a tick here: a share, not a count to subtract)."""

    ns: int = 0
    user_ticks: int = 0
    kernel_ticks: int = 0


def cpu_time(pids: list[int]) -> CpuTime:
    total = CpuTime()
    for pid in pids:
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{pid}/task/{task}/schedstat", "rb") as f:
                    total.ns += int(f.read().split()[0])
                with open(f"/proc/{pid}/task/{task}/stat", "rb") as f:
                    stat = f.read()
                fields = stat[stat.rfind(b")") + 2:].split()  # from field 3 (state) on: utime is 14, stime 15
                total.user_ticks += int(fields[11])
                total.kernel_ticks += int(fields[12])
            except (OSError, ValueError, IndexError):
                pass
    return total


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", "rb") as f:
                for line in f:
                    if line.startswith(b"VmRSS:"):
                        total += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            pass
    return total


def machine_busy() -> tuple[int, int]:
    with open("/proc/stat") as f:
        values = [int(x) for x in f.readline().split()[1:]]
    idle = values[3] + values[4]
    return sum(values) - idle, sum(values)


@dataclass(slots=True)
class Snapshot:
    t: float
    procs: dict[str, CpuTime]
    machine: tuple[int, int]


def snapshot(watch: dict[str, int]) -> Snapshot:
    kids = _children()
    procs = {name: cpu_time(process_tree(pid, kids)) for name, pid in watch.items()}
    return Snapshot(perf(), procs, machine_busy())


# ---------------------------------------------------------------------------------------------------------------


def percentiles(values: list[float], scale: float, digits: int = 3) -> dict[str, float] | None:
    if not values:
        return None
    s = sorted(values)

    def at(p: float) -> float:
        return round(s[min(len(s) - 1, max(0, math.ceil(p / 100 * len(s)) - 1))] * scale, digits)

    return {"p50": at(50), "p90": at(90), "p99": at(99), "max": round(s[-1] * scale, digits),
            "mean": round(sum(s) / len(s) * scale, digits), "n": len(s)}


@dataclass(slots=True)
class Options:
    url: str
    dialect: str
    n: int
    delay_ms: float
    concurrency: int
    duration: float
    warmup: float
    ramp: float
    requests: int
    timeout: float
    grace: float
    track: bool
    expect_frames: int | None
    expect_tokens: int | None
    watch: dict[str, int]
    json_reply: bool


async def run(o: Options) -> dict[str, Any]:
    url = urlsplit(o.url)
    host, port = url.hostname or "127.0.0.1", url.port or 80
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    before, after = request_body(o.dialect, o.n, o.delay_ms)
    head = (f"POST {target} HTTP/1.1\r\nhost: {url.netloc}\r\ncontent-type: application/json\r\n"
            f"accept: {'application/json' if o.json_reply else 'text/event-stream'}\r\n"
            f"content-length: {len(before) + ID_WIDTH + len(after)}\r\n\r\n").encode() + before
    tag = secrets.token_hex(3).encode()  # ids of this run differ from every other run's
    marker = in_band_error_marker(o.dialect)
    stats = Stats(track=o.track)
    trees = {name: process_tree(pid) for name, pid in o.watch.items()}
    watch_all = {"client": os.getpid(), **o.watch}
    rss_idle = {name: rss_kb(pids) for name, pids in trees.items()}
    rss_peak = dict(rss_idle)
    rss_end = dict(rss_idle)
    counter = 0
    stopping = False
    loop = asyncio.get_running_loop()
    t_begin = perf()
    t_rec = t_begin + o.warmup
    t_stop = t_rec + o.duration

    async def worker(index: int) -> None:
        nonlocal counter
        if o.ramp > 0:
            await asyncio.sleep(o.ramp * index / o.concurrency)
        conn = Connection(host, port)
        try:
            while not stopping and not (o.requests and counter >= o.requests):
                counter += 1
                data = b"".join((head, tag, b"%0*d" % (ID_WIDTH - len(tag), counter), after))
                in_window = stats.recording
                if in_window:
                    stats.started += 1
                stream = Stream(stats, o.json_reply, marker)
                t0 = perf()
                try:
                    async with asyncio.timeout(o.timeout):
                        status = await conn.request(data, stream)
                except TimeoutError:
                    stats.error("timeout", perf() >= t_rec)
                    conn.close()
                    continue
                except (OSError, ConnectionError) as exc:
                    stats.error(f"conn_{type(exc).__name__}", perf() >= t_rec)
                    conn.close()
                    await asyncio.sleep(0.05)
                    continue
                t1 = perf()
                stream.end()
                counted = t1 >= t_rec
                if status != 200:
                    stats.error(f"http_{status}", counted)
                elif stream.in_band:
                    stats.error("in_band", counted)
                elif o.expect_frames is not None and stream.frames != o.expect_frames:
                    stats.error("frames", counted)
                elif o.expect_tokens is not None and stream.tokens != o.expect_tokens:
                    stats.error("tokens", counted)
                else:
                    if stats.recording:
                        stats.ok += 1
                    if in_window:
                        stats.ttfe.append(stream.first - t0)
                        stats.total.append(t1 - t0)
        finally:
            conn.close()

    async def sample_rss() -> None:
        while True:
            await asyncio.sleep(0.2)
            if perf() < t_rec:
                continue
            for name, pids in trees.items():
                value = rss_kb(pids)
                rss_end[name] = value
                rss_peak[name] = max(rss_peak[name], value)

    tasks = [loop.create_task(worker(i)) for i in range(o.concurrency)]
    sampler = loop.create_task(sample_rss())
    await asyncio.wait(tasks, timeout=max(0.0, t_rec - perf()))
    stats.recording = True
    a = snapshot(watch_all)
    await asyncio.wait(tasks, timeout=max(0.0, t_stop - perf()))  # early if --requests ran out
    stats.recording = False
    b = snapshot(watch_all)
    stopping = True
    sampler.cancel()
    _, pending = await asyncio.wait(tasks, timeout=o.grace)
    for task in pending:
        task.cancel()
        stats.error("cut", True)
    if pending:
        await asyncio.wait(pending, timeout=5)
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            print(f"load: a worker failed: {task.exception()!r}", file=sys.stderr)
    await asyncio.sleep(0.3)  # let the servers free what the streams held
    rss_after = {name: rss_kb(pids) for name, pids in trees.items()}

    window = b.t - a.t
    cpu: dict[str, Any] = {}
    for name in watch_all:
        before, after = a.procs[name], b.procs[name]
        seconds = (after.ns - before.ns) / 1e9
        user, kernel = after.user_ticks - before.user_ticks, after.kernel_ticks - before.kernel_ticks
        cpu[name] = {"cpu_s": round(seconds, 4), "pct_core": round(100 * seconds / window, 1),
                     "us_per_event": round(1e6 * seconds / stats.tokens, 3) if stats.tokens else None,
                     "us_per_frame": round(1e6 * seconds / stats.frames, 3) if stats.frames else None,
                     "us_per_req": round(1e6 * seconds / stats.ok, 1) if stats.ok else None,
                     "user_share": round(user / (user + kernel), 3) if user + kernel else None,
                     "ticks": user + kernel}
    busy, total = b.machine[0] - a.machine[0], b.machine[1] - a.machine[1]
    ncpu = os.cpu_count() or 1
    machine_cores = ncpu * busy / total if total else 0.0
    watched_cores = sum(v["pct_core"] for v in cpu.values()) / 100
    return {
        "url": o.url, "dialect": o.dialect, "n": o.n, "delay_ms": o.delay_ms, "concurrency": o.concurrency,
        "window_s": round(window, 3), "requests_ok": stats.ok, "started": stats.started,
        "events": stats.tokens, "frames": stats.frames,
        "req_per_s": round(stats.ok / window, 1), "events_per_s": round(stats.tokens / window, 1),
        "frames_per_s": round(stats.frames / window, 1),
        "errors": sum(stats.errors.values()), "error_kinds": stats.errors, "warmup_errors": stats.warmup_errors,
        "ttfe_ms": percentiles(stats.ttfe, 1e3), "total_ms": percentiles(stats.total, 1e3),
        "lat_us": percentiles([float(x) for x in stats.lat_us], 1.0, 1) if o.track else None,
        "cpu": cpu, "machine_cores": round(machine_cores, 2),
        "other_cores": round(max(0.0, machine_cores - watched_cores), 2),
        "rss_kb": {name: {"idle": rss_idle[name], "peak": rss_peak[name], "end": rss_end[name],
                          "after": rss_after[name]} for name in trees},
        "affinity": sorted(os.sched_getaffinity(0)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("--dialect", required=True, choices=list(registry.DIALECTS),
                        help="the dialect of the request body (and of the reply read)")
    parser.add_argument("--n", type=int, default=200, help="text deltas asked for")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="pacing asked for")
    parser.add_argument("-c", "--concurrency", type=int, default=16)
    parser.add_argument("-d", "--duration", type=float, default=4.0, help="measurement window, s")
    parser.add_argument("--warmup", type=float, default=1.0, help="s before the window opens")
    parser.add_argument("--ramp", type=float, default=0.0, help="spread the workers' starts over this many s")
    parser.add_argument("--requests", type=int, default=0,
                        help="start at most this many requests in all (the window closes early when they are done)")
    parser.add_argument("--timeout", type=float, default=30.0, help="per request, s")
    parser.add_argument("--grace", type=float, default=10.0, help="s for streams in flight when the window closes")
    parser.add_argument("--track", action="store_true", help="read each event's stamp: per-event latency")
    parser.add_argument("--expect-frames", type=int, default=None, help="SSE frames a whole stream has")
    parser.add_argument("--expect-tokens", type=int, default=None, help="text deltas a whole stream has")
    parser.add_argument("--watch", action="append", default=[], metavar="NAME=PID")
    args = parser.parse_args(argv)

    url = urlsplit(args.url)
    if url.scheme != "http" or url.hostname not in ("127.0.0.1", "localhost", "::1"):
        parser.error("only http://127.0.0.1 (loopback) targets")
    if not 0 < args.duration <= 600 or args.warmup < 0 or args.ramp < 0 or args.concurrency < 1:
        parser.error("--duration must be in (0, 600], --warmup and --ramp not negative, -c at least 1")
    watch = {}
    for item in args.watch:
        name, _, pid = item.partition("=")
        watch[name] = int(pid)
    options = Options(args.url, args.dialect, args.n, args.delay_ms, args.concurrency, args.duration, args.warmup,
                      args.ramp, args.requests, args.timeout, args.grace, args.track, args.expect_frames,
                      args.expect_tokens, watch,
                      not registry.get(args.dialect).new_encoder(None).streams)
    import uvloop

    async def bounded() -> dict[str, Any]:
        limit = args.warmup + args.duration + args.grace + 15
        async with asyncio.timeout(limit):
            return await run(options)

    result = uvloop.run(bounded())
    sys.stdout.write(json.dumps(result, separators=(",", ":")) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
