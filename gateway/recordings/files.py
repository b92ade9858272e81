"""Recordings on disk: a route's exchanges appended to its files from a thread of their own, bounded in the size
of a file, the number of files and the bytes waiting to be written.

```
run ends ─▶ RecordingFiles.add(line) ─▶ queue (at most MAX_QUEUED_BYTES) ─▶ writer thread ─▶ <dir>/<file>.jsonl
```

`per: conversation` names a file after the route and a hash of the upstream's conversation id (never the client's
words); `per: log` appends to `<route>.jsonl` and, past `max_file_bytes`, moves it aside as
`<route>.<time>.jsonl`. Past `max_files`, the oldest file of the route goes. Several workers may write to one
folder: each append holds a lock on the route's lock file.

A recording holds what people said: its files are made readable by their owner only (0600), and so is the folder
when the gateway makes it (0700). A folder that is there already is left as its owner made it.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import queue
import re
import tempfile
import threading
import time
from pathlib import Path

from gateway.recordings.options import RecordOptions

log = logging.getLogger("agent_gateway.recordings")

MAX_QUEUED_BYTES = 64 * 1024 * 1024
"""Bytes of exchanges waiting for the disk; past it an exchange is not recorded (and the log says so)."""
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def folder_problem(folder: str) -> str | None:
    """Why recordings could not be written under `folder`, or None: found by making and removing a scratch folder
    where theirs is or would be made, since permissions alone do not say (root passes them in /proc)."""
    wanted = Path(folder).absolute()
    existing = wanted
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".agent-gateway-", dir=existing))
    except OSError as exc:
        return f"cannot make a folder in {existing} ({exc.strerror})"
    return None


class RecordingFiles:
    """One route's recordings."""

    def __init__(self, options: RecordOptions, route: str) -> None:
        self.options = options
        self.dir = Path(options.dir)
        self.prefix = _SAFE.sub("_", route) or "route"
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # an OSError here is the operator's to see at startup
        self._queue: queue.Queue[tuple[bytes, str] | None] = queue.Queue()
        self._queued = 0
        self._lock = threading.Lock()
        self._full: set[str] = set()
        """Conversation files past their size, said once each."""
        self._thread = threading.Thread(target=self._write_all, name=f"recordings-{self.prefix}", daemon=True)
        self._thread.start()

    def add(self, line: bytes, conversation: str | None) -> bool:
        """Queue one exchange's line; False (and a warning) when it cannot be recorded."""
        if len(line) > self.options.max_file_bytes:
            log.warning("route %s: an exchange of %d bytes is larger than record.max_file_bytes: not recorded",
                        self.prefix, len(line))
            return False
        with self._lock:
            if self._queued + len(line) > MAX_QUEUED_BYTES:
                log.warning("route %s: recordings are written slower than they come: an exchange was not recorded",
                            self.prefix)
                return False
            self._queued += len(line)
        self._queue.put((line, self.file_for(conversation)))
        return True

    def file_for(self, conversation: str | None) -> str:
        if self.options.per == "log" or conversation is None:
            return f"{self.prefix}.jsonl"
        digest = hashlib.sha256(conversation.encode()).hexdigest()[:16]
        return f"{self.prefix}-{digest}.jsonl"

    def close(self, timeout: float = 5.0) -> None:
        """Write what is queued (for at most `timeout` seconds) and stop."""
        self._queue.put(None)
        self._thread.join(timeout)

    def flush(self, timeout: float = 5.0) -> None:
        """Wait until what is queued is written (tests, and `close`)."""
        deadline = time.monotonic() + timeout
        while self._queued and time.monotonic() < deadline:
            time.sleep(0.01)

    def _write_all(self) -> None:
        while (item := self._queue.get()) is not None:
            line, name = item
            try:
                self._write(line, name)
            except OSError as exc:
                log.warning("route %s: recording to %s failed: %s", self.prefix, self.dir / name, exc)
            finally:
                with self._lock:
                    self._queued -= len(line)

    def _write(self, line: bytes, name: str) -> None:
        path = self.dir / name
        with open(self.dir / f".{self.prefix}.lock", "ab", opener=_owner_only) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            size = path.stat().st_size if path.exists() else None
            if size is not None and size + len(line) > self.options.max_file_bytes:
                if self.options.per == "conversation":
                    if name not in self._full:
                        self._full.add(name)
                        log.warning("route %s: %s reached record.max_file_bytes: the conversation's later "
                                    "exchanges are not recorded", self.prefix, path)
                    return
                os.replace(path, self.dir / f"{self.prefix}.{time.time_ns()}.jsonl")
                size = None
            if size is None:
                self._make_room()
            with open(path, "ab", opener=_owner_only) as handle:
                handle.write(line)

    def _make_room(self) -> None:
        """Remove the route's oldest files until a new one keeps it within `max_files`."""
        mine = [p for p in self.dir.iterdir() if p.name.endswith(".jsonl") and _belongs(p.name, self.prefix)]
        extra = len(mine) + 1 - self.options.max_files
        if extra <= 0:
            return
        for path in sorted(mine, key=lambda p: p.stat().st_mtime_ns)[:extra]:
            path.unlink(missing_ok=True)


def _owner_only(path: str, flags: int) -> int:
    """Opens a file as `open` would, made readable and writable by its owner only when it is made (never widened
    for a moment, whatever the umask)."""
    return os.open(path, flags, 0o600)


def _belongs(name: str, prefix: str) -> bool:
    """Whether a file is one of the route's: `<prefix>.jsonl`, `<prefix>.<n>.jsonl` or `<prefix>-<hash>.jsonl`."""
    rest = name.removesuffix(".jsonl")
    if rest == prefix:
        return True
    if rest.startswith(prefix + "."):
        return rest[len(prefix) + 1:].isdigit()
    return rest.startswith(prefix + "-") and len(rest) == len(prefix) + 17
