"""A paced event's CPU split into its request's part and its delta's: `bench/run.py --decompose`.

A paced row's CPU per event is two costs, which no single row can tell apart: what each delta costs (a read, the
splice, a write) and what each request costs (its head read and parsed, the history, the call, its end), spread
over the request's deltas. Run at one pace and concurrency with more deltas a request, the event rate stays the
same and the request rate falls: CPU per event = a delta's cost + a request's cost / N. Fitted over N (least
squares in 1/N) for nginx and for the gateway beside it, the gateway's excess over nginx is a request's part (µs a
request) and a delta's part (µs a delta). The same over unpaced requests at C=1 gives what both cost warm, so that
the paced request's figure reads against its own work with the caches full.

    .venv/bin/python bench/run.py --decompose                 # the headline pair, N = 100, 200, 400, twice
    .venv/bin/python bench/run.py --decompose --decompose-ns 50,100,400 --reps 3 --gateway-src /tmp/compiled

Each measurement is one `bench/load.py` window, nginx then the gateway (alternated each repetition), the layout
`bench/run.py`'s. A fit is as good as its rows, which move by a third between windows on a small host: the
repetitions' spread is shown beside the medians.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass(frozen=True)
class Load:
    """One way of loading the pair, the same for every N."""

    delay_ms: float
    concurrency: int
    duration: float
    """The measurement window, s (after a 1 s warm-up)."""
    ramp: float = 0.0

    def describe(self) -> str:
        streams = "one stream" if self.concurrency == 1 else f"{self.concurrency} streams"
        return f"{streams}, a delta every {self.delay_ms:g} ms" if self.delay_ms else f"{streams}, unpaced"


LOADS = {"paced": Load(5.0, 16, 6.0, ramp=0.5), "warm": Load(0.0, 1, 3.0)}
"""Paced: the paced targets' load, where a request's work runs on a CPU left idle between requests. Warm: the same
work back to back, its caches full."""


@dataclass(frozen=True)
class Fit:
    """CPU per event = `per_delta` + `per_request` / N, over the N measured."""

    per_delta: float
    per_request: float


def fit(points: list[tuple[int, float]]) -> Fit | None:
    """Least squares of µs per event against 1/N; None with fewer than two distinct N."""
    xs = [1.0 / n for n, _ in points]
    if len(set(xs)) < 2:
        return None
    ys = [y for _, y in points]
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / \
        sum((x - mean_x) ** 2 for x in xs)
    return Fit(per_delta=mean_y - slope * mean_x, per_request=slope)


def report(measured: dict[tuple[str, str, int], list[float]], ns: list[int], client: str, upstream: str,
           reps: int) -> str:
    """The medians a row, and the fits: each target's, and the gateway's excess over nginx."""
    lines = [f"# A paced event decomposed: {client} <- {upstream}, {reps} repetitions\n",
             " ".join(f"{kind.capitalize()}: {load.describe()}." for kind, load in LOADS.items()) +
             " CPU µs an event, median (min-max) of the repetitions.\n",
             "| load | target | " + " | ".join(f"N={n}" for n in ns) + " | µs a delta (fit) | µs a request (fit) |",
             "|---|---|" + "---:|" * (len(ns) + 2)]
    for kind in LOADS:
        medians: dict[str, dict[int, float]] = {}
        for target in ("nginx", "gateway"):
            cells, points = [], []
            for n in ns:
                values = measured.get((kind, target, n), [])
                if not values:
                    cells.append("-")
                    continue
                median = statistics.median(values)
                medians.setdefault(target, {})[n] = median
                points.append((n, median))
                cells.append(f"{median:.1f} ({min(values):.1f}-{max(values):.1f})")
            lines.append(f"| {kind} | {target} | " + " | ".join(cells) + " | " + _fitted(fit(points)) + " |")
        gateway, nginx = medians.get("gateway", {}), medians.get("nginx", {})
        excess = [(n, gateway[n] - nginx[n]) for n in ns if n in gateway and n in nginx]
        lines.append(f"| {kind} | gateway - nginx | " + " | ".join(
            f"{gateway[n] - nginx[n]:.1f}" if n in gateway and n in nginx else "-" for n in ns) +
            " | " + _fitted(fit(excess)) + " |")
    return "\n".join(lines) + "\n"


def _fitted(found: Fit | None) -> str:
    if found is None:
        return "- | -"
    return f"{found.per_delta:.1f} | {found.per_request:.0f}"
