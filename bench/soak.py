"""The soak: many concurrent numbered streams through one gateway process for a while; nothing lost, nothing leaked.

    .venv/bin/python bench/soak.py                          # 1,000 concurrent streams for 60 s
    .venv/bin/python bench/soak.py --streams 200 --seconds 10 --json

What it starts (all on 127.0.0.1, stopped by PID at the end): the fault upstream (`tests/faults.py`, its `ok`
run: `--events` text deltas `"n=0 "`, `"n=1 "`, ... `--gap` seconds apart, in the upstream's dialect) and the
gateway (`python -m gateway serve --config <generated>`, memory store), one route per (client, upstream) dialect
pair, every dialect in front of every one, `/soak/<client>/<upstream>`. Then `--streams` workers each post one
stream after another through the pairs (worker i starts at pair i, modulo their number) until `--seconds` have
passed, so that many streams are always open. Each stream is a conversation of its own (the store is bounded to 256
of them, so it stops growing at once).

Every stream is read whole with aiohttp, decoded with the client dialect's own decoder (`tests/helpers.decode`)
and checked: HTTP 200, a finished run with no error, and the numbers of its deltas exactly 0..events-1. Per stream a
number missing is *lost*, one seen twice *duplicated*, one smaller than the one before it *reordered*; anything
else wrong (status, error event, unfinished run, a client timeout) is an *error*. The gateway's RSS
(/proc/<pid>/status VmRSS) is sampled every quarter second: before the load (baseline), its peak, and its mean in
the first half of the window against the second half (after a warm-up of a quarter of the window, at most 10 s),
which should be flat. RSS per stream is (peak - baseline) / streams.

The same code is the CI soak's (`tests/test_soak.py`), at 200 streams for 10 s. It exits 1 when a stream lost,
duplicated or reordered an event or failed, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import re
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import aiohttp  # noqa: E402
import orjson  # noqa: E402
from client_bodies import DIALECTS, request_body, user_message  # noqa: E402
from faults import GatewayProcess, wait_until  # noqa: E402
from helpers import decode  # noqa: E402
from servers import free_port  # noqa: E402

from gateway.core.events import RunError, RunFinished, TextDelta  # noqa: E402

PAIRS = [(c, u) for c in DIALECTS for u in DIALECTS]
NUMBER = re.compile(r"n=(\d+) ")


@dataclass
class SoakReport:
    streams: int
    """Concurrent workers: how many streams were open at any time."""
    seconds: float
    events_per_stream: int
    gap: float
    completed: int = 0
    events: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    bad_streams: int = 0
    baseline_rss_kb: int = 0
    peak_rss_kb: int = 0
    first_half_rss_kb: float = 0.0
    second_half_rss_kb: float = 0.0
    rss_samples: list[tuple[float, int]] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def clean(self) -> bool:
        return self.completed > 0 and not (self.lost or self.duplicated or self.reordered or self.errors)

    @property
    def rss_per_stream_kb(self) -> float:
        return (self.peak_rss_kb - self.baseline_rss_kb) / self.streams

    @property
    def rss_drift_kb(self) -> float:
        return self.second_half_rss_kb - self.first_half_rss_kb

    def summary(self) -> str:
        mib = 1024
        return (
            f"{self.streams} concurrent streams for {self.seconds:g}s ({self.events_per_stream} events each, "
            f"{self.gap * 1000:g} ms apart): {self.completed} streams, {self.events} events "
            f"({self.events / max(self.elapsed, 1e-9):,.0f}/s); lost {self.lost}, duplicated {self.duplicated}, "
            f"reordered {self.reordered}, errors {self.errors}\n"
            f"gateway RSS: baseline {self.baseline_rss_kb / mib:.1f} MiB, peak {self.peak_rss_kb / mib:.1f} MiB, "
            f"first half {self.first_half_rss_kb / mib:.1f} MiB, second half {self.second_half_rss_kb / mib:.1f} MiB "
            f"(drift {self.rss_drift_kb / mib:+.1f} MiB), {self.rss_per_stream_kb:.1f} KiB per open stream"
            + (f"\nfirst errors: {self.error_samples}" if self.error_samples else ""))

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("rss_samples")
        out.update(clean=self.clean, rss_per_stream_kb=self.rss_per_stream_kb, rss_drift_kb=self.rss_drift_kb)
        return out


def write_config(directory: Path, upstream: str, events: int, gap: float) -> Path:
    """A gateway configuration with one `/soak/<client>/<upstream>` route per pair, to the upstream's `ok` run.

    Every stream is a new conversation, so the store is kept small (`max_conversations`): full within the first
    second, it then holds a constant amount of memory, and what grows after that is not the store."""
    # The run asked for by header: a dialect whose requests have paths of their own (LangGraph's) keeps only the
    # configured URL's path, not its query.
    routes = [{"name": f"{c}-{u}", "paths": [f"/soak/{c}/{u}"], "client_dialects": [c],
               "upstream": {"url": f"{upstream}/{u}/ok", "dialect": u,
                            "headers": {"x-fault": f"ok?n={events}&gap={gap}"}},
               "timeouts": {"connect": 5, "first_event": 30, "idle": 30, "total": 600}} for c, u in PAIRS]
    path = directory / "soak.yaml"
    path.write_text(json.dumps({"routes": routes, "store": {"url": "memory://", "max_conversations": 256},
                                "keepalive_seconds": 15}))
    return path


def check_stream(client: str, status: int, body: bytes) -> tuple[list[int], str | None]:
    """The numbers the stream carried, in order, and what was wrong with it besides (None if nothing)."""
    if status != 200:
        return [], f"HTTP {status}: {body[:200]!r}"
    decoded = decode(client, body)
    seen = [int(k) for k in NUMBER.findall("".join(e.delta for e in decoded if isinstance(e, TextDelta)))]
    last = decoded[-1] if decoded else None
    if isinstance(last, RunError):
        return seen, f"run error: {last.message}"
    if not isinstance(last, RunFinished):
        return seen, f"unfinished run, ends with {type(last).__name__}"
    return seen, None


def tally(report: SoakReport, seen: list[int], events: int, error: str | None) -> None:
    unique = set(seen)
    lost = len(set(range(events)) - unique)
    duplicated = len(seen) - len(unique)
    reordered = sum(1 for before, after in itertools.pairwise(seen) if after < before)
    report.completed += 1
    report.events += len(seen)
    report.lost += lost
    report.duplicated += duplicated
    report.reordered += reordered
    if error is not None:
        report.errors += 1
    if error is not None or lost or duplicated or reordered:
        report.bad_streams += 1
        if len(report.error_samples) < 5:
            report.error_samples.append(error or f"numbers {seen[:20]}...")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


async def soak(gateway: str, pid: int, *, streams: int, seconds: float, events: int, gap: float,
               stream_timeout: float = 120.0, message: str = "count for me") -> SoakReport:
    """Drive `streams` concurrent numbered streams through the gateway at `gateway` for `seconds`."""
    report = SoakReport(streams, seconds, events, gap)
    report.baseline_rss_kb = rss_kb(pid)
    connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=2)  # under the gateway's 5 s: no reuse race
    timeout = aiohttp.ClientTimeout(total=stream_timeout)
    started = time.monotonic()
    deadline = started + seconds
    samples: list[tuple[float, int]] = []

    async def sample() -> None:
        while True:
            samples.append((time.monotonic() - started, rss_kb(pid)))
            await asyncio.sleep(0.25)

    async def worker(index: int, session: aiohttp.ClientSession) -> None:
        turn = 0
        while time.monotonic() < deadline:
            client, upstream = PAIRS[(index + turn) % len(PAIRS)]
            turn += 1
            body = orjson.dumps(request_body(client, [user_message(client, message)], f"soak-{index}-{turn}"))
            try:
                async with session.post(f"{gateway}/soak/{client}/{upstream}", data=body,
                                        headers={"content-type": "application/json"}) as response:
                    body = await response.read()
                seen, error = check_stream(client, response.status, body)
            except (aiohttp.ClientError, TimeoutError) as exc:
                seen, error = [], f"{type(exc).__name__}: {exc}"
            tally(report, seen, events, error)

    sampler = asyncio.ensure_future(sample())
    try:
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            await asyncio.gather(*(worker(i, session) for i in range(streams)))
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
    report.elapsed = time.monotonic() - started
    report.rss_samples = samples
    # The halves of the window after the warm-up (the first quarter, at most 10 s: pools, caches and the
    # allocator's arenas fill up while the load ramps).
    warmup = min(seconds / 4, 10.0)
    window = [(t, kb) for t, kb in samples if warmup <= t <= seconds] or samples
    half = (warmup + seconds) / 2
    first = [kb for t, kb in window if t < half] or [kb for _, kb in window[:1]]
    second = [kb for t, kb in window if t >= half] or [kb for _, kb in window[-1:]]
    report.peak_rss_kb = max(kb for _, kb in samples)
    report.first_half_rss_kb = statistics.fmean(first)
    report.second_half_rss_kb = statistics.fmean(second)
    return report


@contextlib.contextmanager
def upstream_process(log: Path) -> Iterator[str]:
    """The fault upstream in its own process (its CPU is not the gateway's nor the client's)."""
    port = free_port()
    with log.open("ab") as out:
        process = subprocess.Popen([sys.executable, str(ROOT / "tests" / "faults.py"), "--port", str(port)],
                                   stdin=subprocess.DEVNULL, stdout=out, stderr=out)
    url = f"http://127.0.0.1:{port}"
    try:
        def up() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"the fault upstream exited: {log.read_text()[-2000:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
            return False

        if not wait_until(up, 20, 0.05):
            raise RuntimeError("the fault upstream did not start")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def long_message(kib: int) -> str:
    """The streams' user message: three words, or `kib` KiB of them."""
    return "count for me" + " word" * (kib * 1024 // 5)


def raise_file_limit(needed: int) -> None:
    """Each stream holds three sockets across the processes (client, gateway both sides, upstream)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(needed, hard), hard))


def run(streams: int, seconds: float, events: int, gap: float, directory: Path, *, message_kib: int = 0
        ) -> SoakReport:
    raise_file_limit(4 * streams + 1024)
    with upstream_process(directory / "upstream.log") as upstream:
        config = write_config(directory, upstream, events, gap)
        with GatewayProcess(config) as gateway:
            report = asyncio.run(soak(gateway.url, gateway.pid, streams=streams, seconds=seconds, events=events,
                                      gap=gap, message=long_message(message_kib)))
            if gateway.process is None or gateway.process.poll() is not None:
                raise RuntimeError(f"the gateway died during the soak:\n{gateway.log_tail()}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1000, help="concurrent streams (default: 1000)")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long to keep them coming (default: 60)")
    parser.add_argument("--events", type=int, default=50, help="numbered text deltas per stream (default: 50)")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between an upstream's events (default: 0.1)")
    parser.add_argument("--message-kib", type=int, default=0,
                        help="each stream's user message this many KiB long, as a long conversation's request is "
                             "(default: three words)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agw-soak-") as directory:
        report = run(args.streams, args.seconds, args.events, args.gap, Path(directory), message_kib=args.message_kib)
    if args.json:
        print(json.dumps(report.to_json()))
    else:
        print(report.summary())
    return 0 if report.clean else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
