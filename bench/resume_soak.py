"""The resume soak: streams dropped at random points and resumed on the other replica; nothing lost or doubled.

    .venv/bin/python bench/resume_soak.py                       # 200 streams, two replicas, one Redis
    .venv/bin/python bench/resume_soak.py --streams 500 --json

What it starts (all on 127.0.0.1, stopped at the end): a Redis server (`tests/redis_server.py`), the fault
upstream (`tests/faults.py`, its `ok` run: `--events` numbered text deltas `--gap` seconds apart) and two gateway
processes over that Redis, each with a resumable AG-UI route to an AG-Kit upstream and one to an AG-UI upstream.
Then `--streams` AG-UI clients start at once, half on each replica. Each reads its stream to a random point and
drops the connection, then reconnects to the *other* replica with `Last-Event-ID` (the id of the last event it
had), up to `--drops` times, and reads the rest to its end.

Per stream the SSE ids must be exactly 1..n and the deltas' numbers exactly 0..events-1, the run finished: an id
or a number missing is *lost*, one seen twice *duplicated*, one smaller than the one before it *reordered*;
anything else (status, error event, unfinished run, a client error) is an *error*. It exits 1 unless all are zero.
The CI form is `tests/test_resume.py`'s soak test.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import aiohttp  # noqa: E402
import orjson  # noqa: E402
from client_bodies import request_body, user_message  # noqa: E402
from faults import GatewayProcess  # noqa: E402
from redis_server import RedisServer  # noqa: E402

from bench.soak import NUMBER, raise_file_limit, upstream_process  # noqa: E402

UPSTREAMS = ("ag-kit", "ag-ui")


@dataclass
class ResumeSoakReport:
    streams: int
    events_per_stream: int
    gap: float
    completed: int = 0
    drops: int = 0
    events: int = 0
    lost: int = 0
    duplicated: int = 0
    reordered: int = 0
    errors: int = 0
    error_samples: list[str] = field(default_factory=list)
    elapsed: float = 0.0

    @property
    def clean(self) -> bool:
        return self.completed == self.streams and not (self.lost or self.duplicated or self.reordered or self.errors)

    def summary(self) -> str:
        return (f"{self.streams} streams ({self.events_per_stream} events each, {self.gap * 1000:g} ms apart) over two "
                f"replicas: {self.completed} completed after {self.drops} drops and resumes, {self.events} events in "
                f"{self.elapsed:.1f}s; lost {self.lost}, duplicated {self.duplicated}, reordered {self.reordered}, "
                f"errors {self.errors}" + (f"\nfirst errors: {self.error_samples}" if self.error_samples else ""))

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "clean": self.clean}


def write_config(directory: Path, upstream: str, redis: str, events: int, gap: float) -> Path:
    routes = [{"name": f"ag-ui-{u}", "paths": [f"/resume/{u}"], "client_dialects": ["ag-ui"], "resumable": True,
               "upstream": {"url": f"{upstream}/{u}/ok?n={events}&gap={gap}", "dialect": u},
               "timeouts": {"connect": 5, "first_event": 30, "idle": 30, "total": 600}} for u in UPSTREAMS]
    path = directory / "resume-soak.yaml"
    path.write_text(json.dumps({"routes": routes, "store": {"url": redis}}))
    return path


def _frames(data: bytes) -> tuple[list[tuple[int, dict[str, Any]]], bytes]:
    """The whole SSE events in `data` as (id, payload), and what is left of an event cut short."""
    *blocks, rest = data.split(b"\n\n")
    found = []
    for block in blocks:
        event_id, payload = -1, None
        for line in block.split(b"\n"):
            if line.startswith(b"id: "):
                event_id = int(line[4:])
            elif line.startswith(b"data: "):
                payload = orjson.loads(line[6:])
        if payload is not None:
            found.append((event_id, payload))
    return found, rest


async def one_stream(index: int, session: aiohttp.ClientSession, gateways: list[str], drops: int, events: int,
                     report: ResumeSoakReport, rng: random.Random) -> None:
    upstream = UPSTREAMS[index % len(UPSTREAMS)]
    body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "count for me")], f"resume-{index}"))
    got: list[tuple[int, dict[str, Any]]] = []
    replica = index % 2
    error: str | None = None
    cuts = sorted(rng.sample(range(1, events + 2), min(drops, events + 1)))
    try:
        for attempt in range(len(cuts) + 1):
            headers = {"content-type": "application/json"}
            if got:
                headers["last-event-id"] = str(got[-1][0])
            cut = cuts[attempt] if attempt < len(cuts) else None
            async with session.post(f"{gateways[replica]}/resume/{upstream}", data=body, headers=headers) as response:
                if response.status != 200:
                    error = f"HTTP {response.status}: {(await response.read())[:200]!r}"
                    break
                buffer = b""
                async for chunk in response.content.iter_any():
                    found, buffer = _frames(buffer + chunk)
                    for frame in found:
                        got.append(frame)
                        if cut is not None and len(got) >= cut:
                            break
                    if cut is not None and len(got) >= cut:
                        break
            if cut is None or (got and got[-1][1].get("type") in ("RUN_FINISHED", "RUN_ERROR")):
                break
            report.drops += 1
            replica = 1 - replica  # the client comes back elsewhere
    except (aiohttp.ClientError, TimeoutError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    tally(report, got, events, error)


def tally(report: ResumeSoakReport, got: list[tuple[int, dict[str, Any]]], events: int, error: str | None) -> None:
    ids = [event_id for event_id, _ in got]
    numbers = [int(n) for _, payload in got for n in NUMBER.findall(payload.get("delta", "") + " ")]
    lost = len(set(range(1, max(ids, default=0) + 1)) - set(ids)) + len(set(range(events)) - set(numbers))
    duplicated = (len(ids) - len(set(ids))) + (len(numbers) - len(set(numbers)))
    reordered = sum(1 for seq in (ids, numbers) for a, b in itertools.pairwise(seq) if b < a)
    last = got[-1][1].get("type") if got else None
    if error is None and last != "RUN_FINISHED":
        error = f"the run did not finish: its last event is {last}"
    report.completed += 1
    report.events += len(got)
    report.lost += lost
    report.duplicated += duplicated
    report.reordered += reordered
    if error is not None:
        report.errors += 1
    if (error or lost or duplicated or reordered) and len(report.error_samples) < 5:
        report.error_samples.append(error or f"ids {ids[:30]}, numbers {numbers[:30]}")


async def soak(gateways: list[str], *, streams: int, drops: int, events: int, gap: float,
               seed: int = 16) -> ResumeSoakReport:
    report = ResumeSoakReport(streams, events, gap)
    rng = random.Random(seed)
    started = time.monotonic()
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=120)) as session:
        await asyncio.gather(*(one_stream(i, session, gateways, drops, events, report, rng) for i in range(streams)))
    report.elapsed = time.monotonic() - started
    return report


def run(streams: int, drops: int, events: int, gap: float, directory: Path) -> ResumeSoakReport:
    raise_file_limit(6 * streams + 1024)
    with RedisServer() as redis, upstream_process(directory / "upstream.log") as upstream:
        config = write_config(directory, upstream, redis.url, events, gap)
        one, two = GatewayProcess(config), GatewayProcess(config)
        for gateway in (one, two):
            gateway.launch()
        try:
            for gateway in (one, two):
                gateway.wait_ready()
            report = asyncio.run(soak([one.url, two.url], streams=streams, drops=drops, events=events, gap=gap))
            for gateway in (one, two):
                if gateway.process is None or gateway.process.poll() is not None:
                    raise RuntimeError(f"a gateway died during the soak:\n{gateway.log_tail()}")
        finally:
            one.stop()
            two.stop()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=200, help="concurrent streams (default: 200)")
    parser.add_argument("--drops", type=int, default=2, help="drops per stream, each resumed elsewhere (default: 2)")
    parser.add_argument("--events", type=int, default=40, help="numbered text deltas per stream (default: 40)")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between an upstream's events (default: 0.05)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the summary")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="agw-resume-soak-") as directory:
        report = run(args.streams, args.drops, args.events, args.gap, Path(directory))
    print(json.dumps(report.to_json()) if args.json else report.summary())
    return 0 if report.clean else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
