"""What every conversation store is: the interface, its bounds, its error, the listing's cursors, and the keys
callers make."""

from __future__ import annotations

import hashlib
from typing import NamedTuple, Protocol
from urllib.parse import urlsplit, urlunsplit

DEFAULT_TTL = 7 * 24 * 3600.0
DEFAULT_MAX_ENTRIES = 100_000
DEFAULT_MAX_VALUE_BYTES = 1 << 20


class Listed(NamedTuple):
    """One value of a group's listing, and where the next page of the listing starts after it."""

    key: str
    value: bytes
    cursor: str
    """Opaque: pass it back as `after` to go on past this value."""


def _cursor(position: float, key: str) -> str:
    return f"{position!r}|{key}"


def _read_cursor(cursor: str | None) -> tuple[float, str] | None:
    """A cursor's (position, key), or None for the start of the listing (or a cursor this store never gave)."""
    if not cursor:
        return None
    position, _, key = cursor.partition("|")
    try:
        return float(position), key
    except ValueError:
        return None


class StoreError(Exception):
    """The store could not do what was asked: backend down or failing, value over the size bound, store closed, or
    the package its backend needs not installed."""


class ConversationStore(Protocol):
    async def get(self, key: str) -> bytes | None:
        """The value, or None if absent or expired."""
        ...

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        """Insert or replace; (re)starts the key's TTL and makes it the most recently written, of all and of its
        group. A key is always written with the same group (the gateway's keys are made from their principal)."""
        ...

    async def delete(self, key: str) -> None: ...

    async def newest(self, group: str, after: str | None, limit: int) -> list[Listed]:
        """Up to `limit` values of `group`, most recently written first, starting after the cursor `after` (None:
        from the newest)."""
        ...

    async def ping(self) -> bool:
        """Whether the backend answers, for /readyz. Never raises."""
        ...

    async def close(self) -> None: ...


def _check_bounds(ttl: float, max_entries: int, max_value_bytes: int, max_per_group: int | None = None) -> None:
    if max_per_group is not None and max_per_group < 1:
        raise ValueError(f"max_per_group must be at least 1, got {max_per_group!r}")
    if not ttl > 0:
        raise ValueError(f"ttl must be positive, got {ttl!r}")
    if max_entries < 1:
        raise ValueError(f"max_entries must be at least 1, got {max_entries!r}")
    if max_value_bytes < 1:
        raise ValueError(f"max_value_bytes must be at least 1, got {max_value_bytes!r}")


def _check_size(value: bytes, max_value_bytes: int) -> None:
    if len(value) > max_value_bytes:
        raise StoreError(f"value of {len(value)} bytes is over the {max_value_bytes}-byte limit")


def scoped_key(namespace: str, *parts: str) -> str:
    """A store key: a hash of its parts, each length-prefixed, under a namespace no client id can write into (the
    ids clients choose are one part of a "client" key; an eval run's derived keys are "derived" ones)."""
    return f"{namespace}:{scoped_digest(namespace, *parts)[:40]}"


def scoped_digest(namespace: str, *parts: str) -> str:
    """The SHA-256 of a namespace and its parts, each length-prefixed (so no two lists of parts collide)."""
    digest = hashlib.sha256(namespace.encode())
    for part in parts:
        data = part.encode()
        digest.update(len(data).to_bytes(4, "big") + data)
    return digest.hexdigest()


def redact_url(url: str) -> str:
    """The URL fit for logs and error messages: no password, no query string (it may carry one too)."""
    parts = urlsplit(url)
    if parts.password is None and not parts.query:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{parts.username}@{host}" if parts.username else host
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", parts.fragment))
