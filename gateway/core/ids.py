"""Ids the gateway makes up, for runs, tasks, conversations, messages and requests nobody else named.

Many are handles a caller presents later (a task to query or cancel, a conversation to resume), so no id may be
guessed from another: each is 128 bits from the operating system's CSPRNG. The bytes are read 4 KiB at a time, so
minting one costs about what a counter did and may happen per message on the event path; a forked child starts
with bytes of its own.
"""

from __future__ import annotations

import os

ID_BYTES = 16
_BATCH = 4096

_source = os.urandom
_random = b""
_used = 0


def new_id(kind: str) -> str:
    """`<kind>_` and 32 hex digits."""
    global _random, _used
    start = _used
    if start + ID_BYTES > len(_random):
        _random, start = _source(_BATCH), 0
    _used = start + ID_BYTES
    return f"{kind}_{_random[start:start + ID_BYTES].hex()}"


def _forget_inherited_bytes() -> None:
    global _random, _used
    _random, _used = b"", 0


os.register_at_fork(after_in_child=_forget_inherited_bytes)
