"""Who may call a route, and how many at once: API keys checked in constant time, concurrent stream limits."""

from __future__ import annotations

import hashlib
import hmac
from collections import Counter

from starlette.datastructures import Headers

from gateway.config import Route
from gateway.errors import TooManyStreams, Unauthorized


class Access:
    """Admits a request or says why not. Counts are per process (per worker under `--workers`)."""

    def __init__(self, route: Route) -> None:
        self.keys = [key.encode() for key in route.auth.load_keys()] if route.auth else []
        self.max_streams = route.limits.max_streams
        self.max_per_key = route.limits.max_streams_per_key
        self.streams = 0
        self.per_key: Counter[str] = Counter()

    def admit(self, headers: Headers) -> str | None:
        """The caller's key id (a hash, never the key) once admitted; release it with `release()`."""
        key_id = self._authenticate(headers) if self.keys else None
        if self.streams >= self.max_streams:
            raise TooManyStreams(f"this route already serves {self.max_streams} requests: retry later")
        if key_id is not None and self.per_key[key_id] >= self.max_per_key:
            raise TooManyStreams(f"this key already has {self.max_per_key} requests in flight: retry later")
        self.streams += 1
        if key_id is not None:
            self.per_key[key_id] += 1
        return key_id

    def release(self, key_id: str | None) -> None:
        self.streams -= 1
        if key_id is not None:
            self.per_key[key_id] -= 1
            if not self.per_key[key_id]:
                del self.per_key[key_id]

    def _authenticate(self, headers: Headers) -> str:
        presented = headers.get("x-api-key", "")
        authorization = headers.get("authorization", "")
        if not presented and authorization[:7].lower() == "bearer ":
            presented = authorization[7:].strip()
        if not presented:
            raise Unauthorized("this route needs an API key: send Authorization: Bearer <key> or X-API-Key: <key>")
        candidate = presented.encode()
        matched = False
        for key in self.keys:  # every key is compared, so the time taken says nothing about which matched
            matched |= hmac.compare_digest(candidate, key)
        if not matched:
            raise Unauthorized("the API key is not valid for this route")
        return hashlib.sha256(candidate).hexdigest()[:12]
