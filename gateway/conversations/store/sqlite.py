"""The embedded default: one SQLite file, which survives a restart, on one host."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, Unpack
from urllib.parse import unquote

from gateway.conversations.store.base import Bounds, ConversationStore, Listed, StoreError
from gateway.conversations.store.counters import Counters

_T = TypeVar("_T")


class SQLiteStore(ConversationStore):
    """One SQLite file, WAL mode, wall-clock expiry so a restart keeps both the data and its deadlines.

    The conversations are people's words: the file (and so its -wal and -shm) is made readable by its owner only
    (0600), and its folder, when the store makes it, 0700. A file or folder that is there already keeps its mode.

    One connection, used only from one dedicated thread: sqlite3 blocks, and a single writer needs no locking of
    its own. The row count is tracked in memory so trimming costs an index lookup per put, not a scan; it is
    recounted every `_RECOUNT_EVERY` puts in case another process writes the same file. Its counters
    (`SQLiteCounters`) are a table of the same file, so every process using the file shares them.
    """

    _RECOUNT_EVERY = 1000

    def __init__(self, path: str | Path, **bounds: Unpack[Bounds]) -> None:
        super().__init__(**bounds)
        self.path = str(path)
        self._puts = 0
        self._closed = False
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                # Made 0600 before SQLite opens it: its -wal and -shm files take the database file's mode.
                os.close(os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600))
            self._conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        try:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")  # with WAL: durable across crashes, not power loss
            self._conn.execute("PRAGMA busy_timeout=5000")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS conversations"
                "(key TEXT PRIMARY KEY, value BLOB NOT NULL, expires_at REAL NOT NULL, updated_at REAL NOT NULL)"
            )
            columns = {row[1] for row in self._conn.execute("PRAGMA table_info(conversations)")}
            if "grp" not in columns:  # a file from before groups
                self._conn.execute("ALTER TABLE conversations ADD COLUMN grp TEXT NOT NULL DEFAULT ''")
            self._conn.execute("CREATE INDEX IF NOT EXISTS conversations_updated_at ON conversations(updated_at)")
            self._conn.execute("CREATE INDEX IF NOT EXISTS conversations_grp ON conversations(grp, updated_at)")
            self._conn.execute("CREATE INDEX IF NOT EXISTS conversations_expires_at ON conversations(expires_at)")
            self._conn.execute("CREATE TABLE IF NOT EXISTS counters"
                               "(key TEXT PRIMARY KEY, value INTEGER NOT NULL, expires_at REAL NOT NULL)")
            self._conn.execute("CREATE INDEX IF NOT EXISTS counters_expires_at ON counters(expires_at)")
            self._rows = self._count()
        except sqlite3.Error as exc:
            self._conn.close()
            raise StoreError(f"cannot open SQLite store at {self.path}: {exc}") from exc
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="agw-sqlite")
        self._counting = SQLiteCounters(self)

    def _count(self) -> int:
        row = self._conn.execute("SELECT count(*) FROM conversations").fetchone()
        return int(row[0])

    async def _run(self, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise StoreError(f"SQLite store at {self.path} is closed")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn)
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store at {self.path} failed: {exc}") from exc
        except RuntimeError as exc:  # the executor was shut down by a concurrent close()
            raise StoreError(f"SQLite store at {self.path} is closed") from exc

    async def get(self, key: str) -> bytes | None:
        def get() -> bytes | None:
            row = self._conn.execute(
                "SELECT value FROM conversations WHERE key = ? AND expires_at > ?", (key, time.time())
            ).fetchone()
            return None if row is None else bytes(row[0])

        return await self._run(get)

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        self._check_size(value)

        def put() -> None:
            now = time.time()
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                rows = self._rows
                if conn.execute("SELECT 1 FROM conversations WHERE key = ?", (key,)).fetchone() is None:
                    rows += 1
                conn.execute(
                    "INSERT INTO conversations (key, value, expires_at, updated_at, grp) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (key) DO UPDATE SET "
                    "value = excluded.value, expires_at = excluded.expires_at, updated_at = excluded.updated_at",
                    (key, value, now + self.ttl, now, group),
                )
                # A group holds no more rows than the store: counting it, a scan of the group's index, is needed
                # only once the store holds more than a group may.
                in_group = conn.execute("SELECT count(*) FROM conversations WHERE grp = ?", (group,)).fetchone()[0] \
                    if rows > self.max_per_group else 0
                if in_group > self.max_per_group:
                    rows -= conn.execute(
                        "DELETE FROM conversations WHERE key IN "
                        "(SELECT key FROM conversations WHERE grp = ? ORDER BY updated_at LIMIT ?)",
                        (group, in_group - self.max_per_group),
                    ).rowcount
                # Both are index range scans that touch only the rows they delete.
                rows -= conn.execute("DELETE FROM conversations WHERE expires_at <= ?", (now,)).rowcount
                if (self._puts + 1) % self._RECOUNT_EVERY == 0:
                    rows = self._count()
                if rows > self.max_entries:
                    rows -= conn.execute(
                        "DELETE FROM conversations WHERE key IN "
                        "(SELECT key FROM conversations ORDER BY updated_at LIMIT ?)",
                        (rows - self.max_entries,),
                    ).rowcount
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            self._rows = rows
            self._puts += 1

        await self._run(put)

    async def delete(self, key: str) -> None:
        def delete() -> None:
            self._rows -= self._conn.execute("DELETE FROM conversations WHERE key = ?", (key,)).rowcount

        await self._run(delete)

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        start = Listed.after(after)

        def newest() -> list[Listed]:
            query = "SELECT key, value, updated_at FROM conversations WHERE grp = ? AND expires_at > ?"
            args: list[Any] = [group, time.time()]
            if start is not None:
                query += " AND (updated_at < ? OR (updated_at = ? AND key < ?))"
                args += [start[0], start[0], start[1]]
            rows = self._conn.execute(query + " ORDER BY updated_at DESC, key DESC LIMIT ?", (*args, limit))
            return [Listed.at(written, key, bytes(value)) for key, value, written in rows]

        return await self._run(newest)

    def counters(self) -> Counters:
        return self._counting

    async def ping(self) -> bool:
        try:
            await self._run(lambda: self._conn.execute("SELECT 1").fetchone())
        except StoreError:
            return False
        return True

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        # Queued behind any operation still running, so none of them sees a closed connection.
        await asyncio.get_running_loop().run_in_executor(self._executor, self._conn.close)
        self._executor.shutdown(wait=False)


class SQLiteCounters(Counters):
    """A store's counters, in its file's `counters` table, on its thread. An add is one write transaction, so the
    processes sharing the file never lose one another's; it first deletes the expired rows, an index range scan
    that touches only those."""

    def __init__(self, store: SQLiteStore) -> None:
        self._store = store

    async def add(self, key: str, n: int, ttl: float) -> int:
        def add() -> int:
            now, conn = time.time(), self._store._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM counters WHERE expires_at <= ?", (now,))
                conn.execute(
                    "INSERT INTO counters (key, value, expires_at) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET "
                    "value = value + excluded.value, expires_at = excluded.expires_at",
                    (key, n, now + ttl),
                )
                # Read in the same transaction, not with RETURNING: it needs SQLite 3.35, newer than some hosts have.
                count = int(conn.execute("SELECT value FROM counters WHERE key = ?", (key,)).fetchone()[0])
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return count

        return await self._store._run(add)

    async def get(self, key: str) -> int:
        def get() -> int:
            row = self._store._conn.execute(
                "SELECT value FROM counters WHERE key = ? AND expires_at > ?", (key, time.time())
            ).fetchone()
            return 0 if row is None else int(row[0])

        return await self._store._run(get)


def sqlite_path(url: str) -> str:
    """The file a `sqlite://` URL names (raises ValueError for one that names none the way SQLAlchemy does)."""
    rest = url[len("sqlite://") :]
    if rest and not rest.startswith("/"):
        raise ValueError(f"a SQLite store URL is sqlite:///<relative path> or sqlite:////<absolute path>, got "
                         f"{url!r}")
    return unquote(rest[1:].partition("?")[0]) or ":memory:"


def sqlite_problem(path: str) -> str | None:
    """Why a SQLite store at `path` could not be opened, found without creating or changing anything; None if it
    could be."""
    if path == ":memory:":
        return None
    file = Path(path).absolute()
    if file.exists():
        try:
            with contextlib.closing(sqlite3.connect(f"{file.as_uri()}?mode=ro", uri=True)) as conn:
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.Error as exc:
            return f"{file} cannot be read as SQLite: {exc}"
        return None if os.access(file, os.W_OK) else f"{file} is not writable"
    folder = file.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        return f"{file} cannot be created: {folder} is not a writable directory"
    return None


def sqlite_found(url: str) -> tuple[str | None, str]:
    """What there is of the SQLite store a URL names, found without opening it (opening creates it): why it could
    not be opened (None: it could), and where it is and whether it exists."""
    path = sqlite_path(url)
    if path == ":memory:":
        return None, f"{path} would be created"
    state = "exists" if Path(path).exists() else "would be created"
    return sqlite_problem(path), f"{Path(path).absolute()} {state}"
