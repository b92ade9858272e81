"""The Redis a bench scenario's store names, one function per kind: each starts its servers on the harness's core,
with nothing saved to disk, and returns the URL the gateway is given.

```
redis             one redis-server                                        redis://127.0.0.1:<port>/0
redis-sentinel    a primary, its replica, and a sentinel watching them    redis+sentinel://127.0.0.1:<port>/agw-bench/0
redis-cluster     a cluster of three primaries                            redis+cluster://127.0.0.1:<p1>,...,127.0.0.1:<p3>
```

Another kind is a function of the same shape and a line in `KINDS`.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SERVICE = "agw-bench"
"""The name the sentinel knows the primary by."""


@dataclass(frozen=True, slots=True)
class Harness:
    """What a kind needs of the harness."""

    launch: Callable[[str, list[str], int], None]
    """Starts a named process on the harness's core, its output in the results, and waits until it listens on the
    port."""
    port: Callable[[], int]
    """A free port for one more server."""
    tmp: Path
    """The run's temporary directory (a sentinel must have a configuration file it can rewrite)."""


def redis_server() -> str:
    return shutil.which("redis-server") or "redis-server"


def _server(port: int) -> list[str]:
    """A redis-server that keeps nothing on disk."""
    return [redis_server(), "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]


def single(harness: Harness) -> str:
    port = harness.port()
    harness.launch("redis", [*_server(port), "--dir", str(harness.tmp)], port)
    return f"redis://127.0.0.1:{port}/0"


def sentinel(harness: Harness) -> str:
    """The gateway finds the primary through the sentinel, and listens to it for failovers; the primary replicates
    every write to the replica, as a deployment's would."""
    primary, replica, watcher = harness.port(), harness.port(), harness.port()
    directory = harness.tmp / "sentinel"
    directory.mkdir(exist_ok=True)
    harness.launch("redis-primary", [*_server(primary), "--dir", str(directory)], primary)
    harness.launch("redis-replica", [*_server(replica), "--dir", str(directory), "--replicaof", "127.0.0.1",
                                     str(primary), "--repl-diskless-load", "swapdb"], replica)
    conf = directory / "sentinel.conf"
    conf.write_text(f"port {watcher}\nbind 127.0.0.1\ndir {directory}\n"
                    f"sentinel monitor {SERVICE} 127.0.0.1 {primary} 1\n")
    harness.launch("redis-sentinel", [redis_server(), str(conf), "--sentinel"], watcher)
    _wait(lambda: "master_link_status:up" in _cli(replica, "INFO", "replication"), "the replica to sync")
    _wait(lambda: _cli(watcher, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE).split() == ["127.0.0.1", str(primary)],
          "the sentinel to name the primary")
    return f"redis+sentinel://127.0.0.1:{watcher}/{SERVICE}/0"


def cluster(harness: Harness) -> str:
    """Three primaries sharing the slots, without replicas (what the gateway does differently on a cluster is in
    the client and the keys, not in what the primaries copy to their replicas)."""
    ports = [harness.port() for _ in range(3)]
    directory = harness.tmp / "cluster"
    directory.mkdir(exist_ok=True)
    for port in ports:
        harness.launch(f"redis-cluster-{port}", [*_server(port), "--dir", str(directory), "--cluster-enabled", "yes",
                                                 "--cluster-config-file", f"nodes-{port}.conf"], port)
    created = subprocess.run(["redis-cli", "--cluster", "create", *(f"127.0.0.1:{port}" for port in ports),
                              "--cluster-yes"], capture_output=True, timeout=60, check=False)
    if created.returncode != 0:
        raise RuntimeError(f"redis-cli --cluster create failed: {created.stdout.decode(errors='replace')[-2000:]}")
    _wait(lambda: all("cluster_state:ok" in _cli(port, "CLUSTER", "INFO") for port in ports), "the cluster to be ok")
    return "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in ports)


KINDS: dict[str, Callable[[Harness], str]] = {"redis": single, "redis-sentinel": sentinel, "redis-cluster": cluster}
"""A scenario's `store` -> what starts it."""


def _cli(port: int, *args: str) -> str:
    done = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True, timeout=5,
                          check=False)
    return done.stdout.decode(errors="replace")


def _wait(done: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)
