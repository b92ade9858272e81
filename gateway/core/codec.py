"""What a dialect is: a request reader and writer around the canonical model, a decoder and an encoder for its
replies, and what it can carry (the decoder and encoder bases are in `decoding` and `encoding`).

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
from enum import IntEnum
from typing import Any, Literal

import orjson

from gateway.core.conformance import Judge
from gateway.core.decoding import Decoder as Decoder
from gateway.core.decoding import NewDecoder
from gateway.core.depth import MAX_DEPTH_IN_TEXT, nests_deeper
from gateway.core.encoding import Encoder as Encoder
from gateway.core.errors import GatewayError
from gateway.core.queries import RunQueries
from gateway.core.sockets import SocketMode
from gateway.core.turn import ContentPart, History, Message, Turn


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


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to call an upstream, as its discovery document (A2A's agent card) describes it."""

    url: str
    variant: str | None = None


@dataclass(frozen=True, slots=True)
class AgentDescription:
    """How a route describes its agent to clients that ask (A2A's agent card), from its config."""

    name: str
    description: str
    url: str
    """Where clients reach the agent through the gateway."""
    version: str = "1.0.0"
    skills: tuple[Mapping[str, Any], ...] = ()
    streaming: bool = True
    webhooks: bool = False
    """The route sends run updates to webhooks its clients register (A2A's push notifications)."""


@dataclass(frozen=True, slots=True)
class Resource:
    """A call a dialect's clients make under a route's path by method and path, beside the route's own POST
    (LangGraph's `POST /threads/{thread_id}/runs/stream`, `GET /threads/{thread_id}/state`)."""

    method: str
    path: str
    """Under the route's path; `{name}` stands for one path segment the request is read with."""
    read: Callable[[Mapping[str, str], dict[str, Any], Mapping[str, str]], dict[str, Any]]
    """The request as the dialect's `parse_request` or its queries read it, given the path's segments, the JSON
    body (for a GET, the query parameters) and the headers (lowercase names: LangGraph's `Last-Event-ID`)."""


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


@dataclass(frozen=True, slots=True)
class Discovery:
    """A document, at one path under an agent's URL, that describes the agent (A2A's agent card): the gateway reads
    an upstream's to find where and how to call it, and serves one for each of its own routes. Its parts only work
    together (a path with no reader or writer is of no use), so a dialect has all of them or none."""

    path: str
    """Where, under an agent's URL, the document is published ("/.well-known/agent-card.json")."""
    read: Callable[[Any, str], Endpoint | None]
    """The endpoint an upstream's document names, given the document and the URL it came from; None if the
    document names none this dialect can call."""
    document: Callable[[AgentDescription, Mapping[str, str]], dict[str, Any]]
    """The document for a route of the gateway's that serves this dialect, given what the request for it asked (its
    headers and query parameters, names lowercased: A2A's `A2A-Version`)."""
    varies: tuple[str, ...] = ()
    """The request headers the document depends on, for caches (`Vary`)."""


@dataclass(frozen=True, slots=True)
class Catalog:
    """Where a dialect's clients list the routes they may use, and the list in the dialect's shape (OpenAI's
    `GET /v1/models`): the gateway serves it beside the dialect's paths. A path without a list is of no use."""

    path: str
    """Where, beside the dialect's own paths, its clients ask ("/v1/models")."""
    listing: Callable[[list[AgentDescription]], dict[str, Any]]
    """The list of the routes the caller may use, in the dialect's shape."""


@dataclass(frozen=True, slots=True)
class Compaction:
    """Its clients ask the server to compact a conversation into an item they send back as input later, instead of
    the history (Open Responses' `POST /v1/responses/compact`)."""

    suffix: str
    """Where, under the dialect's path, the request goes ("/compact")."""
    answer: Callable[[Turn, list[Message]], dict[str, Any]]
    """The answer's JSON, given the request read as a turn and the whole history: the stored one of the run it
    continues, if it names one, then the request's messages."""


