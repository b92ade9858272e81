"""The gateway benchmark: direct vs nginx vs a Python pass-through vs the gateway, same upstream, same client, same
run.

    .venv/bin/python bench/run.py            # the full run, about 8-9 minutes
    .venv/bin/python bench/run.py --quick    # a smoke run, about 1.5 minutes
    .venv/bin/python bench/run.py --profile paced-c128    # py-spy the gateway under one scenario's load
    .venv/bin/python bench/run.py --decompose             # a paced event: its request's part and its delta's

What it starts (all on 127.0.0.1, each stopped by PID at the end, whatever happens):

- `bench/upstream.py`: the upstream agent, any dialect by path, N text deltas stamped with their send time;
- nginx (`bench/nginx.conf`): a plain SSE pass-through to the upstream, 1 worker;
- the pump (`bench/pump.py`): the least a proxy in Python on uvloop does, bytes copied both ways and nothing parsed,
  in the scenarios that issue 49's targets read (`TARGETS` in their `targets`): what the gateway costs above it
  is its own work;
- the gateway: `python -m gateway serve --config <generated> --workers 1`, one route per pair
  `/p/<client>/<upstream>`, memory store (the `-sqlite`, `-redis`, `-redis-sentinel`, `-redis-cluster` and
  `-workers2` scenarios: a SQLite store, a Redis store, a primary behind Sentinel, a cluster, two workers);
- redis-server, for the `-redis` scenarios only (`bench/redis_stores.py`: one server; a primary, its replica and a
  sentinel; or three primaries in a cluster; skipped with a line when it is not installed).

Layout: the systems under test (gateway, nginx, pump) have core 0 to themselves, one at a time under load; the harness
(upstream, load client, this script) shares core 1. Each measurement is one `bench/load.py` run: C keep-alive streams
for a warm-up and a window. Per scenario, and per dialect pair (client <- upstream), three rows: `direct` (client ->
upstream), `nginx` (client -> nginx -> upstream) and `gateway` (client -> gateway -> upstream, translated), and a
`pump` row (client -> pump -> upstream) where it runs. direct, nginx and the pump carry the upstream's own dialect:
the comparison is per text-delta event, which every dialect carries once ("event" below means one text delta,
"tok<k>@<stamp>").

Figures per row (median over repetitions, which alternate the order of the targets): CPU µs per event of the system
under test (its whole process tree, from schedstat) and the share of it in user space (the rest is the kernel's:
the system calls, the wake-ups), events/s, requests/s, time to first event p50/p99, per-event
latency p50/p99 and what the row adds over direct, RSS per open stream (1000 streams: (RSS during - RSS idle) /
1000), and ratios against nginx. Results go to bench/results/<stamp>/: results.jsonl (one load.py line per
measurement, with its scenario, pair, target and repetition), summary.md (the tables and targets), env.txt, the
rendered configs and the servers' logs.

A measurement during which other processes used more than --noise-cores of CPU (`other_cores`) is done once more
(within a budget); the tables say how many were noisy.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from load import _children, machine_busy  # noqa: E402
from redis_stores import KINDS as REDIS_KINDS  # noqa: E402
from redis_stores import Harness  # noqa: E402
from upstream import DIALECTS, UPSTREAMS, expected  # noqa: E402

PY = sys.executable
SUT_CPU = "0"
HARNESS_CPU = "1"
NOISE_RETRIES = 12
"""Re-measurements allowed in one run when other processes were busy during a measurement."""
HEADLINE = ("ag-ui", "ag-kit")
"""(client, upstream): the pair every scenario runs (the README's first use case: AG-UI frontend, AG-Kit agent)."""
PAIRS_C16 = [("ag-ui", "ag-kit"), ("vercel", "ag-ui"), ("ag-ui", "ag-ui")]
TARGETS = ("direct", "nginx", "pump", "gateway")
"""Every target, in the tables' order. The pump runs only in the scenarios that issue 49's targets read (their
`targets`): there the floor of a proxy in Python is measured beside nginx."""
RESPOND = [("agent-respond", "vercel")]
GC_SHIM = """# written by bench/run.py --gc-stats: counts the gateway's garbage collections; SIGUSR2 dumps them
import gc, json, os, signal, time

_stats = {"0": [0, 0.0, 0], "1": [0, 0.0, 0], "2": [0, 0.0, 0]}
_start = [0.0]


def _callback(phase, info):
    if phase == "start":
        _start[0] = time.perf_counter()
    else:
        s = _stats[str(info["generation"])]
        s[0] += 1
        s[1] += time.perf_counter() - _start[0]
        s[2] += info.get("collected", 0)


def _dump(signum, frame):
    data = {"gens": _stats, "tracked": len(gc.get_objects()), "t": time.time()}
    if gc.get_debug() & gc.DEBUG_SAVEALL:  # what the collector found in cycles since the last dump, by type
        kinds = {}
        for obj in gc.garbage:
            name = type(obj).__module__ + "." + type(obj).__qualname__
            kinds[name] = kinds.get(name, 0) + 1
        data["garbage"] = dict(sorted(kinds.items(), key=lambda kv: -kv[1])[:40])
        data["garbage_total"] = len(gc.garbage)
        gc.garbage.clear()
    path = os.environ["AGW_BENCH_GC_FILE"]
    with open(path + ".tmp", "w") as f:
        json.dump(data, f)
    os.replace(path + ".tmp", path)


gc.callbacks.append(_callback)
signal.signal(signal.SIGUSR2, _dump)
if os.environ.get("AGW_BENCH_GC_THRESHOLD"):  # an experiment: --gateway-gc-threshold
    gc.set_threshold(*(int(x) for x in os.environ["AGW_BENCH_GC_THRESHOLD"].split(",")))
if os.environ.get("AGW_BENCH_GC_SAVEALL"):  # a diagnostic: keep cyclic garbage for _dump to count (leaks!)
    gc.set_debug(gc.DEBUG_SAVEALL)
if os.environ.get("AGW_BENCH_GC_FREEZE_AFTER"):  # an experiment: --gateway-gc-freeze (once the app is loaded)
    import threading

    threading.Timer(float(os.environ["AGW_BENCH_GC_FREEZE_AFTER"]), gc.freeze).start()
"""


@dataclass(slots=True)
class Scenario:
    name: str
    n: int
    delay_ms: float
    concurrency: int
    pairs: list[tuple[str, str]]
    duration: float
    warmup: float
    ramp: float = 0.0
    reps: int | None = None
    """None: the run's --reps."""
    targets: tuple[str, ...] = ("direct", "nginx", "gateway")
    fresh_gateway: bool = False
    """Restart the gateway and prime it before this scenario (memory per stream from a clean process)."""
    workers: int = 1
    """Gateway worker processes, on as many cores (from core 0 up; the harness keeps its core, so with 2 workers on
    a 2-core machine it shares the second)."""
    store: str = "memory"
    """The gateway's conversation store: "memory", or "sqlite" or a Redis (`redis_stores.KINDS`: "redis",
    "redis-sentinel", "redis-cluster"), which workers share (`serve --workers` needs one).
    The gateway is restarted for a scenario whose workers or store differ from the last one's."""
    timeout: float = 30.0
    grace: float = 10.0

    @property
    def paced(self) -> bool:
        return self.delay_ms > 0


def scenarios(quick: bool) -> list[Scenario]:
    if quick:
        return [
            Scenario("unpaced-c1", 200, 0, 1, [HEADLINE], 1.5, 0.5),
            Scenario("unpaced-c16", 200, 0, 16, PAIRS_C16, 1.5, 0.5),
            Scenario("paced-c16", 100, 5, 16, [HEADLINE], 2.0, 0.6, ramp=0.5),
            Scenario("respond-c16", 200, 0, 16, RESPOND, 1.5, 0.5),
            Scenario("paced-c200x20ms", 100, 20, 200, [HEADLINE], 3.0, 2.5, ramp=2.0, reps=1, fresh_gateway=True),
        ]
    return [
        Scenario("unpaced-c1", 200, 0, 1, [HEADLINE], 3.0, 1.0, targets=TARGETS),
        Scenario("unpaced-c16", 200, 0, 16, PAIRS_C16, 4.0, 1.0),
        Scenario("unpaced-c128", 200, 0, 128, [HEADLINE], 4.0, 1.5),
        Scenario("paced-c1", 100, 5, 1, [HEADLINE], 4.0, 1.0, targets=TARGETS),
        # Three repetitions: a paced window's CPU swings by a third now and then, and a median of two is their mean.
        Scenario("paced-c16", 100, 5, 16, PAIRS_C16, 4.0, 1.0, ramp=0.5, reps=3, targets=TARGETS),
        Scenario("paced-c128", 100, 5, 128, PAIRS_C16, 4.0, 1.5, ramp=0.5, reps=3, targets=TARGETS),
        Scenario("respond-c16", 200, 0, 16, RESPOND, 3.0, 1.0),
        Scenario("respond-paced-c16", 100, 5, 16, RESPOND, 4.0, 1.0, ramp=0.5),
        Scenario("paced-c1000x20ms", 100, 20, 1000, [HEADLINE], 6.0, 3.0, ramp=2.0, reps=1, fresh_gateway=True,
                 grace=15.0),
        Scenario("unpaced-c16-sqlite", 200, 0, 16, [HEADLINE], 4.0, 1.0, targets=("gateway",), store="sqlite"),
        Scenario("unpaced-c16-workers2", 200, 0, 16, [HEADLINE], 4.0, 1.0, targets=("gateway",), workers=2,
                 store="sqlite"),
        Scenario("unpaced-c16-redis", 200, 0, 16, [HEADLINE], 4.0, 1.0, targets=("gateway",), store="redis"),
        Scenario("unpaced-c16-workers2-redis", 200, 0, 16, [HEADLINE], 4.0, 1.0, targets=("gateway",), workers=2,
                 store="redis"),
        Scenario("unpaced-c16-redis-sentinel", 200, 0, 16, [HEADLINE], 4.0, 1.0, targets=("gateway",),
                 store="redis-sentinel"),
        Scenario("unpaced-c16-redis-cluster", 200, 0, 16, [HEADLINE], 4.0, 1.0, targets=("gateway",),
                 store="redis-cluster"),
    ]


# ---------------------------------------------------------------------------------------------------------------
# processes


def port_free(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) != 0


def wait_port(port: int, proc: subprocess.Popen[bytes], what: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode} before listening")
        if not port_free(port):
            return
        time.sleep(0.05)
    raise RuntimeError(f"{what} is not listening on {port} after {seconds:g}s")


def pinned(cpus: str, cmd: list[str], pin: bool) -> list[str]:
    return ["taskset", "-c", cpus, *cmd] if pin else cmd


class Processes:
    """Everything started here, stopped by PID (the nginx master stops its own worker; see stop())."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, cmd: list[str], log: Path, **kwargs: Any) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, **kwargs)
        self.procs[name] = proc
        return proc

    def stop(self, name: str) -> None:
        proc = self.procs.pop(name, None)
        if proc is None or proc.poll() is not None:
            return
        children = _children().get(proc.pid, [])
        proc.terminate()
        try:
            proc.wait(timeout=8)
        except subprocess.TimeoutExpired:
            for pid in children:  # e.g. an nginx worker left behind
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            proc.kill()
            proc.wait(timeout=5)

    def stop_all(self) -> None:
        for name in list(self.procs)[::-1]:
            try:
                self.stop(name)
            except Exception as exc:  # keep stopping the others
                print(f"could not stop {name}: {exc}", file=sys.stderr)


def machine_cores(seconds: float) -> float:
    a = machine_busy()
    time.sleep(seconds)
    b = machine_busy()
    return (os.cpu_count() or 1) * (b[0] - a[0]) / max(1, b[1] - a[1])


def wait_quiet(limit: float, max_wait: float) -> float:
    """Wait (bounded) until other processes leave the machine nearly idle; the load seen last."""
    deadline = time.monotonic() + max_wait
    while True:
        load = machine_cores(1.0)
        if load <= limit or time.monotonic() >= deadline:
            return load
        print(f"  machine busy ({load:.2f} cores from other processes), waiting...", file=sys.stderr)
        time.sleep(1.0)


# ---------------------------------------------------------------------------------------------------------------
# the systems


@dataclass
class Bench:
    args: argparse.Namespace
    out: Path
    tmp: Path
    procs: Processes = field(default_factory=Processes)
    up_port: int = 0
    ng_port: int = 0
    gw_port: int = 0
    pump_port: int = 0
    redis_port: int = 0
    """The first port for Redis servers; a kind that needs more takes the next ones."""
    redis_urls: dict[str, str] = field(default_factory=dict)
    """The Redis kinds started, and their URLs."""
    redis_servers: int = 0
    gw_starts: int = 0
    gw_workers: int = 1
    gw_store: str = "memory"
    retries_left: int = NOISE_RETRIES

    @property
    def pin(self) -> bool:
        return bool(self.args.pin)

    @property
    def gateway_python(self) -> str:
        """The interpreter the gateway runs under: `--gateway-python`, else the harness's own."""
        return str(self.args.gateway_python or PY)

    @property
    def gc_shim(self) -> bool:
        """Whether the gateway runs with the GC sitecustomize (any of the GC options asks for it)."""
        args = self.args
        return bool(args.gc_stats or args.gateway_gc_threshold or args.gateway_gc_freeze or args.gc_garbage)

    def pid(self, name: str) -> int:
        return self.procs.procs[name].pid

    def start_upstream(self) -> None:
        cmd = pinned(HARNESS_CPU, [PY, str(BENCH / "upstream.py"), "--port", str(self.up_port)], self.pin)
        proc = self.procs.start("upstream", cmd, self.out / "upstream.log")
        wait_port(self.up_port, proc, "the upstream")

    def start_nginx(self) -> None:
        prefix = self.tmp / "nginx"
        (prefix / "tmp").mkdir(parents=True, exist_ok=True)
        conf = (BENCH / "nginx.conf").read_text().replace("@PREFIX@", str(prefix))
        conf = conf.replace("@UPSTREAM_PORT@", str(self.up_port)).replace("@PORT@", str(self.ng_port))
        (prefix / "nginx.conf").write_text(conf)
        shutil.copy(prefix / "nginx.conf", self.out / "nginx.rendered.conf")
        nginx = shutil.which("nginx") or "/usr/sbin/nginx"
        check = subprocess.run([nginx, "-t", "-q", "-p", str(prefix), "-c", str(prefix / "nginx.conf")],
                               capture_output=True, text=True, timeout=20)
        if check.returncode != 0:
            raise RuntimeError(f"nginx -t failed: {check.stderr.strip()}")
        cmd = pinned(SUT_CPU, [nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf")], self.pin)
        proc = self.procs.start("nginx", cmd, self.out / "nginx.log")
        wait_port(self.ng_port, proc, "nginx")

    def start_pump(self) -> None:
        cmd = pinned(SUT_CPU, [PY, str(BENCH / "pump.py"), "--port", str(self.pump_port), "--upstream-port",
                               str(self.up_port)], self.pin)
        proc = self.procs.start("pump", cmd, self.out / "pump.log")
        wait_port(self.pump_port, proc, "the pump")

    def start_redis(self, kind: str) -> None:
        """The Redis a store names (`redis_stores.py`), once: throwaway servers on the harness's core."""
        if kind in self.redis_urls:
            return

        def launch(name: str, cmd: list[str], port: int) -> None:
            wait_port(port, self.procs.start(name, pinned(HARNESS_CPU, cmd, self.pin), self.out / f"{name}.log"), name)

        self.redis_urls[kind] = REDIS_KINDS[kind](Harness(launch, self.redis_server_port, self.tmp))

    def redis_server_port(self) -> int:
        port = self.redis_port + self.redis_servers
        self.redis_servers += 1
        if not port_free(port):
            raise RuntimeError(f"port {port}, for a Redis server, is in use: pass --port")
        return port

    def gateway_config(self) -> Path:
        routes = []
        for client in DIALECTS:
            for upstream in UPSTREAMS:
                routes.append({
                    "name": f"{client}-from-{upstream}", "paths": [f"/p/{client}/{upstream}"],
                    "client_dialects": [client],
                    "upstream": {"url": f"http://127.0.0.1:{self.up_port}/{upstream}", "dialect": upstream},
                    "resumable": bool(self.args.resumable),
                    **({"judge": {"sample": self.args.judge}} if self.args.judge is not None else {}),
                })
        store = {"memory": "memory://", "sqlite": f"sqlite:///{self.tmp / 'conversations.db'}",
                 **self.redis_urls}[self.gw_store]
        config: dict[str, Any] = {"routes": routes, "store": {"url": store, "max_conversations": 2000}}
        if self.args.inspector:  # every run captured, as when the page is open
            config["inspector"] = {"key": "bench-inspector-key-0123456789", "capture": "always"}
            for route in routes:
                route["inspector_bodies"] = True
        path = self.out / "gateway.yaml"
        path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML
        return path

    def start_gateway(self, workers: int = 1, store: str = "memory") -> None:
        self.gw_starts += 1
        self.gw_workers, self.gw_store = workers, store
        config = self.gateway_config()
        cmd = [self.gateway_python, "-m", "gateway", "serve", "--config", str(config), "--host", "127.0.0.1",
               "--port", str(self.gw_port), "--workers", str(workers), "--log-level", self.args.gateway_log_level]
        env = dict(os.environ)
        src = Path(self.args.gateway_src).resolve() if self.args.gateway_src else ROOT
        paths = [str(src)]
        if self.args.gateway_stack == "asyncio":  # hide uvloop and httptools: uvicorn falls back to asyncio + h11
            shim = self.tmp / "no-uvloop"
            for module in ("uvloop", "httptools"):
                (shim / module).mkdir(parents=True, exist_ok=True)
                (shim / module / "__init__.py").write_text(f"raise ImportError('{module} hidden by bench/run.py')\n")
            paths.insert(0, str(shim))
        if self.args.gateway_gc_threshold:
            env["AGW_BENCH_GC_THRESHOLD"] = self.args.gateway_gc_threshold
        if self.args.gateway_gc_freeze:
            env["AGW_BENCH_GC_FREEZE_AFTER"] = "3"
        if self.args.gc_garbage:
            env["AGW_BENCH_GC_SAVEALL"] = "1"
        if self.gc_shim:
            shim = self.tmp / "gc-shim"
            shim.mkdir(parents=True, exist_ok=True)
            (shim / "sitecustomize.py").write_text(GC_SHIM)
            paths.insert(0, str(shim))
            env["AGW_BENCH_GC_FILE"] = str(self.tmp / "gc-stats.json")
        env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        log = self.out / f"gateway-{self.gw_starts}.log"
        cores = SUT_CPU if workers == 1 else ",".join(str(core) for core in range(workers))
        proc = self.procs.start("gateway", pinned(cores, cmd, self.pin), log, env=env, cwd=str(src))
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the gateway exited with {proc.returncode}; see {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.gw_port}/healthz", timeout=1) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not answer /healthz in 30 s; see {log}")
            time.sleep(0.1)

    def gateway_stack(self) -> dict[str, Any]:
        try:
            maps = Path(f"/proc/{self.pid('gateway')}/maps").read_text()
        except OSError:
            return {}
        return {lib: lib in maps for lib in ("uvloop", "httptools", "orjson")}

    def gc_stats(self) -> dict[str, Any] | None:
        """The gateway's GC counters now (--gc-stats), or None."""
        if not self.gc_shim or "gateway" not in self.procs.procs:
            return None
        path = self.tmp / "gc-stats.json"
        before = path.stat().st_mtime_ns if path.exists() else 0
        os.kill(self.pid("gateway"), signal.SIGUSR2)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            if path.exists() and path.stat().st_mtime_ns != before:
                with contextlib.suppress(ValueError, OSError):
                    data: dict[str, Any] = json.loads(path.read_text())
                    return data
            time.sleep(0.01)
        return None

    def restart_gateway(self, workers: int = 1, store: str = "memory") -> None:
        self.procs.stop("gateway")
        self.start_gateway(workers, store)

    # ---- measurements

    def url(self, target: str, client: str, upstream: str) -> str:
        if target == "direct":
            return f"http://127.0.0.1:{self.up_port}/{upstream}"
        if target == "nginx":
            return f"http://127.0.0.1:{self.ng_port}/{upstream}"
        if target == "pump":
            return f"http://127.0.0.1:{self.pump_port}/{upstream}"
        return f"http://127.0.0.1:{self.gw_port}/p/{client}/{upstream}"

    def load(self, target: str, client: str, upstream: str, s: Scenario, *, n: int | None = None,
             delay_ms: float | None = None, requests: int = 0, concurrency: int | None = None,
             duration: float | None = None, warmup: float | None = None, meta: dict[str, Any] | None = None
             ) -> dict[str, Any]:
        n = s.n if n is None else n
        delay = s.delay_ms if delay_ms is None else delay_ms
        dialect = client if target == "gateway" else upstream
        exp = expected(upstream, client if target == "gateway" else None, n)
        warm = s.warmup if warmup is None else warmup
        dur = s.duration if duration is None else duration
        cmd = [PY, str(BENCH / "load.py"), self.url(target, client, upstream), "--dialect", dialect, "--n", str(n),
               "--delay-ms", f"{delay:g}", "-c", str(concurrency or s.concurrency), "-d", str(dur),
               "--warmup", str(warm), "--ramp", str(min(s.ramp, warm)), "--timeout", str(s.timeout),
               "--grace", str(s.grace), "--expect-tokens", str(exp["tokens"]),
               "--watch", f"upstream={self.pid('upstream')}"]
        if exp["streaming"]:
            cmd += ["--expect-frames", str(exp["frames"])]
        if delay > 0 and exp["streaming"]:
            cmd.append("--track")
        if requests:
            cmd += ["--requests", str(requests)]
        if target != "direct":
            cmd += ["--watch", f"sut={self.pid(target)}"]
        limit = warm + dur + s.grace + 40
        gc_before = self.gc_stats() if target == "gateway" else None
        done = subprocess.run(pinned(HARNESS_CPU, cmd, self.pin), capture_output=True, text=True, timeout=limit)
        if done.returncode != 0 or not done.stdout.strip():
            raise RuntimeError(f"load.py failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
        result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        result.update(meta or {})
        result.update(target=target, client=dialect, upstream=upstream, expected=exp)
        gc_after = self.gc_stats() if gc_before is not None else None
        if gc_before and gc_after:  # the whole run, warm-up and drain included
            result["gc"] = {"tracked_objects": gc_after["tracked"], **{
                f"gen{g}": {"collections": gc_after["gens"][g][0] - gc_before["gens"][g][0],
                            "ms": round(1000 * (gc_after["gens"][g][1] - gc_before["gens"][g][1]), 1),
                            "collected": gc_after["gens"][g][2] - gc_before["gens"][g][2]}
                for g in ("0", "1", "2")}}
            if "garbage" in gc_after:
                result["gc"]["garbage_total"] = gc_after["garbage_total"]
                result["gc"]["garbage"] = gc_after["garbage"]
        return result

    def measure(self, s: Scenario, target: str, client: str, upstream: str, rep: int) -> dict[str, Any]:
        meta = {"scenario": s.name, "pair": f"{client}<-{upstream}" if target == "gateway" else f"{upstream}",
                "pair_client": client, "rep": rep, "n_per_stream": s.n, "paced_ms": s.delay_ms}
        for attempt in range(2):
            result = self.load(target, client, upstream, s, meta={**meta, "attempt": attempt})
            noisy = (result.get("other_cores") or 0) > self.args.noise_cores
            result["noisy"] = noisy
            if not noisy or self.retries_left <= 0 or attempt == 1:
                return result
            self.retries_left -= 1
            print(f"  noisy ({result['other_cores']} cores from other processes): measuring once more",
                  file=sys.stderr)
            wait_quiet(self.args.noise_cores, 8)
        raise AssertionError("unreachable")


def progress_line(r: dict[str, Any]) -> str:
    cpu = r["cpu"].get("sut") or {}
    ttfe = r.get("ttfe_ms") or {}
    lat = r.get("lat_us") or {}
    bits = [f"{r['scenario']:<18} {r['target']:<7} {r['pair']:<22} C={r['concurrency']:<4}",
            f"req/s={r['req_per_s']:<8} ev/s={r['events_per_s']:<9}",
            f"sut_us/ev={cpu.get('us_per_event', '-')!s:<7} sut%={cpu.get('pct_core', '-')!s:<5}",
            f"ttfe_p50={ttfe.get('p50', '-')}ms"]
    if lat:
        bits.append(f"lat_p50/p99={lat.get('p50')}/{lat.get('p99')}us")
    bits.append(f"err={r['errors']}{r['error_kinds'] or ''} other={r.get('other_cores')}")
    if r.get("gc"):
        gc = r["gc"]
        bits.append("gc " + " ".join(f"g{g}={gc[f'gen{g}']['collections']}/{gc[f'gen{g}']['ms']}ms" for g in "012")
                    + f" tracked={gc['tracked_objects']}")
    return " ".join(bits)


# ---------------------------------------------------------------------------------------------------------------
# summary


def med(values: list[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


def dig(d: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(d, dict):
            return None
        d = d.get(p)
    return d


def fmt(x: float | None, digits: int = 1) -> str:
    if x is None:
        return "-"
    if abs(x) >= 1e6:
        return f"{x / 1e6:.2f}M"
    if abs(x) >= 1e4:
        return f"{x / 1e3:.1f}k"
    return f"{x:.{digits}f}"


def percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}"


def split(row: dict[str, Any]) -> str:
    """A row's CPU an event, and its part in user space and in the kernel where the ticks say."""
    total, user = row["sut_us_ev"], row["sut_user"]
    if user is None:
        return f"{total:.1f} µs"
    return f"{total:.1f} µs ({total * user:.1f} user, {total * (1 - user):.1f} kernel)"


def fmt_delta(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:+.{digits}f}"


def aggregate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def m(*path: str) -> float | None:
        return med([dig(r, *path) for r in rows])

    first = rows[0]
    c = first["concurrency"]
    rss_peak = m("rss_kb", "sut", "peak")
    rss_idle = m("rss_kb", "sut", "idle")
    return {
        "reps": len(rows), "noisy": sum(1 for r in rows if r.get("noisy")), "c": c,
        "req_s": m("req_per_s"), "ev_s": m("events_per_s"), "frames_s": m("frames_per_s"),
        "sut_us_ev": m("cpu", "sut", "us_per_event"), "sut_pct": m("cpu", "sut", "pct_core"),
        "sut_us_req": m("cpu", "sut", "us_per_req"), "sut_user": m("cpu", "sut", "user_share"),
        "up_pct": m("cpu", "upstream", "pct_core"), "client_pct": m("cpu", "client", "pct_core"),
        "ttfe50": m("ttfe_ms", "p50"), "ttfe99": m("ttfe_ms", "p99"),
        "lat50": m("lat_us", "p50"), "lat99": m("lat_us", "p99"),
        "errors": sum(r["errors"] for r in rows),
        "error_kinds": {k: sum(r["error_kinds"].get(k, 0) for r in rows)
                        for k in sorted({k for r in rows for k in r["error_kinds"]})},
        "warmup_errors": sum(sum(r.get("warmup_errors", {}).values()) for r in rows),
        "other": m("other_cores"),
        "rss_idle_kb": rss_idle, "rss_peak_kb": rss_peak, "rss_after_kb": m("rss_kb", "sut", "after"),
        "rss_per_stream_kb": (rss_peak - rss_idle) / c if rss_peak is not None and rss_idle is not None else None,
        "total50": m("total_ms", "p50"),
    }


@dataclass
class Summary:
    scenarios: list[Scenario]
    rows: list[dict[str, Any]]
    compiled: bool = False
    """Whether the gateway ran its compiled build (`scripts/compile`): issue 49's targets differ for it."""
    groups: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        grouped: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for r in self.rows:
            grouped.setdefault((r["scenario"], r["pair"], r["target"]), []).append(r)
        self.groups = {k: aggregate(v) for k, v in grouped.items()}

    def get(self, scenario: str, target: str, client: str, upstream: str) -> dict[str, Any] | None:
        pair = f"{client}<-{upstream}" if target == "gateway" else upstream
        return self.groups.get((scenario, pair, target))

    @staticmethod
    def kept_up(row: dict[str, Any], direct: dict[str, Any] | None) -> bool:
        """Whether a row delivered the events direct did (97%): below that the system under test was the
        bottleneck, its events came batched, and its CPU per event is not comparable with a paced row's."""
        if direct is None or not direct["ev_s"] or row["ev_s"] is None:
            return True
        return bool(row["ev_s"] >= 0.97 * direct["ev_s"])

    def tables(self) -> str:
        out = ["## Results (median over repetitions)", "",
               "event = one text delta (every dialect carries each once); CPU = the system under test's whole "
               "process tree on its own core; added = this row minus direct (same scenario, same upstream); "
               "x nginx = this row / nginx. Direct and nginx rows carry the upstream's own dialect.", "",
               "| scenario | C | pair (client <- upstream) | target | req/s | events/s | CPU µs/event | CPU % user "
               "| CPU % core | CPU x nginx | TTFE p50 / p99 ms | TTFE added p50 / p99 ms | latency p50 / p99 µs "
               "| latency added p50 / p99 µs | errors | reps (noisy) |",
               "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"]
        for s in self.scenarios:
            for client, upstream in s.pairs:
                direct = self.get(s.name, "direct", client, upstream)
                nginx = self.get(s.name, "nginx", client, upstream)
                for target in s.targets:
                    g = self.get(s.name, target, client, upstream)
                    if g is None:
                        continue
                    label = f"{client} <- {upstream}"
                    ratio = (g["sut_us_ev"] / nginx["sut_us_ev"]) if (
                        nginx and g["sut_us_ev"] and nginx["sut_us_ev"] and target != "nginx") else None

                    def added(key: str, ref: dict[str, Any] | None, row: dict[str, Any] = g) -> float | None:
                        if ref is None or row[key] is None or ref[key] is None or row is ref:
                            return None
                        return float(row[key] - ref[key])

                    lat = f"{fmt(g['lat50'], 0)} / {fmt(g['lat99'], 0)}" if g["lat50"] is not None else "-"
                    lat_add = "-"
                    if target != "direct" and g["lat50"] is not None and direct is not None:
                        lat_add = f"{fmt_delta(added('lat50', direct), 0)} / {fmt_delta(added('lat99', direct), 0)}"
                    ttfe_add = "-" if target == "direct" else (
                        f"{fmt_delta(added('ttfe50', direct))} / {fmt_delta(added('ttfe99', direct))}")
                    errors = str(g["errors"]) + (f" {g['error_kinds']}" if g["error_kinds"] else "")
                    if s.paced and target != "direct" and direct is not None and not self.kept_up(g, direct):
                        errors += f" SATURATED ({100 * g['ev_s'] / direct['ev_s']:.0f}% of direct's events)"
                    if g["warmup_errors"]:
                        errors += f" (+{g['warmup_errors']} in warm-up)"
                    out.append(
                        f"| {s.name} | {g['c']} | {label} | {target} | {fmt(g['req_s'])} | {fmt(g['ev_s'])} | "
                        f"{fmt(g['sut_us_ev'], 2)} | {percent(g['sut_user'])} | {fmt(g['sut_pct'])} | "
                        f"{'-' if ratio is None else f'{ratio:.2f}x'} | "
                        f"{fmt(g['ttfe50'], 3)} / {fmt(g['ttfe99'], 3)} | {ttfe_add} | {lat} | {lat_add} | "
                        f"{errors} | {g['reps']} ({g['noisy']}) |")
        out += ["", "### Harness and memory", "",
                "| scenario | pair | target | client % core | upstream % core | other processes (cores) "
                "| SUT RSS idle / peak / after MB | RSS per open stream KB (fresh process only) |",
                "|---|---|---|---:|---:|---:|---:|---:|"]
        for s in self.scenarios:
            for client, upstream in s.pairs:
                for target in s.targets:
                    g = self.get(s.name, target, client, upstream)
                    if g is None:
                        continue
                    rss = "-" if g["rss_peak_kb"] is None else (
                        f"{g['rss_idle_kb'] / 1024:.1f} / {g['rss_peak_kb'] / 1024:.1f} / "
                        f"{(g['rss_after_kb'] or 0) / 1024:.1f}")
                    per_stream = fmt(g["rss_per_stream_kb"], 1) if s.fresh_gateway else "-"
                    out.append(f"| {s.name} | {client} <- {upstream} | {target} | {fmt(g['client_pct'])} | "
                               f"{fmt(g['up_pct'])} | {fmt(g['other'], 2)} | {rss} | {per_stream} |")
        return "\n".join(out) + "\n"

    def targets(self) -> tuple[str, list[dict[str, Any]]]:
        checks: list[dict[str, Any]] = []
        build = "compiled" if self.compiled else "pure"

        def check(name: str, pair: tuple[str, str], value: float | None, limit: float, unit: str, detail: str,
                  ok: bool | None = None) -> None:
            verdict = "n/a" if value is None else ("met" if (value <= limit if ok is None else ok) else "MISSED")
            checks.append({"target": name, "pair": f"{pair[0]} <- {pair[1]}", "value": value, "limit": limit,
                           "unit": unit, "verdict": verdict, "detail": detail})

        for s in self.scenarios:
            for pair in s.pairs:
                gw = self.get(s.name, "gateway", *pair)
                ng = self.get(s.name, "nginx", *pair)
                dr = self.get(s.name, "direct", *pair)
                pump = self.get(s.name, "pump", *pair)
                if gw is None:
                    continue
                kept = self.kept_up(gw, dr)
                pace = "" if kept or dr is None else (
                    f"; SATURATED: {gw['ev_s']:.0f} of direct's {dr['ev_s']:.0f} events/s, so its events came "
                    "batched and the ratio flatters it")
                if s.paced and s.concurrency in (16, 128) and ng and gw["sut_us_ev"] and ng["sut_us_ev"]:
                    ratio, limit = gw["sut_us_ev"] / ng["sut_us_ev"], 1.5 if self.compiled else 2.0
                    floor = (f"; the pump {pump['sut_us_ev'] / ng['sut_us_ev']:.2f}x nginx"
                             if pump and pump["sut_us_ev"] else "")
                    check(f"paced CPU/event ≤ {limit:g}x nginx ({s.name}, {build})", pair, round(ratio, 2), limit,
                          "x", f"gateway {split(gw)} vs nginx {split(ng)}{pace}{floor}",
                          ok=ratio <= limit and kept)
                if not s.paced and s.concurrency >= 16 and s.store == "memory" and gw["sut_us_ev"] and self.compiled:
                    check(f"batched CPU/event ≤ 3 µs ({s.name}, compiled)", pair, round(gw["sut_us_ev"], 2), 3.0,
                          "µs", f"nginx {ng['sut_us_ev']:.2f} µs" if ng and ng["sut_us_ev"] else "")
                if s.name == "paced-c16" and dr and ng and None not in (gw["lat99"], dr["lat99"], ng["lat99"]):
                    added, nginx_added = gw["lat99"] - dr["lat99"], ng["lat99"] - dr["lat99"]
                    limit = 2 * max(nginx_added, 1.0)
                    check("added latency p99 ≤ 2x nginx's (paced-c16)", pair, round(added), limit, "µs",
                          f"p99 {gw['lat99']:.0f} µs vs nginx {ng['lat99']:.0f}, direct {dr['lat99']:.0f} µs; p50 "
                          f"added {gw['lat50'] - dr['lat50']:+.0f} µs")
                if s.concurrency == 1 and dr and ng and None not in (gw["ttfe50"], dr["ttfe50"], ng["ttfe50"]):
                    added, nginx_added = gw["ttfe50"] - dr["ttfe50"], ng["ttfe50"] - dr["ttfe50"]
                    floor = (f"; the pump adds {pump['ttfe50'] - dr['ttfe50']:+.3f} ms"
                             if pump and pump["ttfe50"] is not None else "")
                    check(f"TTFE added ≤ 2x nginx's at C=1 ({s.name})", pair, round(added, 3),
                          round(2 * nginx_added, 3), "ms",
                          f"p50 {gw['ttfe50']:.3f} vs nginx {ng['ttfe50']:.3f}, direct {dr['ttfe50']:.3f} ms; p99 "
                          f"added {gw['ttfe99'] - dr['ttfe99']:+.3f} ms{floor}")
                one = self.get(f"unpaced-c16-{s.store}", "gateway", *pair) if s.workers > 1 else None
                if one is not None and one["ev_s"] and gw["ev_s"]:
                    scale = gw["ev_s"] / one["ev_s"]
                    check(f"--workers {s.workers}: ≥ 1.8x one worker's events/s ({s.name})", pair, round(scale, 2),
                          1.8, "x", f"{gw['ev_s']:.0f} vs {one['ev_s']:.0f} events/s; the harness (client "
                          f"{gw['client_pct'] or 0:.0f}% + upstream {gw['up_pct'] or 0:.0f}% of a core) shares the "
                          "gateway's second core", ok=scale >= 1.8)
                if s.fresh_gateway:
                    per = gw["rss_per_stream_kb"]
                    check(f"{s.concurrency} paced streams: no errors", pair, float(gw["errors"]), 0, "errors",
                          f"{gw['error_kinds'] or 'none'}", ok=gw["errors"] == 0)
                    if dr is not None and dr["ev_s"]:
                        share = 100 * gw["ev_s"] / dr["ev_s"]
                        check(f"{s.concurrency} paced streams: keeps the pace (≥ 97% of direct's events/s)", pair,
                              round(share, 1), 97.0, "%",
                              f"{gw['ev_s']:.0f} events/s vs direct {dr['ev_s']:.0f} "
                              f"({s.concurrency * 1000 / s.delay_ms:.0f} scheduled); stream p50 "
                              f"{gw['total50']:.0f} ms vs direct {dr['total50']:.0f} ms", ok=share >= 97.0)
                    check(f"{s.concurrency} paced streams: RSS ≤ 64 KB per stream", pair,
                          None if per is None else round(per, 1), 64.0, "KB",
                          f"RSS idle {gw['rss_idle_kb'] / 1024:.1f} MB, peak {gw['rss_peak_kb'] / 1024:.1f} MB")
        lines = ["## Targets", "", "| target | pair | measured | limit | verdict | detail |",
                 "|---|---|---:|---:|---|---|"]
        for c in checks:
            value = "-" if c["value"] is None else f"{c['value']:g} {c['unit']}"
            lines.append(f"| {c['target']} | {c['pair']} | {value} | {c['limit']:g} {c['unit']} | "
                         f"{c['verdict']} | {c['detail']} |")
        return "\n".join(lines) + "\n", checks


# ---------------------------------------------------------------------------------------------------------------


def environment(bench: Bench) -> str:
    def sh(cmd: list[str]) -> str:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=20, cwd=ROOT)
            return (done.stdout + done.stderr).strip()
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"({exc})"

    versions = []
    from importlib import metadata

    for package in ("starlette", "uvicorn", "uvloop", "httptools", "orjson", "pydantic", "redis"):
        try:
            versions.append(f"{package} {metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package} -")
    src = bench.args.gateway_src or str(ROOT)
    return "\n".join([
        f"date: {time.strftime('%Y-%m-%dT%H:%M:%S%z')}",
        f"machine: {os.cpu_count()} CPUs, {os.uname().release}, Python {sys.version.split()[0]} ({PY})",
        f"nginx: {sh(['nginx', '-v'])}",
        f"gateway source: {src}; git {sh(['git', '-C', src, 'rev-parse', '--short', 'HEAD'])}, changed files: "
        f"{sh(['git', '-C', src, 'status', '--porcelain', '--', 'gateway', 'adapters', 'pyproject.toml']) or 'none'}",
        f"gateway interpreter: {sh([bench.gateway_python, '--version'])} ({bench.gateway_python})",
        f"gateway stack requested: {bench.args.gateway_stack}; loaded in the gateway process: {bench.gateway_stack()}",
        f"gateway log level: {bench.args.gateway_log_level}; GC shim: stats {bench.args.gc_stats}, threshold "
        f"{bench.args.gateway_gc_threshold or 'default'}, freeze {bench.args.gateway_gc_freeze}",
        f"packages: {', '.join(versions)}",
        f"layout: systems under test on CPU {SUT_CPU}, harness on CPU {HARNESS_CPU} (pinning "
        f"{'on' if bench.pin else 'off'})",
        f"ports: upstream {bench.up_port}, nginx {bench.ng_port}, gateway {bench.gw_port}, pump {bench.pump_port}",
    ]) + "\n"


def profile(bench: Bench, out: Path) -> int:
    """py-spy the gateway (native stacks) while one scenario's load runs against it, then summarise."""
    import threading

    from pyspy_summary import load as load_profile
    from pyspy_summary import report

    args = bench.args
    known = {s.name: s for s in scenarios(False) + scenarios(True)}
    s = known.get(args.profile)
    if s is None:
        print(f"unknown scenario {args.profile}; known: {', '.join(known)}", file=sys.stderr)
        return 2
    client, upstream = tuple(args.profile_pair.split(",")) if args.profile_pair else s.pairs[0]
    pyspy = shutil.which("py-spy") or str(Path(PY).parent / "py-spy")
    if s.fresh_gateway:
        bench.restart_gateway()
        primer = Scenario("prime", s.n, 0, 16, [], 30.0, 0.0, timeout=20.0, grace=10.0)
        bench.load("gateway", client, upstream, primer, requests=1200)
    seconds = args.profile_seconds
    warm = max(s.warmup, 1.5)
    result: dict[str, Any] = {}
    raw = out / f"profile-{s.name}-{client}-from-{upstream}.raw"
    cmd = [pyspy, "record", "--native", "--rate", str(args.profile_rate), "--duration", f"{seconds:g}", "--pid",
           str(bench.pid("gateway")), "--format", "raw", "--output", str(raw)]

    def drive() -> None:
        result.update(bench.load("gateway", client, upstream, s, warmup=warm, duration=seconds + 1.0,
                                 meta={"scenario": s.name, "pair": f"{client}<-{upstream}", "rep": 0}))

    # py-spy --native must stop the process for each sample (ptrace): the gateway runs slower while profiled,
    # and py-spy's own CPU shows as `other_cores`. The shares are what to read; the µs/event of the benchmark rows
    # (no profiler) are the cost.
    wait_quiet(args.noise_cores, 30)
    driver = threading.Thread(target=drive)
    driver.start()
    time.sleep(warm + 0.5)
    spy = subprocess.run(pinned(HARNESS_CPU, cmd, bench.pin), capture_output=True, text=True, timeout=seconds + 60)
    driver.join(timeout=warm + seconds + s.grace + 60)
    if spy.returncode != 0 or not raw.exists():
        print(f"py-spy failed: {spy.stderr.strip()[-1000:]}", file=sys.stderr)
        return 1
    with open(out / "results.jsonl", "a") as sink:
        sink.write(json.dumps(result, separators=(",", ":")) + "\n")
    us = dig(result, "cpu", "sut", "us_per_event")
    text = (f"# Profile: gateway, {s.name}, {client} <- {upstream}\n\n```\n{(out / 'env.txt').read_text()}```\n\n"
            f"Load during the profile: {progress_line(result)}\n\n"
            f"py-spy {' '.join(cmd[1:])}\n\n" + report(load_profile(str(raw)), us))
    (out / f"profile-{s.name}-{client}-from-{upstream}.md").write_text(text)
    print(text)
    return 0


def decomposed(bench: Bench, out: Path) -> int:
    """A paced event's CPU split into its request's part and its delta's (`decompose.py`): nginx and the gateway
    over each N of `--decompose-ns`, paced and warm, alternated each repetition."""
    from decompose import LOADS, report

    args = bench.args
    client, upstream = tuple(args.profile_pair.split(",")) if args.profile_pair else HEADLINE
    ns = sorted({int(n) for n in args.decompose_ns.split(",")})
    reps = args.reps or 2
    measured: dict[tuple[str, str, int], list[float]] = {}
    for rep in range(1, reps + 1):
        for kind, load in LOADS.items():
            for n in ns:
                s = Scenario(f"decompose-{kind}-n{n}", n, load.delay_ms, load.concurrency, [], load.duration, 1.0,
                             ramp=load.ramp)
                for target in ("nginx", "gateway") if rep % 2 else ("gateway", "nginx"):
                    row = bench.measure(s, target, client, upstream, rep)
                    print(progress_line(row), file=sys.stderr, flush=True)
                    us = dig(row, "cpu", "sut", "us_per_event")
                    if us is not None and not row["errors"]:
                        measured.setdefault((kind, target, n), []).append(float(us))
    text = report(measured, ns, client, upstream, reps)
    (out / "decompose.md").write_text(f"```\n{(out / 'env.txt').read_text()}```\n\n{text}")
    print(text)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a smoke run: short windows, fewer scenarios")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per measurement (default 2, quick 1)")
    parser.add_argument("--only", default=None, help="comma-separated scenario names to run")
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help=f"comma-separated subset of the targets (default {','.join(TARGETS)}; the pump runs in "
                             "the scenarios that issue 49's targets read)")
    parser.add_argument("--port", type=int, default=18500,
                        help="first of five free ports; the fifth is the first Redis server's, and a Redis kind with "
                             "more servers takes the ports after it (default 18500)")
    parser.add_argument("--out", default=None, help="results directory (default bench/results/<stamp>)")
    parser.add_argument("--no-pin", dest="pin", action="store_false", help="let the scheduler place everything")
    parser.add_argument("--noise-cores", type=float, default=0.3,
                        help="re-measure once when other processes used more than this (default 0.3)")
    parser.add_argument("--gateway-src", default=None,
                        help="run the gateway from this source tree (e.g. a `git archive` of another commit)")
    parser.add_argument("--gateway-python", default=None, metavar="PYTHON",
                        help="run the gateway under this interpreter (one with the project's dependencies installed, "
                             "e.g. another Python's venv); the harness stays on this one")
    parser.add_argument("--gateway-stack", choices=["auto", "asyncio"], default="auto",
                        help="auto: uvicorn picks uvloop + httptools when installed; asyncio: hide them")
    parser.add_argument("--gc-stats", action="store_true",
                        help="count the gateway's garbage collections (a sitecustomize on its PYTHONPATH)")
    parser.add_argument("--gc-garbage", action="store_true",
                        help="diagnostic: gc.DEBUG_SAVEALL in the gateway and count the cyclic garbage by type "
                             "(the garbage is kept until counted: memory figures are then meaningless)")
    parser.add_argument("--gateway-gc-threshold", default=None, metavar="G0,G1,G2",
                        help="experiment: gc.set_threshold() in the gateway process (implies the GC shim)")
    parser.add_argument("--gateway-gc-freeze", action="store_true",
                        help="experiment: gc.freeze() in the gateway 3 s after it starts (implies the GC shim)")
    parser.add_argument("--inspector", action="store_true",
                        help="the inspector on, capturing every run (its cost when the page is open)")
    parser.add_argument("--judge", type=float, default=None, metavar="SAMPLE",
                        help="judge this share of every route's runs live (routes[].judge.sample)")
    parser.add_argument("--resumable", action="store_true",
                        help="every gateway route resumable (its replies kept for reconnecting clients)")
    parser.add_argument("--gateway-log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--profile", default=None, metavar="SCENARIO",
                        help="instead of the benchmark: py-spy the gateway under this scenario's load "
                             "(headline pair unless --profile-pair client,upstream)")
    parser.add_argument("--profile-pair", default=None, metavar="CLIENT,UPSTREAM",
                        help="the pair --profile and --decompose load (default: the headline pair)")
    parser.add_argument("--decompose", action="store_true",
                        help="instead of the benchmark: a paced event's CPU split into its request's part and its "
                             "delta's, fitted over --decompose-ns (bench/decompose.py)")
    parser.add_argument("--decompose-ns", default="100,200,400", metavar="N,N,...",
                        help="deltas a request for --decompose (default 100,200,400)")
    parser.add_argument("--profile-seconds", type=float, default=8.0)
    parser.add_argument("--profile-rate", type=int, default=100, help="py-spy samples per second (default 100)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if (os.cpu_count() or 1) < 2 and args.pin:
        print("fewer than 2 CPUs: running unpinned", file=sys.stderr)
        args.pin = False
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        print("nginx is not installed: apt-get install -y nginx", file=sys.stderr)
        return 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))  # 1000 streams x 4 sockets
    if args.pin:
        os.sched_setaffinity(0, {int(HARNESS_CPU)})
    all_scenarios = scenarios(args.quick)
    if args.only:
        wanted = set(args.only.split(","))
        all_scenarios = [s for s in all_scenarios if s.name in wanted]
    targets = tuple(t for t in TARGETS if t in args.targets.split(","))
    for s in all_scenarios:
        s.targets = tuple(t for t in s.targets if t in targets)
    reps = args.reps or (1 if args.quick else 2)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-quick" if args.quick else "") + ("-profile" if args.profile else "")
    out = Path(args.out) if args.out else BENCH / "results" / stamp
    out.mkdir(parents=True, exist_ok=True)
    if not shutil.which("redis-server") and any(s.store in REDIS_KINDS for s in all_scenarios):
        print("redis-server is not installed: the -redis scenarios are skipped", file=sys.stderr)
        all_scenarios = [s for s in all_scenarios if s.store not in REDIS_KINDS]
    ports = [args.port + i for i in range(5)]
    busy = [p for p in ports if not port_free(p)]
    if busy:
        print(f"ports {busy} are in use: pass --port", file=sys.stderr)
        return 2

    def on_term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    with tempfile.TemporaryDirectory(prefix="agw-bench-") as tmp:
        bench = Bench(args, out, Path(tmp), up_port=ports[0], ng_port=ports[1], gw_port=ports[2],
                      pump_port=ports[3], redis_port=ports[4])
        try:
            return run(bench, all_scenarios, reps, out)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130
        finally:
            bench.procs.stop_all()
            with contextlib.suppress(OSError):
                shutil.copy(Path(tmp) / "nginx" / "error.log", out / "nginx.error.log")


def run(bench: Bench, all_scenarios: list[Scenario], reps: int, out: Path) -> int:
    args = bench.args
    t_start = time.monotonic()
    load = wait_quiet(args.noise_cores, 20)
    print(f"machine load before start: {load:.2f} cores", file=sys.stderr)
    bench.start_upstream()
    bench.start_nginx()
    pumped = not (args.profile or args.decompose) and any("pump" in s.targets for s in all_scenarios)
    if pumped:
        bench.start_pump()
    bench.start_gateway()
    env = environment(bench) + f"machine load before start: {load:.2f} cores\n"
    (out / "env.txt").write_text(env)
    print(env, file=sys.stderr)
    if args.profile:
        return profile(bench, out)
    if args.decompose:
        return decomposed(bench, out)

    # sanity: a few short streams through every target and pair, checked
    sanity = Scenario("sanity", 5, 0, 1, [], 10.0, 0.0, timeout=10.0, grace=5.0)
    pairs = {p for s in all_scenarios for p in s.pairs}
    sane = [t for t in TARGETS if t != "pump" or pumped]
    for client, upstream in sorted(pairs):
        for target in sane:
            r = bench.load(target, client, upstream, sanity, requests=3, concurrency=1)
            if r["errors"] or r["warmup_errors"] or r["requests_ok"] < 1:
                print(f"sanity failed: {target} {client}<-{upstream}: {r['error_kinds']} {r['warmup_errors']}",
                      file=sys.stderr)
                return 1
    print(f"sanity: {len(pairs)} pairs x {len(sane)} targets OK", file=sys.stderr)

    results = out / "results.jsonl"
    rows: list[dict[str, Any]] = []
    with open(results, "a") as sink:
        for s in all_scenarios:
            if "gateway" in s.targets and (s.fresh_gateway or (s.workers, s.store) != (bench.gw_workers,
                                                                                        bench.gw_store)):
                if s.store in REDIS_KINDS:
                    bench.start_redis(s.store)
                bench.restart_gateway(s.workers, s.store)
            if s.fresh_gateway and "gateway" in s.targets:
                client, upstream = s.pairs[0]
                primer = Scenario("prime", s.n, 0, 16, [], 30.0, 0.0, timeout=20.0, grace=10.0)
                bench.load("gateway", client, upstream, primer, requests=1200)
                time.sleep(1.0)
            wait_quiet(args.noise_cores, 5)
            for rep in range(1, (s.reps or reps) + 1):
                order = s.targets if rep % 2 else s.targets[::-1]
                done_upstreams: set[tuple[str, str]] = set()
                for target in order:
                    for client, upstream in s.pairs:
                        if target != "gateway":  # the others carry the upstream's stream: once per upstream
                            if (target, upstream) in done_upstreams:
                                continue
                            done_upstreams.add((target, upstream))
                        r = bench.measure(s, target, client, upstream, rep)
                        rows.append(r)
                        sink.write(json.dumps(r, separators=(",", ":")) + "\n")
                        sink.flush()
                        print(progress_line(r), file=sys.stderr, flush=True)
    src = Path(args.gateway_src).resolve() if args.gateway_src else ROOT
    summary = Summary(all_scenarios, rows, compiled=any((src / "gateway").rglob("*.so")))
    tables = summary.tables()
    targets_md, checks = summary.targets()
    elapsed = time.monotonic() - t_start
    text = (f"# Gateway benchmark {out.name}\n\n```\n{(out / 'env.txt').read_text()}```\n\n{tables}\n{targets_md}\n"
            f"Run time {elapsed / 60:.1f} min; {len(rows)} measurements; re-measured for noise: "
            f"{NOISE_RETRIES - bench.retries_left}.\n")
    (out / "summary.md").write_text(text)
    (out / "targets.json").write_text(json.dumps(checks, indent=2) + "\n")
    print(text)
    print(f"results: {results}\nsummary: {out / 'summary.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
