"""A client command read line by line as it runs, so that a test can act once the client has had its first answer:
a subscriber, or a join, known to be attached before the run it follows is let end (`gated_upstream.py`)."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from types import TracebackType
from typing import Any


class Following:
    """`with Following(command) as client:` runs `command`, each line it prints a JSON answer; `first()` waits for
    the first, `done()` for its end. Every wait has a deadline; the process is killed when the block ends."""

    def __init__(self, command: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None) -> None:
        self.command, self.cwd, self.env = command, cwd, env
        self.answers: list[dict[str, Any]] = []
        self._answered = threading.Event()
        self._process: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> Following:
        self._process = subprocess.Popen(self.command, cwd=self.cwd, env=self.env, stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE, text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            if line.strip():
                self.answers.append(json.loads(line))
                self._answered.set()
        self._answered.set()  # it ended: nobody waits for a first answer that will not come

    def first(self, timeout: float = 60.0) -> bool:
        """Whether the client printed an answer within `timeout` seconds (False: it ended, or took too long)."""
        return self._answered.wait(timeout) and bool(self.answers)

    def done(self, timeout: float = 60.0) -> str | None:
        """Wait for the client's end: None, or the last line it wrote on stderr when it failed."""
        assert self._process is not None and self._reader is not None
        try:
            code = self._process.wait(timeout)
        except subprocess.TimeoutExpired:
            return f"{self.command[1]} did not end within {timeout:g} s"
        self._reader.join(timeout)
        said = [line for line in (self._process.stderr.read() if self._process.stderr else "").splitlines()
                if line.strip()]
        return (said[-1] if said else f"exited with {code}") if code else None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait(10)
            for stream in (self._process.stdout, self._process.stderr):
                if stream is not None:
                    stream.close()
