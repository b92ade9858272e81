"""A real Sentinel-managed Redis for tests: a primary, a replica and three sentinels, all `redis-server` processes on
127.0.0.1 (a sentinel is `redis-server <conf> --sentinel`).

```python
with RedisSentinels() as redis:           # primary, replica, three sentinels; the replica in sync
    store = RedisStore(redis.url)         # redis+sentinel://127.0.0.1:p1,...,127.0.0.1:p3/mymaster/0
    redis.failover()                      # SENTINEL FAILOVER: the replica is promoted; returns once all agree
    redis.primary.stop()                  # or kill the primary: the sentinels promote the replica in seconds
```
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from redis_server import RedisServer, RedisServerMissing, _free_port

SERVICE = "mymaster"
DOWN_AFTER_MS = 1000
"""How long a silent primary takes to be judged down: short, so a killed primary fails over within seconds."""
FAILOVER_TIMEOUT_MS = 5000
"""How long a failover may take before the sentinels give it up (and may try again)."""
QUICK_TIMERS = ("tilt-period", "1000", "info-period", "1000", "publish-period", "500")
"""`SENTINEL DEBUG` timers: a sentinel whose timer ran late (a loaded machine) stops acting for the tilt period, 30 s
by default, which stalls a failover past any test's budget; and it learns replicas from the primary's INFO, and
other sentinels' views from their hellos, every 10 s and 2 s by default."""


def _cli(port: int, *args: str) -> str:
    done = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True, timeout=5,
                          check=False)
    return done.stdout.decode(errors="replace").strip()


def sentinel_conf(port: int, primary: int) -> str:
    """A sentinel of the primary at 127.0.0.1:`primary`, quick to judge it down."""
    return (f"port {port}\nsentinel monitor {SERVICE} 127.0.0.1 {primary} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}\n"
            f"sentinel failover-timeout {SERVICE} {FAILOVER_TIMEOUT_MS}\nsentinel parallel-syncs {SERVICE} 1")


def _status(port: int) -> str:
    """A sentinel's tilt and its view of the service, from its INFO."""
    return "; ".join(line for line in _cli(port, "INFO", "sentinel").splitlines()
                     if line.startswith(("sentinel_tilt", "master0")))


def _quietly(done: Callable[[], bool]) -> bool:
    try:
        return done()
    except (IndexError, ValueError, subprocess.SubprocessError):
        return False


