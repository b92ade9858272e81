"""Who is calling a route, and how many at once: API keys checked in constant time, the principal a caller's
conversations belong to, concurrent stream and WebSocket limits.

A principal is what a conversation is scoped to: a key's id (a hash, never the key), the tenant a key is grouped
in, the value of the route's tenant header, or "anonymous". Identifying a caller takes no slot; a slot is taken
only once the request's body is in (`admit`), so callers that stall their bodies hold nothing. A WebSocket takes a
socket slot for as long as it is open (`open_socket`), and each request it runs a stream slot as a POST does.
"""

from __future__ import annotations

import hmac
import logging
import os
import re
import time
from collections import Counter
from dataclasses import dataclass

from starlette.datastructures import Headers

from gateway.config import Route, key_id
from gateway.core.errors import MalformedRequest, TooManyStreams, Unauthorized

log = logging.getLogger("agent_gateway.access")

ANONYMOUS = "anonymous"
_TENANT = re.compile(r"[A-Za-z0-9._:@-]{1,128}")
_RELOAD_EVERY = 1.0
"""Seconds between looks at `keys_file`'s modification time."""


@dataclass(frozen=True, slots=True)
class Caller:
    key_id: str | None
    principal: str

    @property
    def accounted_as(self) -> str:
        """Whose tokens a run's are (metrics, budgets): the key's id, else the tenant's principal, or "anonymous"."""
        return self.key_id or self.principal


class Slots:
    """Things a route's callers hold at once, counted in all and per key: past either limit, `TooManyStreams`."""

    def __init__(self, limit: int, per_key: int, route_full: str, key_full: str) -> None:
        self.limit = limit
        self.limit_per_key = per_key
        self.route_full = route_full
        self.key_full = key_full
        self.taken = 0
        self.per_key: Counter[str] = Counter()

    def take(self, caller: Caller) -> None:
        if self.taken >= self.limit:
            raise TooManyStreams(self.route_full)
        if caller.key_id is not None and self.per_key[caller.key_id] >= self.limit_per_key:
            raise TooManyStreams(self.key_full)
        self.taken += 1
        if caller.key_id is not None:
            self.per_key[caller.key_id] += 1

    def give_back(self, caller: Caller) -> None:
        self.taken -= 1
        if caller.key_id is not None:
            self.per_key[caller.key_id] -= 1
            if not self.per_key[caller.key_id]:
                del self.per_key[caller.key_id]


class Access:
    """Identifies callers and admits them or says why not. Counts are per process (per worker under `--workers`)."""

    def __init__(self, route: Route) -> None:
        self.auth = route.auth
        self.tenant_header = route.tenant_header
        limits = route.limits
        self.streams = Slots(limits.max_streams, limits.max_streams_per_key,
                             f"this route already serves {limits.max_streams} requests: retry later",
                             f"this key already has {limits.max_streams_per_key} requests in flight: retry later")
        self.sockets = Slots(limits.max_sockets, limits.max_sockets_per_key,
                             f"this route already has {limits.max_sockets} WebSockets open: retry later",
                             f"this key already has {limits.max_sockets_per_key} WebSockets open: close one, or "
                             "retry later")
        self._keys: list[tuple[bytes, str, str]] = []  # (key, its id, its principal)
        self._keys_file_mtime: float | None = None
        self._looked_at = 0.0
        if self.auth is not None:
            self._load()

    def identify(self, headers: Headers) -> Caller:
        """Who the caller is; raises `Unauthorized` for a route with keys that were not presented."""
        if self.auth is not None:
            return self._authenticate(headers)
        if self.tenant_header is not None:
            sent = headers.getlist(self.tenant_header)
            if sent:  # present: exactly one, well formed (a proxy that added its own must not be half-believed)
                if len(sent) > 1 or not _TENANT.fullmatch(sent[0]):
                    raise MalformedRequest(f"header {self.tenant_header} must be sent once, with 1-128 letters, "
                                           "digits or ._:@-")
                return Caller(None, f"tenant:{sent[0]}")
        return Caller(None, ANONYMOUS)

    def admit(self, caller: Caller) -> None:
        """Take a stream slot; give it back with `release()`."""
        self.streams.take(caller)

    def release(self, caller: Caller) -> None:
        self.streams.give_back(caller)

    def open_socket(self, caller: Caller) -> None:
        """Take a WebSocket slot; give it back with `close_socket()`."""
        self.sockets.take(caller)

    def close_socket(self, caller: Caller) -> None:
        self.sockets.give_back(caller)

    def _authenticate(self, headers: Headers) -> Caller:
        self._reload_if_changed()
        presented = presented_key(headers)
        if not presented:
            raise Unauthorized("this route needs an API key: send Authorization: Bearer <key> or X-API-Key: <key>")
        candidate = presented.encode()
        found: tuple[bytes, str, str] | None = None
        for entry in self._keys:  # every key is compared, so the time taken says nothing about which matched
            if hmac.compare_digest(candidate, entry[0]):
                found = entry
        if found is None:
            raise Unauthorized("the API key is not valid for this route")
        return Caller(found[1], found[2])

    def _load(self) -> None:
        assert self.auth is not None
        self._keys = [(key.encode(), key_id(key), principal) for key, principal in self.auth.principals().items()]
        if self.auth.keys_file:
            self._keys_file_mtime = _mtime(self.auth.keys_file)

    def _reload_if_changed(self) -> None:
        """A revoked key stops working within a second of its line leaving `keys_file`, without a restart."""
        assert self.auth is not None
        now = time.monotonic()
        if self.auth.keys_file is None or now - self._looked_at < _RELOAD_EVERY:
            return
        self._looked_at = now
        if _mtime(self.auth.keys_file) == self._keys_file_mtime:
            return
        try:
            self._load()
        except ValueError as exc:  # unreadable or empty: the keys we had stay, and the operator is told once
            self._keys_file_mtime = _mtime(self.auth.keys_file)
            log.warning("keys_file not reloaded, the previous keys stay in force: %s", exc)
        else:
            log.info("keys_file reloaded: %d keys", len(self._keys))


def presented_key(headers: Headers) -> str:
    """The key a caller sent: `X-API-Key`, or `Authorization: Bearer`; empty when it sent none."""
    presented = headers.get("x-api-key", "")
    authorization = headers.get("authorization", "")
    if not presented and authorization[:7].lower() == "bearer ":
        presented = authorization[7:].strip()
    return presented


def _mtime(path: str) -> float | None:
    try:
        return os.stat(path).st_mtime
    except OSError:
        return None
