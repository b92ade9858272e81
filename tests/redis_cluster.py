"""A real Redis Cluster for tests: three primaries, each with a replica, all `redis-server` processes on 127.0.0.1,
joined by `redis-cli --cluster create`.

```python
with RedisCluster() as cluster:            # 3 primaries, 3 replicas; every slot covered
    store = RedisStore(cluster.url)        # redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3
    cluster.kill_primary_of(b"some-key")   # SIGKILL the primary of that key's slot...
    cluster.wait_healthy()                 # ...until its replica is promoted and every slot is served again
```
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from types import TracebackType

from redis_server import RedisServer

NODE_TIMEOUT_MS = 1000
"""How long a silent primary takes to be judged failing: short, so a killed primary fails over within seconds."""


def _cli(port: int, *args: str, timeout: float = 5) -> str:
    done = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True,
                          timeout=timeout, check=False)
    return done.stdout.decode(errors="replace").strip()


class RedisCluster:
    def __init__(self, primaries: int = 3, replicas: int = 1, startup_timeout: float = 60.0) -> None:
        options = ("--cluster-enabled", "yes", "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
                   "--cluster-config-file", "nodes.conf")
        self.nodes = [RedisServer(options=options) for _ in range(primaries * (1 + replicas))]
        self.primaries = primaries
        self.replicas = replicas
        self.startup_timeout = startup_timeout

    @property
    def url(self) -> str:
        """The first primaries as startup nodes: the client learns the rest from them."""
        return "redis+cluster://" + ",".join(f"127.0.0.1:{node.port}" for node in self.nodes[:self.primaries])

    def start(self) -> None:
        for node in self.nodes:
            node.start()
        addresses = [f"127.0.0.1:{node.port}" for node in self.nodes]
        done = subprocess.run(["redis-cli", "--cluster", "create", *addresses, "--cluster-replicas",
                               str(self.replicas), "--cluster-yes"], capture_output=True, timeout=60, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster create failed: {done.stdout.decode()[-2000:]}"
                               f"{done.stderr.decode()[-2000:]}")
        self.wait_healthy()

    def running(self) -> list[RedisServer]:
        return [node for node in self.nodes if node.running]

    def healthy(self) -> bool:
        """Every running node says the cluster is ok and knows as many primaries, each with its replicas."""
        for node in self.running():
            info = _cli(node.port, "CLUSTER", "INFO")
            if "cluster_state:ok" not in info or "cluster_slots_assigned:16384" not in info:
                return False
            if self.replicas and len(self.replicas_in_sync()) < self.expected_replicas():
                return False
        return True

    def expected_replicas(self) -> int:
        return len(self.running()) - self.primaries

    def replicas_in_sync(self) -> list[int]:
        ports = []
        for node in self.running():
            info = _cli(node.port, "INFO", "replication")
            if "role:slave" in info and "master_link_status:up" in info:
                ports.append(node.port)
        return ports

    def primary_ports(self) -> list[int]:
        return [node.port for node in self.running() if "role:master" in _cli(node.port, "INFO", "replication")]

    def primary_of(self, key: str) -> RedisServer:
        """The node serving the slot of `key` (its hash tag, if it has one)."""
        slot = _cli(self.nodes[0].port if self.nodes[0].running else self.running()[0].port, "CLUSTER",
                    "KEYSLOT", key)
        for node in self.running():
            if "role:master" not in _cli(node.port, "INFO", "replication"):
                continue
            for line in _cli(node.port, "CLUSTER", "NODES").splitlines():
                fields = line.split()
                if "myself" in fields[2]:
                    for part in fields[8:]:
                        low, _, high = part.partition("-")
                        if low.isdigit() and int(low) <= int(slot) <= int(high or low):
                            return node
        raise LookupError(f"no primary serves the slot of {key!r}")

    def kill_primary_of(self, key: str) -> RedisServer:
        """SIGKILL the primary serving `key`, as in a crash: its replica is promoted within seconds."""
        node = self.primary_of(key)
        node.kill()
        return node

    def reshard(self, slots: int) -> None:
        """Move `slots` slots from the first primary to the second, their keys with them (MOVED, ASK meanwhile)."""
        source, target = self.primary_ports()[:2]
        ids = {port: _cli(port, "CLUSTER", "MYID") for port in (source, target)}
        done = subprocess.run(["redis-cli", "--cluster", "reshard", f"127.0.0.1:{source}", "--cluster-from",
                               ids[source], "--cluster-to", ids[target], "--cluster-slots", str(slots),
                               "--cluster-yes"], capture_output=True, timeout=120, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"redis-cli --cluster reshard failed: {done.stdout.decode()[-2000:]}")
        self.wait_healthy()

    def wait_healthy(self) -> None:
        self.wait(self.healthy, "the cluster to be healthy")

    def wait(self, done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            try:
                if done():
                    return
            except (subprocess.SubprocessError, IndexError, ValueError):
                pass
            time.sleep(0.1)
        raise TimeoutError(f"timed out waiting for {what}")

    def close(self) -> None:
        for node in self.nodes:
            node.close()

    def __enter__(self) -> RedisCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
