"""A real, throwaway redis-server for tests: no fakes, so scripts, expiry and reconnects behave as in production.

```python
with RedisServer() as server:      # 127.0.0.1, a free port, no persistence, in a temp dir
    store = RedisStore(server.url)
    server.stop()                  # an outage...
    server.start()                 # ...and back, on the same port
```
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

INSTALL_HINT = "apt-get install -y redis-server"


class RedisServerMissing(RuntimeError):
    """redis-server is not on PATH. Never a skip: the Redis tests are the only proof that sharing works."""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    def __init__(self, *, password: str | None = None, startup_timeout: float = 10.0,
                 options: tuple[str, ...] = ()) -> None:
        """`options`: more of redis-server's command-line options (`--cluster-enabled yes`)."""
        self.password = password
        self.options = options
        self.startup_timeout = startup_timeout
        self.port = 0
        self._dir: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start the server, on the port it had before if it ran already, else on a free one."""
        if self.running:
            return
        binary = shutil.which("redis-server")
        if binary is None:
            where = "CI (CI is set)" if os.environ.get("CI") else "this machine"
            raise RedisServerMissing(f"redis-server is not installed on {where}; install it: {INSTALL_HINT}")
        if self._dir is None:
            self._dir = Path(tempfile.mkdtemp(prefix="agw-redis-"))
        fixed_port = self.port != 0
        for _ in range(1 if fixed_port else 5):  # a fresh free port can be taken before redis binds it: try another
            if not fixed_port:
                self.port = _free_port()
            if self._spawn(binary):
                return
        log = (self._dir / "redis.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"redis-server did not start on 127.0.0.1:{self.port}:\n{log}")

    def _spawn(self, binary: str) -> bool:
        assert self._dir is not None
        args = [binary, "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"]
        args += ["--dir", str(self._dir), "--logfile", str(self._dir / "redis.log"), "--daemonize", "no"]
        if self.password:
            args += ["--requirepass", self.password]
        args += self.options
        self._proc = subprocess.Popen(args, cwd=self._dir, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                self._proc = None
                return False
            if self._answers_ping():
                return True
            time.sleep(0.01)
        self.stop()
        return False

    def _answers_ping(self) -> bool:
        # Without a password PING answers +PONG; with one, -NOAUTH: either way the server is up and listening.
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"*1\r\n$4\r\nPING\r\n")
                reply = sock.recv(64)
        except OSError:
            return False
        return reply.startswith((b"+PONG", b"-NOAUTH"))

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL), keeping its port and directory for `start()`."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def kill(self) -> None:
        """SIGKILL: gone at once, as in a crash, without a shutdown that lets its replicas catch up."""
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()

    def freeze(self) -> None:
        """Stop the server answering (SIGSTOP): connections stay open, commands wait, as in a long pause."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        self.stop()
        self.start()

    def close(self) -> None:
        self.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> RedisServer:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
