"""The inspector's cookie: what lets in a browser that opened the page with the key (`?key=`).

It carries when it expires, signed with a secret the process makes when it starts (never the key, nor anything made
from it): a cookie lasts `SESSION_SECONDS` at most, and no longer than the process that set it, so a restart signs
every browser out. Each process has an inspector of its own (`serve` refuses `--workers` above 1 with it), so no
other process needs the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import time

SESSION_SECONDS = 12 * 3600
"""How long a cookie lets its browser in: a working day, after which the page needs the key again."""


class Sessions:
    """Cookies this process set: `issue` one, and tell whether one is `valid` (this process's, and not expired)."""

    def __init__(self) -> None:
        self._secret = secrets.token_bytes(32)

    def issue(self) -> str:
        expires = int(time.time()) + SESSION_SECONDS
        return f"{expires}.{self._signature(expires)}"

    def valid(self, cookie: str) -> bool:
        expires, _, signature = cookie.partition(".")
        if not (expires.isascii() and expires.isdigit() and len(expires) <= 12):
            return False
        signed = hmac.compare_digest(signature.encode(), self._signature(int(expires)).encode())
        return signed and int(expires) > time.time()

    def _signature(self, expires: int) -> str:
        return hmac.new(self._secret, str(expires).encode(), hashlib.sha256).hexdigest()
