"""`serve --workers N`: N worker processes on one port, each accepting connections on a socket of its own.

uvicorn's supervisor binds one socket and shares it among the workers. Whichever worker wakes first accepts every
connection that is waiting, and a keep-alive client stays on the worker it landed on. A burst of clients can so
load one worker and leave the others idle (16 streams: one worker at 100% of a core, the other at 0%). Here each
worker binds its own socket with SO_REUSEPORT, and the kernel spreads new connections across them. A worker that
dies takes its socket with it, so no connection waits on a socket that nobody accepts from. Where SO_REUSEPORT does
not spread connections (outside Linux), the workers share one socket, as uvicorn's do.
"""

from __future__ import annotations

import socket
import sys
from typing import cast

import uvicorn
from uvicorn.config import STARTUP_FAILURE
from uvicorn.supervisors import Multiprocess


class OwnSocket:
    """What the supervisor hands each worker in place of a shared socket. A worker unpickles it into a socket that
    it binds for itself, in the port's SO_REUSEPORT group; the supervisor never holds one."""

    def __init__(self, host: str, port: int, backlog: int) -> None:
        self.host, self.port, self.backlog = host, port, backlog

    def __reduce__(self) -> tuple[object, tuple[str, int, int]]:
        return bind_reuse_port, (self.host, self.port, self.backlog)


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


def run(config: uvicorn.Config) -> None:
    """Serve `config` (its `workers` processes, its app a factory import string) until a signal stops them. The
    port was checked free by the caller, which bound and closed it."""
    if spreads_connections():
        sockets = [cast(socket.socket, OwnSocket(config.host, config.port, config.backlog))]
    else:
        sockets = [config.bind_socket()]
    Multiprocess(config, sockets=sockets).run()
