"""The store backends, by the scheme of the URL that names one (the package's docstring draws them): the one table
that opening a store (`open_store`), checking a configuration's store URL as it loads, and `serve --check` read. A
new backend is a row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Unpack

from gateway.conversations.store.base import Bounds, ConversationStore, StoreError, redact_url
from gateway.conversations.store.memory import MemoryStore
from gateway.conversations.store.redis import RedisStore, redis_exceptions
from gateway.conversations.store.redis_servers import (
    CLUSTER_SCHEMES,
    SENTINEL_SCHEMES,
    cluster_url,
    replicas_to_wait_for,
    sentinel_url,
)
from gateway.conversations.store.sqlite import SQLiteStore, sqlite_found, sqlite_path


def _any_url(url: str) -> None:
    """Every URL of the scheme names a store."""


def _redis_installed(url: str) -> None:
    """The redis package the backend needs is there, and the URL's `wait_replicas` is a count: said as the
    configuration loads, not at the first request."""
    try:
        redis_exceptions()
    except StoreError as exc:
        raise ValueError(str(exc)) from None
    replicas_to_wait_for(url)


def _sentinels_named(url: str) -> None:
    """As `_redis_installed`, and the URL names sentinels and the primary they watch."""
    _redis_installed(url)
    sentinel_url(replicas_to_wait_for(url)[0])


def _cluster_named(url: str) -> None:
    """As `_redis_installed`, and the URL names the cluster's nodes and no database but 0."""
    _redis_installed(url)
    cluster_url(replicas_to_wait_for(url)[0])


@dataclass(frozen=True, slots=True)
class Backend:
    """A kind of store: the URL schemes that name it, and what opening, checking and looking at one of its URLs
    does."""

    schemes: tuple[str, ...]
    """Lower case, without `://`."""
    written: tuple[str, ...]
    """How its URLs are written, in a message that lists every backend's."""
    opens: Callable[[str, Bounds], ConversationStore]
    checks: Callable[[str], object] = _any_url
    """What loading a configuration checks of one of its URLs, before anything opens it (a `ValueError` says what
    is wrong)."""
    one_process: bool = False
    """Its conversations live in the process that opened it: worker processes cannot share it."""
    found: Callable[[str], tuple[str | None, str]] | None = None
    """For a backend whose opening creates the store: what there is of one of its stores, found without opening it
    (why it could not be opened, or None; and what is there). None: opening it writes nothing, and checks it."""


BACKENDS = (
    Backend(("memory",), ("memory://",), lambda url, bounds: MemoryStore(**bounds), one_process=True),
    Backend(("sqlite",), ("sqlite:///<path>",), lambda url, bounds: SQLiteStore(sqlite_path(url), **bounds),
            checks=sqlite_path, found=sqlite_found),
    Backend(("redis", "rediss"), ("redis://host:port/db", "rediss://..."),
            lambda url, bounds: RedisStore(url, **bounds), checks=_redis_installed),
    Backend(SENTINEL_SCHEMES, ("redis+sentinel://host:26379,host2:26379/primary/db", "rediss+sentinel://..."),
            lambda url, bounds: RedisStore(url, **bounds), checks=_sentinels_named),
    Backend(CLUSTER_SCHEMES, ("redis+cluster://host:7000,host2:7001", "rediss+cluster://..."),
            lambda url, bounds: RedisStore(url, **bounds), checks=_cluster_named),
)

_WRITTEN = [written for backend in BACKENDS for written in backend.written]
KNOWN = ", ".join(_WRITTEN[:-1]) + " or " + _WRITTEN[-1]
"""Every backend's URLs as they are written, for a message that lists them."""


def backend_for(url: str) -> Backend | None:
    """The backend a URL names by its scheme; None for a URL that names none."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    return next((backend for backend in BACKENDS if scheme in backend.schemes), None)


def open_store(url: str, **bounds: Unpack[Bounds]) -> ConversationStore:
    """The backend a URL names. `sqlite:///rel/path.db` is relative to the working directory,
    `sqlite:////abs/path.db` absolute, `sqlite://` or `sqlite:///:memory:` an in-memory database."""
    backend = backend_for(url)
    if backend is None:
        raise ValueError(f"unsupported store URL {redact_url(url)!r}: use one of {KNOWN}")
    return backend.opens(url, bounds)
