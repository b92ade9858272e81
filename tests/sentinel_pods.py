"""The pods of deploy/kubernetes/sentinel/ run here: each a Redis and a sentinel started by the manifest's own
commands and bootstrap script, as real `redis-server` processes on 127.0.0.1. The pods' names become `localhost` and
a port of their own, through the variables the script reads: a name still, as the pods go by.

```python
with SentinelPods() as pods:       # nothing started
    pods.boot()                    # pod -0, then -1, then -2 (OrderedReady), each once it answers
    pods[0].kill()                 # the pod is lost: its Redis and its sentinel
    pods[0].start_redis()          # its Redis container starts again, bootstrap first
    pods[1].pre_stop()             # its Redis container's preStop
```
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml
from helpers import ROOT
from redis_server import RedisServerMissing

MANIFEST = ROOT / "deploy" / "kubernetes" / "sentinel" / "redis-sentinel.yaml"
DOCUMENTS: list[dict[str, Any]] = [doc for doc in yaml.safe_load_all(MANIFEST.read_text()) if doc]
TIMINGS = {"DOWN_AFTER_MS": "1000", "FAILOVER_TIMEOUT_MS": "5000"}
"""Quicker than the manifest's: a silent primary is judged down in a second."""
HOST = "localhost"
"""Every pod's name here: the nodes and sentinels tell each other and the gateway this, not an IP."""
WAIT = 30.0
"""The bound on every wait for the pods (a failover takes a few seconds)."""


def find(kind: str, name: str) -> dict[str, Any]:
    return next(doc for doc in DOCUMENTS if doc["kind"] == kind and doc["metadata"]["name"] == name)


STATEFULSET = find("StatefulSet", "agent-gateway-redis-sentinel")
SCRIPT: str = find("ConfigMap", "agent-gateway-redis-sentinel")["data"]["bootstrap.sh"]


def container(name: str) -> dict[str, Any]:
    return next(c for c in STATEFULSET["spec"]["template"]["spec"]["containers"] if c["name"] == name)


def environment(name: str) -> dict[str, str]:
    """A container's variables that have a value (not those taken from the pod's fields)."""
    return {e["name"]: e["value"] for e in container(name)["env"] if "value" in e}


def free_ports(count: int) -> list[int]:
    """`count` ports free on 127.0.0.1, all different (each held until all are found)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def cli(port: int, *args: str) -> str:
    done = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", str(port), *args], capture_output=True, timeout=5,
                          check=False)
    return done.stdout.decode(errors="replace").strip()


def info(reply: str) -> dict[str, str]:
    """`INFO`'s `field:value` lines."""
    return dict(line.split(":", 1) for line in reply.splitlines() if ":" in line)


def pairs(reply: str) -> dict[str, str]:
    """`SENTINEL MASTER`'s names and values, a line each."""
    lines = reply.splitlines()
    return dict(zip(lines[::2], lines[1::2], strict=False))


def until(done: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.05)


