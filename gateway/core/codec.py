"""What a dialect is: a request reader and writer around the canonical model, a decoder and an encoder for its
replies, and what it can carry (the decoder and encoder bases are in `decoding` and `encoding`).

```
client body ──parse_request──▶ Turn ──build_request──▶ upstream body
client bytes ◀──encoder──── canonical events ◀──decoder──── upstream bytes
```

Adding a dialect means writing one package under `adapters/` that builds a `Dialect` and listing it in
`adapters.registry`. What every dialect has is a field of `Dialect`; what one alone brings (endpoints of its own, a
WebSocket mode, a second wire format...) is a `Capability` in its `capabilities` (`gateway.core.capabilities`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal, TypeVar

import orjson

from gateway.core.capabilities import Capability, OwnErrors, Variants
from gateway.core.conformance import Judge
from gateway.core.decoding import Decoder as Decoder
from gateway.core.decoding import NewDecoder
from gateway.core.depth import MAX_DEPTH_IN_TEXT, nests_deeper
from gateway.core.encoding import Encoder as Encoder
from gateway.core.errors import GatewayError
from gateway.core.turn import ContentPart, History, Turn


@dataclass(slots=True)
class UpstreamRequest:
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    streams: bool = True
    """Whether the reply to this request streams (SSE) or comes as one body. A one-body reply's error statuses
    (non-2xx) are part of the dialect too: their body is decoded, not just reported as a failed call."""
    path: str | None = None
    """Where under the upstream's URL this call goes, for a dialect whose calls differ by path (A2A's HTTP+JSON
    binding); None for the URL itself."""
    json_reply: bool = False
    """A streaming call may be answered with one JSON body (a JSON-RPC error before the stream starts), which the
    decoder reads, rather than being refused as not a stream."""
    method: str = "POST"
    """The HTTP method: a request about a run already started may be a GET (LangGraph's join)."""

    def __post_init__(self) -> None:
        # Kept while its answer is read where a call may be held open on it: copied at its size, as orjson's output
        # sits in a buffer of at least 4 KiB.
        self.body = bytes(memoryview(self.body))


class Likeness(IntEnum):
    """How much a request body looks like a dialect's own, for a path several dialects serve. Bodies are tried in
    order of likeness, ties in the route's order of dialects."""

    FOREIGN = 0
    """The body lacks what this dialect's clients always send, or has what they never do."""
    PLAUSIBLE = 1
    """Nothing rules the dialect out, and nothing marks the body as its own."""
    OWN = 2
    """The body has what only this dialect's clients send: it is taken to be this dialect's even on a path that
    belongs to another, so the client can be told where to send it."""


Feature = Literal[
    "messages",  # a reply's text comes as separate messages with ids, not one run of words
    "reasoning",  # a reply can show the model's reasoning
    "state",  # the client keeps shared state: it sends it each turn and reads snapshots and patches
    "data",  # a reply can carry named data parts
    "interrupts",  # a run can stop for a human, and the next request can answer it
    "interrupt_tool_call",  # an interrupt can name the tool call it is about
    "interrupt_ids",  # each interrupt keeps its own id (A2A names what waits by its task)
    "server_tools",  # a reply shows the tools the agent ran itself, with their results
    "tool_definitions",  # a request offers the client's tools to the agent
    "client_tools",  # a run can end on a tool call for the client to run, whose result comes next request
    "tool_errors",  # a tool result can say it failed
    "errors",  # a streamed reply can end in an error the client shows
    "cancel",  # a run can end as cancelled rather than finished
    "stop_reason",  # a finished run can say its answer was cut short (an output limit, a content filter)
]
"""What a dialect carries beyond text and the client's tool calls. What a client's dialect lacks is
approximated or left out (and counted in `Encoder.dropped`)."""


C = TypeVar("C", bound=Capability)


@dataclass(frozen=True, slots=True)
class Sniff:
    """How the gateway tells this dialect's request bodies from others' on a path several dialects take: a body is
    tried as each dialect's in order of likeness, and one that is none of them is refused with what each expects."""

    likeness: Callable[[dict[str, Any]], Likeness]
    expects: str
    """What a request of this dialect must hold, in a client's words, for an error that names every dialect."""

    def __call__(self, body: dict[str, Any]) -> Likeness:
        return self.likeness(body)


@dataclass(frozen=True, slots=True)
class Dialect:
    """A dialect's codec core, what every dialect has, and the capabilities it alone brings."""

    name: str
    history: History
    """What this dialect's servers expect: the whole history each call, or only what is new."""
    paths: tuple[str, ...]
    """Where a client conventionally finds a server of this dialect."""
    carries: frozenset[Feature]
    parse_request: Callable[[dict[str, Any]], Turn]
    """Validate a client's JSON body (raises `gateway.core.errors.InvalidRequest`) and read it as a turn."""
    build_request: Callable[[Turn, str | None], UpstreamRequest]
    """The body and headers to send an upstream of this dialect; the second argument names a variant."""
    new_decoder: NewDecoder
    """A decoder for an upstream of this dialect; `max_event_bytes=` bounds one event."""
    new_encoder: Callable[[Turn | None], Encoder]
    """An encoder for a client of this dialect, given that client's request: its variant, and what a continuation
    settles (a Vercel client's answered approvals)."""
    sniff: Sniff
    """How much a request body looks like this dialect's, and what one must hold; used where a path serves several."""
    sample_request: Callable[[str, str], dict[str, Any]]
    """The body this dialect's client sends to open conversation `conversation_id` with `text`: what the demo
    prints, and what tests and the benchmark send."""
    judge: Judge
    """The rules a real client of this dialect holds an agent's reply to (`agent-gateway check`)."""
    capabilities: tuple[Capability, ...] = ()
    """What this dialect alone brings (`gateway.core.capabilities`), each found by its kind."""
    _found: dict[type[Any], Any] = field(default_factory=dict, init=False, repr=False, compare=False)
    """`capability`'s answers by kind: a request asks several times for kinds most dialects do not bring."""

    def capability(self, kind: type[C]) -> C | None:
        """The dialect's capability of this kind, or None if it brings none."""
        try:
            found: C | None = self._found[kind]
            return found
        except KeyError:
            pass
        found = next((capability for capability in self.capabilities if isinstance(capability, kind)), None)
        self._found[kind] = found
        return found

    def capabilities_of(self, kind: type[C]) -> tuple[C, ...]:
        """Every capability of this kind the dialect brings, for a kind a dialect may bring several of (endpoints)."""
        return tuple(capability for capability in self.capabilities if isinstance(capability, kind))

    def history_of(self, variant: str | None) -> History:
        """What history a server of this dialect, or of its `variant`, expects."""
        variants = self.capability(Variants)
        return variants.histories.get(variant or "", self.history) if variants is not None else self.history

    def errors_for(self, request: Any) -> Callable[[GatewayError], tuple[int, bytes]] | None:
        """How a refused request is told to this dialect's client, in the dialect's own error shape (`OwnErrors`),
        given the request's JSON (None if it had none); None where the gateway's own error body does."""
        errors = self.capability(OwnErrors)
        if errors is None:
            return None
        reply = errors.reply
        return lambda error: reply(error, request)


def json_or_text(value: str) -> Any:
    """Parse a JSON string if it is one; otherwise keep the text (tool results are often plain text). JSON nested
    deeper than `MAX_DEPTH_IN_TEXT` is kept as text too: the body it goes on in could not be written."""
    try:
        parsed = orjson.loads(value)
    except orjson.JSONDecodeError:
        return value
    return value if nests_deeper(parsed, value, MAX_DEPTH_IN_TEXT) else parsed


def as_text(value: Any) -> str:
    """A value as the string the string-only dialects carry: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def output_of(content: Any) -> Any:
    """A tool's output as a dialect that carries JSON holds it (useChat, Responses' items): any JSON; content parts
    (AG-UI's) as their JSON objects."""
    if isinstance(content, list) and content and all(isinstance(part, ContentPart) for part in content):
        return [drop_none({"type": p.type, "text": p.text, "url": p.url, "data": p.data, "mediaType": p.media_type,
                           "filename": p.filename, "fileId": p.file_id, "provider": p.provider}) for p in content]
    return content


def drop_none(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """Strict clients reject `null` for an optional field: leave such fields out."""
    return {key: value for key, value in mapping.items() if value is not None}
