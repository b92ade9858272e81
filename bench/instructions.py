"""A request's own work, counted in instructions: the gateway under Valgrind's callgrind, one request at a time.

    .venv/bin/python bench/instructions.py                        # ag-ui <- ag-kit, 300 requests of one delta
    .venv/bin/python bench/instructions.py --pairs ag-ui,ag-kit vercel,ag-ui --n 100 --json
    .venv/bin/python bench/instructions.py --gateway-src /tmp/before --keep out/   # another tree; the profiles kept

`bench/run.py` times the gateway against nginx, and its paced and first-event rows move by a third between runs on
this kind of host: a change to a request's fixed work of a few percent is lost in them. An instruction count is not:
callgrind counts every instruction the gateway's process runs in user space (the interpreter, the C extensions,
libc; not the kernel's system calls), the same from run to run within a few tenths of a percent, whatever else the
machine is doing. What it does not say is time: a cache miss and an instruction count the same here. So it answers
"did this change make a request's own work smaller, and by how much", and `bench/run.py` answers what that is worth.

Method: `bench/upstream.py` and the gateway (one route per pair, the memory store) on 127.0.0.1; the gateway runs
under `valgrind --tool=callgrind --instr-atstart=no`, so that its start-up is not counted. `bench/load.py` sends
`--warm` requests of each pair at C=1 (the caches and the pool filled, the code paths first run), then
instrumentation is switched on (`callgrind_control -i on`), `--requests` more are sent, and it is switched off and
the counts dumped: instructions a request are the dump's total over the requests that completed. With `--keep DIR`
the dumps stay, for `callgrind_annotate` (by C function: the interpreter's loop, dict lookups, the allocator...).

Needs `valgrind` (Debian: `apt install valgrind`). Everything listens on 127.0.0.1; every load run is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PY = sys.executable
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

from servers import free_port  # noqa: E402

STARTUP_SECONDS = 180.0
"""How long the gateway may take to answer `/healthz` under callgrind (tens of times slower than natively)."""


def wait_healthy(url: str, process: subprocess.Popen[bytes], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url} exited with {process.returncode} before it answered")
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as reply:
            if reply.status == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {seconds:g} s")


@contextlib.contextmanager
def started(cmd: list[str], log: Path, env: dict[str, str] | None = None, cwd: Path | None = None
            ) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                   cwd=cwd)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def load(url: str, client: str, n: int, delay_ms: float, requests: int) -> dict[str, Any]:
    """`requests` streams of `n` deltas, one at a time (bounded by their count and a generous window)."""
    cmd = [PY, str(BENCH / "load.py"), "--dialect", client, "--n", str(n), "--delay-ms", str(delay_ms), "-c", "1",
           "-d", "600", "--warmup", "0", "--requests", str(requests), "--timeout", "60", url]
    result: dict[str, Any] = json.loads(subprocess.run(cmd, capture_output=True, check=True, text=True).stdout)
    if result["errors"]:
        raise RuntimeError(f"{url}: {result['errors']} requests failed: {result['error_kinds']}")
    return result


def control(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def dumped_total(directory: Path, before: set[Path]) -> int:
    """The instructions of the newest dump (callgrind writes `<out>.<n>` for each one asked for)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for path in sorted(set(directory.glob("callgrind.out*")) - before):
            for line in path.read_text().splitlines():
                if line.startswith("totals:"):
                    return int(line.split()[1])
        time.sleep(0.2)
    raise RuntimeError("callgrind wrote no dump")


def gateway_under_callgrind(args: argparse.Namespace, work: Path, up_port: int, port: int,
                            pairs: list[tuple[str, str]]) -> tuple[list[str], dict[str, str], Path]:
    """The gateway's command (one route per pair, the memory store), environment and working directory."""
    routes = [{"name": f"{c}-from-{u}", "paths": [f"/p/{c}/{u}"], "client_dialects": [c],
               "upstream": {"url": f"http://127.0.0.1:{up_port}/{u}", "dialect": u}} for c, u in pairs]
    config = work / "gateway.json"
    config.write_text(json.dumps({"routes": routes, "store": {"url": "memory://", "max_conversations": 2000}}))
    src = Path(args.gateway_src).resolve() if args.gateway_src else ROOT
    cmd = [PY, "-m", "gateway", "serve", "--config", str(config), "--host", "127.0.0.1", "--port", str(port),
           "--log-level", "warning"]
    return cmd, {**os.environ, "PYTHONPATH": str(src)}, src


