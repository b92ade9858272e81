"""Which era each upstream speaks, remembered by its URL so that a conversation's session opens without asking
again: `server/discover` costs a request on a 2026-07-28 server (before `tools/list`) and a refused one on a
2025-only server (before `initialize`), for every new conversation.

```
open ──▶ known? ──2026-07-28──▶ tools/list in that era ──refused (400/404/405)──▶ forget, ask again
               ──2025────────▶ initialize ───────────────refused, or no handshake version──▶ forget, ask again
               ──unknown─────▶ server/discover, then as it says; remembered once the session is open
```
A server that changed era (upgraded, downgraded, another behind the same URL) costs one refused request, then is
asked again; a kept conversation's session is not affected (a server that lost it answers 404: it is reopened).
"""

from __future__ import annotations

from collections import OrderedDict

MAX_KNOWN = 256
"""Upstreams remembered per process, the least recently used forgotten first: a route names one URL, so this is
more than a gateway's routes."""
CHANGED = frozenset({400, 404, 405})
"""What a server answers a request of an era it does not speak (2025's "Missing session ID" or an unsupported
version: 400; 2026-07-28's removed `initialize`: 404; a method or verb it lacks: 404, 405)."""


class KnownEras:
    """Whether each upstream, by URL, spoke 2026-07-28 when last asked."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: OrderedDict[str, bool] = OrderedDict()

    def modern(self, upstream: str) -> bool | None:
        """True for 2026-07-28, False for the handshake era, None when not known."""
        known = self._known.get(upstream)
        if known is not None:
            self._known.move_to_end(upstream)
        return known

    def remember(self, upstream: str, modern: bool) -> None:
        self._known[upstream] = modern
        self._known.move_to_end(upstream)
        while len(self._known) > MAX_KNOWN:
            self._known.popitem(last=False)

    def forget(self, upstream: str) -> None:
        self._known.pop(upstream, None)


KNOWN = KnownEras()
