"""`serve --workers N`: N worker processes on one port, each accepting connections on a socket of its own.

uvicorn's supervisor binds one socket and shares it among the workers. Whichever worker wakes first accepts every
connection that is waiting, and a keep-alive client stays on the worker it landed on. A burst of clients can so
load one worker and leave the others idle (16 streams: one worker at 100% of a core, the other at 0%). Here each
worker binds its own socket with SO_REUSEPORT, and the kernel spreads new connections across them. A worker that
dies takes its socket with it, so no connection waits on a socket that nobody accepts from. Where SO_REUSEPORT does
not spread connections (outside Linux), the workers share one socket, as uvicorn's do.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Callable
from typing import cast

import uvicorn
from setproctitle import setproctitle
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess

from gateway.server.connections.drain import exit_quietly_when_stopped


class OwnSocket:
    """What the supervisor hands each worker in place of a shared socket. A worker unpickles it into a socket that
    it binds for itself, in the port's SO_REUSEPORT group; the supervisor never holds one. The first a worker
    unpickles starts it (`start_worker`); another (the metrics address's) is only bound."""

    def __init__(self, host: str, port: int, backlog: int, *, first: bool = True) -> None:
        self.host, self.port, self.backlog, self.first = host, port, backlog, first

    def __reduce__(self) -> tuple[object, tuple[str, int, int]]:
        return (start_worker if self.first else bind_reuse_port), (self.host, self.port, self.backlog)


def start_worker(host: str, port: int, backlog: int) -> socket.socket:
    """What a worker does first, as it unpickles its socket, before its server runs. It leaves the terminal's
    process group, so that only its supervisor stops it: a Ctrl-C would otherwise reach it twice (from the
    terminal, and as the supervisor's SIGTERM), which ends a drain at once. It names itself for `ps`, and makes its
    exit once drained quiet (see `exit_quietly_when_stopped`)."""
    os.setpgrp()
    setproctitle(f"agent-gateway worker {host}:{port}")
    exit_quietly_when_stopped()
    return bind_reuse_port(host, port, backlog)


def bind_reuse_port(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket that shares `port` with the other workers' sockets. A worker that cannot bind it (the
    port taken since the supervisor checked it) exits as failing to start, which stops the supervisor rather than
    have it start the worker again every half second."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        print(f"agent-gateway: a worker cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        raise SystemExit(STARTUP_FAILURE) from None
    sock.set_inheritable(True)
    return sock


def spreads_connections() -> bool:
    """Whether sockets bound with SO_REUSEPORT share a port's new connections: Linux's behaviour (3.9 on)."""
    return sys.platform.startswith("linux") and hasattr(socket, "SO_REUSEPORT")


class Supervisor(Multiprocess):
    """uvicorn's supervisor, which says when its workers serve: `ready` is called once every worker has started
    (its app loaded, its socket accepting), not when they have only been spawned."""

    def __init__(self, config: uvicorn.Config, sockets: list[socket.socket], ready: Callable[[], None]) -> None:
        super().__init__(config, sockets=sockets)
        self.ready = ready

    def init_processes(self) -> None:
        super().init_processes()
        for process in self.processes:
            if not process.wait_until_ready(self.config.timeout_worker_healthcheck + STARTUP_SECONDS,
                                            self.should_exit):
                return  # it failed to start: the supervisor's loop says so and stops
        self.ready()

    def join_all(self) -> None:
        """Wait while the workers drain; another signal meanwhile has them end their streams now."""
        self.signal_queue.clear()
        while any(process.process.is_alive() for process in self.processes):
            for process in self.processes:
                process.process.join(0.1)
            if self.signal_queue:
                self.signal_queue.clear()
                self.terminate_all()


STARTUP_SECONDS = 30.0
"""How long a worker may take to load the app and start serving."""


def run(config: uvicorn.Config, ready: Callable[[], None], metrics: tuple[str, int] | None = None) -> None:
    """Serve `config` (its `workers` processes, its app a factory import string) until a signal stops them, and
    call `ready` once they all serve; every worker serves the `metrics` address too, if there is one. The ports were
    checked free by the caller, which bound and closed them."""
    if spreads_connections():
        sockets = [cast(socket.socket, OwnSocket(config.host, config.port, config.backlog))]
        if metrics is not None:
            sockets.append(cast(socket.socket, OwnSocket(*metrics, config.backlog, first=False)))
    else:
        sockets = [config.bind_socket()]
        if metrics is not None:
            sockets.append(_shared_socket(*metrics, config.backlog))
    setproctitle(f"agent-gateway supervisor {config.host}:{config.port} ({config.workers} workers)")
    Supervisor(config, sockets, ready).run()


def _shared_socket(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket the workers share, as uvicorn's own is shared, where SO_REUSEPORT does not spread."""
    sock = socket.create_server((host, port), family=socket.AF_INET6 if ":" in host else socket.AF_INET,
                                backlog=backlog)
    sock.set_inheritable(True)
    return sock
