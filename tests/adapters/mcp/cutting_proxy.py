"""A TCP proxy on 127.0.0.1 in front of the gateway's `/mcp` that cuts the first connection whose answer has carried
what a test names (a network that drops a long answer), and may hold each later connection before it reaches the
gateway (a client that comes back late): for the SDK clients, which reconnect by themselves."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress


class CuttingProxy:
    """Cuts the first answer once it has carried `after_progress` progress notifications (before the piece that
    completes them), or once a piece holding `after` has gone through; holds every connection after the cut for
    `hold` seconds."""

    def __init__(self, target: str, after_progress: int | None = 2, after: bytes | None = None,
                 hold: float = 0.0) -> None:
        host, port = target.removeprefix("http://").split(":")
        self.target = (host, int(port))
        self.after_progress = after_progress
        self.after = after
        self.hold = hold
        self.cuts = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self._closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closing:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._connect, args=(client, self.hold if self.cuts else 0.0),
                             daemon=True).start()

    def _connect(self, client: socket.socket, hold: float) -> None:
        time.sleep(hold)
        upstream = socket.create_connection(self.target, timeout=30)
        threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
        threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, answers: bool) -> None:
        seen = 0
        try:
            while data := source.recv(65536):
                if answers and self.cuts == 0 and self.after_progress is not None:
                    seen += data.count(b"notifications/progress")
                    if seen >= self.after_progress:
                        self.cuts += 1
                        break
                sink.sendall(data)
                if answers and self.cuts == 0 and self.after is not None and self.after in data:
                    self.cuts += 1
                    break
        except OSError:
            pass
        for end in (source, sink):
            with suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def close(self) -> None:
        self._closing = True
        self.listener.close()


@contextmanager
def cut_once(url: str, after_progress: int | None = 2, after: bytes | None = None,
             hold: float = 0.0) -> Iterator[CuttingProxy]:
    """A proxy to the gateway whose `/mcp` is `url`, for the block."""
    proxy = CuttingProxy(url.removesuffix("/mcp"), after_progress, after, hold)
    try:
        yield proxy
    finally:
        proxy.close()
