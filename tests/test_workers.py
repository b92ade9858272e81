"""`serve --workers N` (gateway/server/connections/workers.py): each worker accepts on its own socket of the port,
so a burst of connections is spread across the workers instead of landing on whichever woke first."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers import ROOT
from servers import free_port
from uvicorn.config import STARTUP_FAILURE

from gateway.server.connections.workers import OwnSocket, bind_reuse_port, spreads_connections, start_worker

pytestmark = pytest.mark.skipif(not spreads_connections(), reason="SO_REUSEPORT spreads connections on Linux only")


def test_each_worker_unpickles_its_own_listening_socket_on_the_shared_port() -> None:
    port = free_port()
    made, args = OwnSocket("127.0.0.1", port, 16).__reduce__()  # unpickled here it would start a worker: this one
    assert made is start_worker
    first, second = bind_reuse_port(*args), bind_reuse_port(*args)
    try:
        assert first.fileno() != second.fileno()
        assert first.getsockname() == second.getsockname() == ("127.0.0.1", port)
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            pass  # accepted into one of the two queues
    finally:
        first.close()
        second.close()


def test_a_worker_that_cannot_bind_the_port_exits_as_failing_to_start(capsys: pytest.CaptureFixture[str]) -> None:
    """So uvicorn's supervisor stops, instead of starting it again every half second."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        with pytest.raises(SystemExit) as exited:
            bind_reuse_port("127.0.0.1", port, 16)
    assert exited.value.code == STARTUP_FAILURE
    assert f"a worker cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _sockets(port: int, state: str) -> set[str]:
    """The inodes of the sockets on local `port` in TCP `state` ("01" established, "0A" listening)."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == state:
                inodes.add(fields[9])
    return inodes


def _listening(port: int) -> int:
    return len(_sockets(port, "0A"))


def _established_per_worker(workers: list[int], port: int) -> list[int]:
    """How many connections to `port` each worker holds, from /proc: its socket inodes against the TCP table."""
    inodes = _sockets(port, "01")
    counts = []
    for pid in workers:
        held = set()
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            target = os.readlink(fd) if fd.is_symlink() else ""
            if target.startswith("socket:["):
                held.add(target[8:-1])
        counts.append(len(held & inodes))
    return counts


def test_a_burst_of_keep_alive_connections_is_spread_across_the_workers(tmp_path: Path) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--workers", "2", "--port", str(port), "--upstream",
         "http://127.0.0.1:9/agui", "--upstream-dialect", "ag-ui", "--store", f"sqlite:///{tmp_path}/c.db"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    connections: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while _listening(port) < 2:  # both workers up, each with its own socket (the supervisor binds none)
            assert time.monotonic() < deadline and process.poll() is None, "serve did not start"
            time.sleep(0.1)
        workers = [pid for pid in _children(process.pid)
                   if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"agent-gateway worker")]
        connections = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(32)]
        for sock in connections:  # each accepted and answered: held by the worker that took it
            sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
        for sock in connections:
            assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        counts = _established_per_worker(workers, port)
        assert sum(counts) == 32
        assert min(counts) >= 4, f"connections per worker: {counts}"  # fewer: 3 bursts in a million
    finally:
        for sock in connections:
            sock.close()
        process.terminate()
        process.communicate(timeout=15)


def test_listening_is_said_once_every_worker_serves_and_ps_tells_workers_from_their_supervisor(tmp_path: Path
                                                                                               ) -> None:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--workers", "2", "--port", str(port), "--upstream",
         "http://127.0.0.1:9/agui", "--upstream-dialect", "ag-ui", "--store", f"sqlite:///{tmp_path}/c.db"],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE)
    try:
        assert process.stderr is not None
        lines = []
        while not any("listening on" in line for line in lines):
            line = process.stderr.readline().decode()
            assert line, f"serve stopped before it said it listens: {lines}"
            lines.append(line)
        for _ in range(6):  # said once the workers serve: none of these is refused
            with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
                sock.sendall(b"GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
                assert sock.recv(4096).startswith(b"HTTP/1.1 200")
        titles = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in _children(process.pid)]
        assert Path(f"/proc/{process.pid}/cmdline").read_bytes().startswith(b"agent-gateway supervisor")
        assert sum(title.startswith(b"agent-gateway worker") for title in titles) == 2, titles
        assert all(line.startswith("{") for line in lines), lines  # JSON logs: every line is one
    finally:
        process.terminate()
        process.communicate(timeout=15)
