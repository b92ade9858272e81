"""The commands of `agent-gateway`, one module each, and what they share: the listening socket and the version
line. `gateway.cli` reads the arguments and calls a command's `run` with its parser (for its one-line errors) and
what was parsed.

```
serve.py       serve, and serve --check (what a start would find)
demo.py        demo (the gateway in front of the built-in agent) and agent (the built-in agent alone)
check.py       check URL (the standard conversations, judged)
translate.py   translate (a recorded stream into another dialect)
recordings.py  replay, check --recording, translate of a recording
```
"""

from __future__ import annotations

import errno
import logging
import socket

log = logging.getLogger("agent_gateway.serve")


def version() -> str:
    """The version, and whether the per-event modules run compiled (and from a build older than their source)."""
    from gateway import __version__, compiled

    return f"agent-gateway {__version__}, codecs {compiled.summary()}"


def bind(host: str, port: int, setting: str = "--port") -> socket.socket | None:
    """The listening socket, bound before anything says "listening"; a port in use is one line naming the
    `setting` to change, not a traceback."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = f"is in use: try {setting}" if exc.errno == errno.EADDRINUSE else f"cannot be used: {exc.strerror}"
        log.error("%s:%d %s", host, port, reason)
        return None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
