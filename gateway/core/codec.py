"""What a dialect is: four functions around the canonical model (the codec bases are in `decoding` and `encoding`).

```
client body ──parse_request──▶ Turn ──build_request──▶ upstream body
client bytes ◀──encoder──── canonical events ◀──decoder──── upstream bytes
```

Adding a dialect means writing one module under `adapters/` that builds a `Dialect` and listing it in
`adapters.registry`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from gateway.core.conformance import Judge
from gateway.core.decoding import Decoder as Decoder
from gateway.core.decoding import NewDecoder
from gateway.core.encoding import Encoder as Encoder
from gateway.core.turn import History, Turn


@dataclass(slots=True)
class UpstreamRequest:
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    history: History
    """What this dialect's servers expect: the whole history each call, or only what is new."""
    streaming: bool
    """Whether replies stream (SSE) or come as one body. A one-body dialect's error replies (non-2xx) are part of
    the dialect too: their body is decoded, not just reported as a failed call."""
    paths: tuple[str, ...]
    """Where a client conventionally finds a server of this dialect."""
    parse_request: Callable[[dict[str, Any]], Turn]
    """Validate a client's JSON body (raises `gateway.core.errors.InvalidRequest`) and read it as a turn."""
    build_request: Callable[[Turn, str | None], UpstreamRequest]
    """The body and headers to send an upstream of this dialect; the second argument names a variant."""
    new_decoder: NewDecoder
    """A decoder for an upstream of this dialect; `max_event_bytes=` bounds one event."""
    new_encoder: Callable[[Turn | None], Encoder]
    """An encoder for a client of this dialect, given that client's request: its variant, and what a continuation
    settles (a Vercel client's answered approvals)."""
    sniff: Callable[[dict[str, Any]], int]
    """How sure (0-100) this dialect is that a request body is its own; used where a path serves several."""
    judge: Judge
    """The rules a real client of this dialect holds an agent's reply to (`agent-gateway check`)."""
    variant_history: Mapping[str, History] = field(default_factory=dict)
    """Variants whose servers keep history otherwise than the dialect's own do (Inkeep keeps it itself)."""
    variant_of: Callable[[Mapping[str, str]], str | None] = lambda headers: None
    """The variant an upstream's response headers show it to be, for an upstream configured without one."""
    expects: str = ""
    """What a request of this dialect must hold, in a client's words, for an error that names every dialect."""


def json_or_text(value: str) -> Any:
    """Parse a JSON string if it is one; otherwise keep the text (tool results are often plain text)."""
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError:
        return value


def as_text(value: Any) -> str:
    """A value as the string the string-only dialects carry: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()



def drop_none(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Strict clients reject `null` for an optional field: leave such fields out."""
    return {key: value for key, value in mapping.items() if value is not None}