class Pod:
    """One pod: its Redis and its sentinel, each a process group of its own (the script, then what it execs)."""

    def __init__(self, index: int, ports: list[int], directory: Path, script: Path) -> None:
        self.index = index
        self.redis_port, self.sentinel_port = ports
        self.dir = directory
        self.script = script
        self.settings: dict[str, str] = {}
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start_redis(self) -> subprocess.Popen[bytes]:
        return self._start("redis")

    def start_sentinel(self) -> subprocess.Popen[bytes]:
        return self._start("sentinel")

    def _start(self, name: str) -> subprocess.Popen[bytes]:
        """The container's command, its Redis bound to the loopback (IPv6's too where there is one, for a
        `localhost` resolved to ::1)."""
        with (self.dir / f"{name}.log").open("ab") as log:
            proc = subprocess.Popen([*self._local(container(name)["command"]), "--bind", "127.0.0.1", "-::1"],
                                    env=self._environment(name), cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.procs[name] = proc
        return proc

    def pre_stop(self) -> None:
        """The Redis container's preStop, run to its end, as Kubernetes runs it before stopping the container."""
        command = self._local(container("redis")["lifecycle"]["preStop"]["exec"]["command"])
        with (self.dir / "pre-stop.log").open("ab") as log:
            subprocess.run(command, env=self._environment("redis"), cwd=self.dir, stdin=subprocess.DEVNULL,
                           stdout=log, stderr=subprocess.STDOUT, timeout=WAIT, check=True)

    def _local(self, command: list[str]) -> list[str]:
        """A command of the manifest's, with the script where this pod has it."""
        assert command[1].endswith("/bootstrap.sh"), command
        return [command[0], str(self.script), *command[2:]]

    def _environment(self, name: str) -> dict[str, str]:
        return {"PATH": os.environ["PATH"], **environment(name), **TIMINGS, **self.settings, "SELF_HOST": HOST,
                "REDIS_PORT": str(self.redis_port), "SENTINEL_PORT": str(self.sentinel_port),
                "DATA_DIR": str(self.dir)}

    def answers(self, name: str) -> bool:
        port = self.redis_port if name == "redis" else self.sentinel_port
        return cli(port, "PING") == "PONG"

    def replication(self) -> dict[str, str]:
        return info(cli(self.redis_port, "INFO", "replication"))

    def kill(self, *names: str) -> None:
        """SIGKILL, as a node lost: the pod's Redis and sentinel, or those named."""
        for name in names or tuple(self.procs):
            proc = self.procs.pop(name, None)
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            if proc is not None:
                proc.wait(timeout=5)

    def logs(self) -> str:
        return "".join(f"--- pod {self.index} {log.name}\n{log.read_text(errors='replace')[-3000:]}"
                       for log in sorted(self.dir.glob("*.log")))


class SentinelPods:
    """The StatefulSet's pods, its replicas of them, with the manifest's service name, quorum and script."""

    def __init__(self) -> None:
        if shutil.which("redis-server") is None or shutil.which("redis-cli") is None:
            raise RedisServerMissing("redis-server and redis-cli are needed: apt-get install -y redis-server")
        self.service = environment("redis")["MASTER_NAME"]
        self.dir = Path(tempfile.mkdtemp(prefix="agw-k8s-sentinel-"))
        (self.dir / "bootstrap.sh").write_text(SCRIPT)
        self.pods: list[Pod] = []
        replicas = STATEFULSET["spec"]["replicas"]
        ports = free_ports(2 * replicas)
        for index in range(replicas):
            (self.dir / str(index)).mkdir()
            self.pods.append(Pod(index, ports[2 * index:2 * index + 2], self.dir / str(index),
                                 self.dir / "bootstrap.sh"))
        local = {"SENTINELS": " ".join(f"{HOST}:{pod.sentinel_port}" for pod in self.pods),
                 "FIRST_PRIMARY": f"{HOST}:{self.pods[0].redis_port}"}
        for pod in self.pods:
            pod.settings.update(local)

    def __getitem__(self, index: int) -> Pod:
        return self.pods[index]

    def boot(self) -> None:
        """Pod after pod, each once the one before answers, as OrderedReady starts them; until the sentinels know
        each other and every replica."""
        for pod in self.pods:
            pod.start_redis()
            pod.start_sentinel()
            self.wait(lambda pod=pod: pod.answers("redis") and pod.answers("sentinel"), f"pod {pod.index} to start")
        self.wait(lambda: all(self.sees_all(pod) for pod in self.pods), "the sentinels to know every node")

    def named_primary(self, pod: Pod) -> int | None:
        """The primary's port as the pod's sentinel names it."""
        answer = cli(pod.sentinel_port, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", self.service).split()
        return int(answer[1]) if len(answer) == 2 else None

    def replication_of(self, pod: Pod) -> int | None:
        """The port of the primary the pod's Redis follows; None when it is a primary."""
        replication = pod.replication()
        return int(replication["master_port"]) if replication.get("role") == "slave" else None

    def sees_all(self, pod: Pod, pods: int | None = None) -> bool:
        """The pod's sentinel knows every other node as a replica and every other sentinel."""
        others = (pods or len(self.pods)) - 1
        master = pairs(cli(pod.sentinel_port, "SENTINEL", "MASTER", self.service))
        return master.get("num-slaves") == str(others) and master.get("num-other-sentinels") == str(others)

    def in_sync(self, primary: Pod, key: str) -> bool:
        """Every other running node follows `primary`, with `key`."""
        return all(pod.replication().get("master_link_status") == "up" and cli(pod.redis_port, "EXISTS", key) == "1"
                   for pod in self.pods if pod is not primary and "redis" in pod.procs)

    def agreed_primary(self, key: str) -> int | None:
        """The port of the primary every running sentinel names, once every other running node follows it with
        `key`; None until then. Read afresh each time: a sentinel that had not yet heard of one failover may start
        another, and the higher epoch's primary is the one that stands."""
        named = {self.named_primary(pod) for pod in self.pods if "sentinel" in pod.procs}
        if len(named) != 1 or None in named:
            return None
        [port] = named
        primary = next((pod for pod in self.pods if pod.redis_port == port), None)
        if primary is None or any(self.replication_of(pod) != port for pod in self.pods
                                  if pod is not primary and "redis" in pod.procs):
            return None
        return port if self.in_sync(primary, key) else None

    def url(self, store: str) -> str:
        """A store URL of the manifest's with each pod's name turned into its sentinel's local address."""
        for pod in self.pods:
            store = re.sub(rf"[\w.-]+-{pod.index}\.[\w.-]+:\d+", f"{HOST}:{pod.sentinel_port}", store)
        return store

    def wait(self, done: Callable[[], bool], what: str) -> None:
        try:
            until(done, what)
        except RuntimeError as error:
            raise RuntimeError(f"{error}\n{''.join(pod.logs() for pod in self.pods)}") from None

    def close(self) -> None:
        for pod in self.pods:
            pod.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> SentinelPods:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
