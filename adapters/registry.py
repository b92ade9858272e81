"""The dialects by name, and which one a request body is written in: the one place the rest of the gateway learns
what dialects exist. Adding a dialect is a package under `adapters/` and a line in `DIALECTS`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from adapters import a2a, ag_kit, ag_ui, agent_respond, langgraph, mcp, openai_chat, openai_responses, vercel
from gateway.core.capabilities import Variants
from gateway.core.codec import Dialect, Likeness
from gateway.core.errors import GatewayError, UnknownDialect
from gateway.core.queries import RunQueries, RunQuery
from gateway.core.turn import Turn
from gateway.core.validation import listed

DIALECTS: dict[str, Dialect] = {d.name: d for d in (ag_ui.DIALECT, ag_kit.DIALECT, vercel.DIALECT,
                                                     agent_respond.DIALECT, a2a.DIALECT, langgraph.DIALECT,
                                                     openai_chat.DIALECT, openai_responses.DIALECT, mcp.DIALECT)}


def get(name: str) -> Dialect:
    try:
        return DIALECTS[name]
    except KeyError:
        raise ValueError(f"unknown dialect {name!r}; known: {', '.join(DIALECTS)}") from None


def variants() -> dict[str, str]:
    """Every dialect's named variants: variant -> its dialect."""
    return {variant: dialect.name for dialect in DIALECTS.values() for variant in _variants_of(dialect)}


def variant_mismatch(variant: str | None, dialect: str, *, flag: str | None = None) -> str | None:
    """Why `variant` cannot go with `dialect` (it is another dialect's), or None when it can: the CLI and the config
    refuse it in these words. `flag` is the CLI option that names the dialect; the config has none to point at."""
    if variant is None or variant in _variants_of(get(dialect)):
        return None
    owner = variants()[variant]
    if flag is None:
        return f"variant {variant} is a {owner} variant, not one of {dialect}"
    return f"--variant {variant} is a {owner} variant: use it with {flag} {owner}"


def path_owners(candidates: list[str], path: str) -> list[str]:
    """The candidates that may read a request on `path`: those whose own path it is, or all of them on a path no
    candidate owns."""
    return [name for name in candidates if path in DIALECTS[name].paths] or candidates


def read_request(body: dict[str, Any], candidates: list[str], path: str) -> tuple[Dialect, Turn]:
    """The dialect of a client's body and the turn it holds.

    On a path that is a dialect's own (`/api/chat`, `/agui`, `/agent/respond`), a body that dialect can read is that
    dialect, whatever it looks like; `/send-message` belongs to AG-UI and AG-Kit, told apart by the body. On a path
    no dialect owns, every candidate may read it. A body that only another dialect's path would take is refused
    with that path named, rather than answered in a shape its client does not read.
    """
    owners = path_owners(candidates, path)
    ranked = sorted(owners, key=lambda name: -DIALECTS[name].sniff(body))  # stable: the listed order on a tie
    errors: dict[str, GatewayError] = {}
    for name in ranked:
        dialect = DIALECTS[name]
        try:
            return dialect, dialect.parse_request(body)
        except GatewayError as error:
            errors[name] = error
    for name, dialect in DIALECTS.items():
        if name in owners or dialect.sniff(body) < Likeness.OWN:
            continue
        try:
            dialect.parse_request(body)
        except GatewayError:
            continue
        served = [p for p in dialect.paths if name in candidates]
        where = f"POST it to {' or '.join(served)}" if served else "this route does not take it"
        raise UnknownDialect(f"this is {_article(name)} {name} request, and {path} takes "
                             f"{listed(owners)}: {where}")
    best = ranked[0]
    if len(owners) == 1 or DIALECTS[best].sniff(body) is Likeness.OWN:
        raise errors[best]  # the path's own dialect (or the one the body surely is): its errors name the fields
    raise UnknownDialect(f"{path} takes {listed(owners)}, and this body is none of them: "
                         + "; ".join(DIALECTS[name].sniff.expects for name in owners),
                         [{"dialect": name, "message": errors[name].message} for name in owners])


def read_query(body: dict[str, Any], candidates: list[str], path: str) -> tuple[Dialect, RunQuery] | None:
    """A request about a run rather than a new one, and the dialect it is written in; None for a new run."""
    for name in path_owners(candidates, path):
        dialect = DIALECTS[name]
        queries = dialect.capability(RunQueries)
        if queries is not None and (query := queries.read(body)) is not None:
            return dialect, query
    return None


def error_reply(body: Any, candidates: list[str], path: str) -> Callable[[GatewayError], tuple[int, bytes]] | None:
    """How to tell a refused request's client why, when its dialect has a way of its own (A2A's JSON-RPC errors):
    the dialect that alone owns the path, or that the body surely is. None for the gateway's error body."""
    owners = path_owners(candidates, path)
    if isinstance(body, dict):
        own = [name for name in candidates if DIALECTS[name].sniff(body) is Likeness.OWN]
        owners = own if len(own) == 1 else owners
    return DIALECTS[owners[0]].errors_for(body) if len(owners) == 1 else None


def _variants_of(dialect: Dialect) -> Mapping[str, str]:
    variants = dialect.capability(Variants)
    return variants.histories if variants is not None else {}


def _article(name: str) -> str:
    return "an" if name[0] in "aeiou" else "a"