@dataclass(frozen=True, slots=True)
class Dialect:
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
    sniff: Callable[[dict[str, Any]], Likeness]
    """How much a request body looks like this dialect's; used where a path serves several."""
    sample_request: Callable[[str, str], dict[str, Any]]
    """The body this dialect's client sends to open conversation `conversation_id` with `text`: what the demo
    prints, and what tests and the benchmark send."""
    judge: Judge
    """The rules a real client of this dialect holds an agent's reply to (`agent-gateway check`)."""
    variants: Mapping[str, History] = field(default_factory=dict)
    """Named variants of the dialect, and what history their servers expect (Inkeep keeps it itself)."""
    variant_of: Callable[[Mapping[str, str]], str | None] = lambda headers: None
    """The variant an upstream's response headers show it to be, for an upstream configured without one: "" when
    they show it is the dialect's own, None when they do not say."""
    reply_messages: Callable[[bytes], list[Message] | None] | None = None
    """For a dialect that answers in one body to a client that keeps the history: the reply's messages as that
    client will send them back next turn (None if the body cannot be read). Others' replies are recorded from the
    run's events."""
    expects: str = ""
    """What a request of this dialect must hold, in a client's words, for an error that names every dialect."""
    discovery: Discovery | None = None
    """Its agents publish a document describing themselves (A2A's agent card): see `Discovery`."""
    queries: RunQueries | None = None
    """Its clients ask about runs after starting them (A2A's tasks): see `gateway.core.queries`."""
    check_request: Callable[[dict[str, Any], Mapping[str, str]], None] | None = None
    """Refuse, before anything runs, a request (a run or a query) that its headers make one the dialect does not
    serve (A2A: an `A2A-Version` it does not speak): raises a `GatewayError` its `error_reply` writes."""
    passed_headers: tuple[str, ...] = ()
    """Request headers that mean something only to a server of this dialect (A2A's `A2A-Extensions`): passed to an
    upstream of the same dialect, and the same headers of its answer passed back to the client."""
    error_reply: Callable[[GatewayError, Any], tuple[int, bytes]] | None = None
    """A request refused before its reply starts, as this dialect's clients read an error (status, JSON body),
    given the error and the request's JSON (None if it was not JSON); None for the gateway's own error body."""
    resources: tuple[Resource, ...] = ()
    """Calls its clients make under a route's path other than a POST to the path itself (LangGraph's threads and
    runs): each read into a request the dialect reads as a run or a query."""
    encoder_history: bool = False
    """Its encoder is given the conversation's whole history as the gateway knows it, not only the request's new
    messages: its replies carry the thread's state with every message (LangGraph's `values`)."""
    decoder_for: Callable[[str, int], Decoder | None] | None = None
    """A decoder for an upstream's reply in another wire format than the dialect's usual one (AG-UI's protobuf),
    given the reply's content type and `max_event_bytes`; None where `new_decoder` reads it."""
    event_ids: bool = False
    """Its clients name each run and reconnect with `Last-Event-ID` (AG-UI): on a resumable route every SSE event
    gets an `id:`, and a request for a run that is running attaches to it. Other dialects' retries are matched by
    their body."""
    echoed: Callable[[list[Message]], list[Message]] | None = None
    """A run's messages (as recorded) as its client will send them back next turn, for a dialect whose clients keep
    the history and name no conversation, and whose replies do not show every message (Chat Completions shows one
    assistant message, no server tool): the gateway finds the conversation again by that history."""
    catalog: Catalog | None = None
    """Its clients list the routes they may use (OpenAI's `GET /v1/models`): see `Catalog`."""
    socket: SocketMode | None = None
    """Its clients may also hold a WebSocket at its paths, a request per message (`gateway.core.sockets`)."""
    compaction: Compaction | None = None
    """Its clients may have a conversation compacted into an item (see `Compaction`)."""

    def history_of(self, variant: str | None) -> History:
        """What history a server of this dialect, or of its `variant`, expects."""
        return self.variants.get(variant or "", self.history)


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