class RedisSentinels:
    def __init__(self, sentinels: int = 3, startup_timeout: float = 30.0,
                 conf: Callable[[int, int], str] | None = None) -> None:
        """`conf(port, primary's port)`: a sentinel's configuration file (by default the one `sentinel_conf` writes;
        a test of another's passes it); it listens on 127.0.0.1 and keeps its files in a temp dir either way."""
        self.conf = conf or sentinel_conf
        self.primary = RedisServer()
        self.replica = RedisServer()
        self.count = sentinels
        self.startup_timeout = startup_timeout
        self.ports: list[int] = []
        self._dir: Path | None = None
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def url(self) -> str:
        hosts = ",".join(f"127.0.0.1:{port}" for port in self.ports)
        return f"redis+sentinel://{hosts}/{SERVICE}/0"

    def start(self) -> None:
        if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
            raise RedisServerMissing("redis-server and redis-cli are needed: apt-get install -y redis-server")
        self.primary.start()
        self.replica.start()
        _cli(self.replica.port, "REPLICAOF", "127.0.0.1", str(self.primary.port))
        self._dir = Path(tempfile.mkdtemp(prefix="agw-sentinel-"))
        for n in range(self.count):
            port = _free_port()
            conf = self._dir / f"sentinel-{n}.conf"
            conf.write_text(f"{self.conf(port, self.primary.port)}\nbind 127.0.0.1\ndir {self._dir}\n")
            self._procs.append(subprocess.Popen(
                ["redis-server", str(conf), "--sentinel", "--logfile", str(self._dir / f"sentinel-{n}.log")],
                cwd=self._dir, stdin=subprocess.DEVNULL))
            self.ports.append(port)
        self.wait(lambda: all(_cli(port, "SENTINEL", "DEBUG", *QUICK_TIMERS) == "OK" for port in self.ports),
                  "the sentinels to start")
        self.wait(lambda: self.in_sync() and all(self._sees_all(port) for port in self.ports),
                  "the sentinels to find each other and the replica")

    def _sees_all(self, port: int) -> bool:
        """The sentinel knows the replica and every other sentinel."""
        fields = _cli(port, "SENTINEL", "MASTER", SERVICE).splitlines()
        info = dict(zip(fields[::2], fields[1::2], strict=False))
        return info.get("num-slaves") == "1" and info.get("num-other-sentinels") == str(self.count - 1)

    def primary_port(self) -> int:
        """The primary's port as the sentinels name it."""
        return int(_cli(self.ports[0], "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE).split()[1])

    def in_sync(self) -> bool:
        """The replica is connected to the primary and has everything it wrote."""
        info = _cli(self.primary_port(), "INFO", "replication")
        offset = next((line.split(":")[1] for line in info.splitlines() if line.startswith("master_repl_offset:")),
                      None)
        return offset is not None and "state=online" in info and f"offset={offset}," in info

    def failover(self, *, settled: bool = True) -> int:
        """Promote the replica (`SENTINEL FAILOVER`) once it has everything; return the old primary's port once
        every sentinel names the new one and, when `settled`, once the old primary follows it (the sentinels take
        seconds to reconfigure it: until then it still takes writes)."""
        self.wait(self.in_sync, "the replica to catch up")
        old = self.primary_port()
        # A sentinel learns of the replica from the primary's INFO, every few seconds: until it has, the failover is
        # refused (NOGOODSLAVE) and nothing happens. Asked again until one starts; and again if one started but was
        # given up (a replica too slow to be promoted within the failover timeout, on a loaded machine).
        def named(port: int) -> bool:
            found = _cli(port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE).split()
            return len(found) == 2 and found[1] != str(old)

        # On a loaded machine the sentinels may fail over twice (a second epoch, to the other replica, as the first
        # ends) and take tens of seconds to agree again: they are given twice the startup timeout.
        deadline = time.monotonic() + 2 * self.startup_timeout
        while True:  # never asked again once a sentinel names another primary: that would fail back over
            self.wait(lambda: any(named(port) for port in self.ports)
                      or _cli(self.ports[0], "SENTINEL", "FAILOVER", SERVICE) == "OK", "a failover to start")
            try:
                self.wait(lambda: all(named(port) for port in self.ports), "every sentinel to name the new primary",
                          within=2 * FAILOVER_TIMEOUT_MS / 1000)
                break
            except RuntimeError as timeout:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{timeout}; what the sentinels logged:\n{self.logs()}") from None
        if settled:
            self.settle(old)
        return old

    def settle(self, old: int) -> None:
        """Until the old primary follows the new one."""
        self.wait(lambda: "role:slave" in _cli(old, "INFO", "replication"), "the old primary to follow the new")

    def logs(self, lines: int = 30) -> str:
        """What each sentinel says of the service (tilt included) and the last `lines` of its log: what a failover
        that never settled did."""
        if self._dir is None:
            return ""
        return "\n".join(
            f"--- sentinel {n}: {_status(port)}\n"
            + "\n".join((self._dir / f"sentinel-{n}.log").read_text(errors="replace").splitlines()[-lines:])
            for n, port in enumerate(self.ports))

    def wait(self, done: Callable[[], bool], what: str, within: float | None = None) -> None:
        """Until `done()` (one that raises, as a sentinel still starting makes it, is not done), within `within`
        seconds (by default the startup timeout)."""
        deadline = time.monotonic() + (self.startup_timeout if within is None else within)
        while not _quietly(done):
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out waiting for {what}")
            time.sleep(0.05)

    def close(self) -> None:
        for proc in self._procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        self._procs = []
        self.primary.close()
        self.replica.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> RedisSentinels:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