def nginx_under_callgrind(work: Path, up_port: int, port: int) -> tuple[list[str], dict[str, str], Path]:
    """nginx as `bench/run.py` runs it, in one process (no master), so that callgrind counts its one worker."""
    prefix = work / "nginx"
    (prefix / "tmp").mkdir(parents=True)
    conf = (BENCH / "nginx.conf").read_text().replace("@PREFIX@", str(prefix))
    conf = conf.replace("@UPSTREAM_PORT@", str(up_port)).replace("@PORT@", str(port))
    conf = conf.replace("master_process on;", "master_process off;")
    (prefix / "nginx.conf").write_text(conf)
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    return [nginx, "-p", str(prefix), "-c", str(prefix / "nginx.conf")], dict(os.environ), prefix


def measure(args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    up_port, port = free_port(), free_port()
    pairs = [(c, u) for c, u in (p.split(",") for p in args.pairs)]
    if args.target == "nginx":  # a pass-through: the client speaks the upstream's dialect
        pairs = list(dict.fromkeys((u, u) for _, u in pairs))
        cmd, env, cwd = nginx_under_callgrind(work, up_port, port)
        health = f"http://127.0.0.1:{port}/{pairs[0][1]}?n=1"
    else:
        cmd, env, cwd = gateway_under_callgrind(args, work, up_port, port, pairs)
        health = f"http://127.0.0.1:{port}/healthz"
    dumps = work / "callgrind"
    dumps.mkdir()
    under = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={dumps / 'callgrind.out'}"]
    rows = []
    with started([PY, str(BENCH / "upstream.py"), "--port", str(up_port)], work / "upstream.log"), \
            started(under + cmd, work / "server.log", env=env, cwd=cwd) as server:
        wait_healthy(health, server, STARTUP_SECONDS)
        for client, upstream in pairs:
            url = f"http://127.0.0.1:{port}/{upstream}" if args.target == "nginx" else \
                f"http://127.0.0.1:{port}/p/{client}/{upstream}"
            load(url, client, args.n, args.delay_ms, args.warm)
            before = set(dumps.glob("callgrind.out*"))
            control(server.pid, "-z")
            control(server.pid, "-i", "on")
            result = load(url, client, args.n, args.delay_ms, args.requests)
            control(server.pid, "-i", "off")
            control(server.pid, "-d")
            total = dumped_total(dumps, before)
            done = result["requests_ok"]
            rows.append({"target": args.target, "client": client, "upstream": upstream, "n": args.n,
                         "delay_ms": args.delay_ms, "requests": done, "instructions": total,
                         "per_request": total / done, "per_event": total / max(result["events"], 1)})
    if args.keep:
        keep = Path(args.keep)
        keep.mkdir(parents=True, exist_ok=True)
        for path in dumps.iterdir():
            shutil.copy(path, keep / path.name)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pairs", nargs="+", default=["ag-ui,ag-kit"], metavar="CLIENT,UPSTREAM")
    parser.add_argument("--n", type=int, default=1, help="text deltas a request (default 1: the request's own work)")
    parser.add_argument("--delay-ms", type=float, default=0.0,
                        help="the upstream's pace: 5 gives each delta a read of its own, as paced streams are spliced")
    parser.add_argument("--requests", type=int, default=300, help="requests counted, per pair (default 300)")
    parser.add_argument("--warm", type=int, default=300, help="requests sent first, not counted (default 300)")
    parser.add_argument("--target", choices=("gateway", "nginx"), default="gateway",
                        help="nginx: bench/nginx.conf's pass-through, each pair's upstream dialect end to end")
    parser.add_argument("--gateway-src", default=None, help="the gateway's source tree (default: this checkout)")
    parser.add_argument("--keep", default=None, metavar="DIR", help="keep callgrind's dumps here")
    parser.add_argument("--json", action="store_true", help="one JSON line a pair")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench/instructions.py needs valgrind (Debian: apt install valgrind)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="agw-instructions-") as tmp:
        rows = measure(args, Path(tmp))
    for row in rows:
        if args.json:
            print(json.dumps(row))
        else:
            pace = f"{row['delay_ms']:g} ms apart" if row["delay_ms"] else "unpaced"
            print(f"{row['target']}: {row['client']} <- {row['upstream']}, {row['n']} deltas a request ({pace}): "
                  f"{row['per_request']:,.0f} instructions a request, {row['per_event']:,.0f} an event, "
                  f"over {row['requests']} requests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
