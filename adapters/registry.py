"""The dialects by name, and which one a request body is written in."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from adapters import ag_kit, ag_ui, agent_respond, vercel
from gateway.codec import Dialect
from gateway.errors import UnknownDialect

DIALECTS: dict[str, Dialect] = {d.name: d for d in (ag_ui.DIALECT, ag_kit.DIALECT, vercel.DIALECT,
                                                     agent_respond.DIALECT)}


def get(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r}; known: {', '.join(DIALECTS)}") from None


def detect(body: dict[str, Any], candidates: Iterable[str] | None = None) -> Dialect:
    """The candidate most sure the body is its own; on a tie, the one listed first (the path's own dialect)."""
    names = list(candidates) if candidates is not None else list(DIALECTS)
    best, best_score = None, 0
    for name in names:
        score = get(name).sniff(body)
        if score > best_score:
            best, best_score = get(name), score
    if best is None:
        raise UnknownDialect(f"could not tell which dialect this request is in (tried {', '.join(names)}); "
                             "AG-UI needs threadId and runId, AG-Kit needs conversationId, Vercel needs messages "
                             "with parts, agent-respond needs messages with role and content")
    return best
