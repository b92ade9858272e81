"""Which era each upstream speaks, remembered by its URL so that a conversation's session opens without asking
again: `server/discover` costs a request on a 2026-07-28 server (before `tools/list`) and a refused one on a
2025-only server (before `initialize`), for every new conversation.

```
open ──▶ known? ──2026-07-28──▶ tools/list in that era ──refused (400/404/405)──▶ forget, ask again
               ──2025────────▶ initialize ───────────────refused, or no handshake version──▶ forget, ask again
               ──unknown─────▶ server/discover, then as it says; remembered once the session is open
```
A server that changed era (upgraded, downgraded, another behind the same URL) costs one refused request, then is
asked again. A conversation's kept session in the old era is opened again when its call is refused (400, 404:
`session_lost`), in the era the server speaks now.
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


def session_lost(status: int) -> bool:
    """Whether a call's answer says its session is gone: a 404 (the server forgot it), or a 400, which a server
    that no longer speaks the session's era gives (2025's "Missing session ID" to a 2026-07-28 call, an unsupported
    version): the session is opened again once, its era asked again when the remembered one is refused."""
    return status in (400, 404)
