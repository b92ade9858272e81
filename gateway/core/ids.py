"""Ids the gateway makes up, for messages and runs the upstream left unnamed.

A random per-process prefix and a counter: unique across processes and restarts, and cheap enough to mint per
event on the hot path (a uuid4 reads the OS's random source every time).
"""

from __future__ import annotations

import itertools
import secrets

_PREFIX = secrets.token_hex(6)
_COUNTER = itertools.count(1)


def new_id(kind: str) -> str:
    return f"{kind}_{_PREFIX}{next(_COUNTER):x}"
