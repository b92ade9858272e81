"""What one dialect brings beyond the codec core every dialect has (`gateway.core.codec.Dialect`): each kind a class,
found in a dialect's `capabilities` by its type, and served by the server in one place for its kind
(`gateway.server.endpoints.capabilities`), so the core and the server name no dialect.

```
kind             what the dialect brings                                      served or read by (gateway/server/)
PathAnswer       a call under its path it answers itself (Responses' compact)  endpoints/path_answers
Resource         a call under its path read as a run or a query (LangGraph's)  endpoints/resources
RunQueries       questions about runs after they start (core.queries)          endpoints/queries
SocketMode       a WebSocket at its paths, a request per message (core.sockets) endpoints/sockets
Discovery        a document describing an agent (A2A's card)                   endpoints/documents; request/discovery
                                                                               reads an upstream's
Catalog          the list of the routes a caller may use (OpenAI's /v1/models) endpoints/documents
OwnErrors        errors before the reply in its own shape (JSON-RPC's)         stream/client (the writer), as each
                                                                               entry sets
ProtocolHeaders  headers it refuses a request by, and passes on (A2A-Version)  request/reading, request/call
WireFormats      a second wire format for an upstream's reply (AG-UI protobuf) request/call
JudgedFrames     how its judge numbers a reply's frames, where not by SSE     recordings/judged (the live judge)
                 events (AG-UI's client framing, and protobuf)
Variants         named variants, and the headers that show one (Inkeep)        the registry, request/call
ClientHistory    how a client that keeps the history sends a reply back        stream/run_end
WholeHistory     its encoder is given the conversation's whole history        request/call
EventIds         its clients reconnect to a run by `Last-Event-ID` (AG-UI)     stream/resume, resumable
UpstreamSessions its servers serve a run only in a session opened first (MCP)  request/upstream_sessions
HeldCalls        its servers ask the user mid-call and wait on the call (MCP   request/held_calls
                 2025's elicitation): the call held open for the answer
NamedRoutes      one endpoint for every route, each request naming its route   endpoints/named_routes (across the
                 (MCP's tools): what is not a run it answers itself; runs      routes)
                 chained in one answer (`Continuation`: MCP's elicitation)
Settings         a section of the configuration of its own (`a2a:`)          config/settings (read with the file)
Listener         a transport the HTTP server does not speak, on a port of its  connections/listeners (started and
                 own (A2A's gRPC), each call handed to the app in process      stopped with the app);
                 (`gateway.core.listeners`)
```

`RunQueries` (`gateway.core.queries`), `SocketMode` (`gateway.core.sockets`) and `UpstreamTransport`
(`gateway.core.transports`: variants whose upstreams it calls itself, over a transport the HTTP/1.1 client does not
speak, A2A's gRPC) are kinds in modules of their own.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gateway.core.decoding import Decoder
from gateway.core.errors import GatewayError
from gateway.core.turn import History, Message, Resume, Turn

if TYPE_CHECKING:
    from gateway.core.codec import UpstreamRequest
    from gateway.core.conformance import FrameEnds
    from gateway.core.queries import Answer


class Capability:
    """Something one dialect brings beyond the codec core (see the module). A dialect brings at most one of each kind,
    except the endpoints (`Resource`, `PathAnswer`): one object each."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class Settings(Capability):
    """What an operator sets for the dialect across the whole gateway (A2A's card signing key), in a section of the
    configuration named after the dialect: read and checked with the rest of the file, so a mistake in it stops
    the gateway at start as any other does."""

    model: type[Any]
    """A pydantic model (extra keys forbidden); its defaults stand when the section is absent."""
    description: str
    """What the section is for, in the configuration reference."""


@dataclass(frozen=True, slots=True)
class Variants(Capability):
    """Named variants of the dialect, the history their servers expect (Inkeep keeps it itself), and how an
    upstream's response headers show which it is."""

    histories: Mapping[str, History]
    shown_by: Callable[[Mapping[str, str]], str | None] = lambda headers: None
    """The variant an upstream's response headers show it to be, for an upstream configured without one: "" when
    they show it is the dialect's own, None when they do not say."""


@dataclass(frozen=True, slots=True)
class OwnErrors(Capability):
    """Its clients read a request refused before the reply starts in the dialect's own error shape (A2A's JSON-RPC
    errors) rather than the gateway's error body."""

    reply: Callable[[GatewayError, Any], tuple[int, bytes]]
    """The status and JSON body, given the error and the request's JSON (None if it was not JSON)."""


@dataclass(frozen=True, slots=True)
class ProtocolHeaders(Capability):
    """Request headers that mean something only to the dialect's servers (A2A's `A2A-Version` and
    `A2A-Extensions`)."""

    check: Callable[[dict[str, Any], Mapping[str, str]], None] = lambda request, headers: None
    """Refuse, before anything runs, a request (a run or a query) that its headers make one the dialect does not
    serve (an `A2A-Version` it does not speak): raises a `GatewayError` its `OwnErrors` write."""
    passed: tuple[str, ...] = ()
    """Headers passed to an upstream of the same dialect, and the same headers of its answer passed back."""


@dataclass(frozen=True, slots=True)
class Resource(Capability):
    """A call a dialect's clients make under a route's path by method and path, beside the route's own POST
    (LangGraph's `POST /threads/{thread_id}/runs/stream`, `GET /threads/{thread_id}/state`): read into a request the
    dialect reads as a run or a query, and served as a POST to the path itself is."""

    method: str
    path: str
    """Under the route's path; `{name}` stands for one path segment the request is read with."""
    read: Callable[[Mapping[str, str], dict[str, Any], Mapping[str, str]], dict[str, Any]]
    """The request as the dialect's `parse_request` or its queries read it, given the path's segments, the JSON
    body (for a GET, the query parameters) and the headers (lowercase names: LangGraph's `Last-Event-ID`). Called
    first with an empty body too, before the body is read: an error before then (a missing key, a body too large)
    is told by the dialect's `OwnErrors` as for that request (A2A's HTTP+JSON binding), so it never raises."""


class Asked(Protocol):
    """A call to a `PathAnswer`, as the server hands it to the dialect: what the call said, and what the gateway keeps
    that an answer may need. The caller has been identified; what it reads is the caller's own."""

    @property
    def params(self) -> Mapping[str, str]:
        """The path's segments, by the names the `PathAnswer`'s path gives them."""
        ...

    @property
    def query(self) -> Mapping[str, str]: ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Lowercase names."""
        ...

    async def json(self) -> dict[str, Any]:
        """The body, read as a run's is: a JSON object, within the route's size, depth and deadlines (raises
        `GatewayError`)."""
        ...

    def check(self, turn: Turn) -> None:
        """Refuse a request read as a turn that the route would refuse as a run (raises `GatewayError`)."""
        ...

    async def history(self, run_id: str) -> list[Message]:
        """The caller's conversation as its run `run_id` left it, for a request that continues a run by its id
        (Responses' `previous_response_id`)."""
        ...


@dataclass(frozen=True, slots=True)
class PathAnswer(Capability):
    """A call under the dialect's path that the dialect answers itself, without a run: the upstream is never asked
    (Open Responses' `POST /v1/responses/compact`)."""

    method: str
    path: str
    """Under the route's path; `{name}` stands for one path segment (`Asked.params`)."""
    answer: Callable[[Asked], Awaitable[Answer]]
    outcome: str
    """How the access log names such a request ("compaction")."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where and how to call an upstream, as its discovery document (A2A's agent card) describes it."""

    url: str
    """An HTTP endpoint's URL (only its path is taken, on the configured origin); for a variant of an
    `UpstreamTransport`, its address, `host:port` and a path (only the port and path are taken)."""
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
    listeners: Mapping[str, int] = field(default_factory=dict)
    """The other transports the route's dialect is served on (`Listener`), by name, and their ports."""
    settings: Any = None
    """The dialect's own section of the configuration (`Settings`), for a document that depends on it (A2A's card,
    signed with its key); None for a dialect without one."""


@dataclass(frozen=True, slots=True)
class Discovery(Capability):
    """A document, at one path under an agent's URL, that describes the agent (A2A's agent card): the gateway reads
    an upstream's to find where and how to call it, and serves one for each of its own routes. Its parts only work
    together (a path with no reader or writer is of no use), so a dialect has all of them or none."""

    path: str
    """Where, under an agent's URL, the document is published ("/.well-known/agent-card.json")."""
    read: Callable[[Any, str, str | None], Endpoint | None]
    """The endpoint an upstream's document names, given the document, the URL it came from and the variant the
    route pins (None: the one the upstream prefers); None if the document names none this dialect can call, and
    `transports.Unusable` raised when it names only some that the gateway could call with what is not installed."""
    document: Callable[[AgentDescription, Mapping[str, str]], dict[str, Any]]
    """The document for a route of the gateway's that serves this dialect, given what the request for it asked (its
    headers and query parameters, names lowercased: A2A's `A2A-Version`)."""
    varies: tuple[str, ...] = ()
    """The request headers the document depends on, for caches (`Vary`)."""
    refusal: Callable[[Any, Any], str | None] = lambda document, settings: None
    """Why the dialect's settings (`Settings`) refuse to call an upstream by its document (A2A: a card that no
    trusted key signed), given the document (None when it could not be read); None when they do not. The route's
    runs fail with the reason until a document is read that is not refused."""


@dataclass(frozen=True, slots=True)
class Catalog(Capability):
    """Where a dialect's clients list the routes they may use, and the list in the dialect's shape (OpenAI's
    `GET /v1/models`): the gateway serves it beside the dialect's paths. A path without a list is of no use."""

    path: str
    """Where, beside the dialect's own paths, its clients ask ("/v1/models")."""
    listing: Callable[[list[AgentDescription]], dict[str, Any]]
    """The list of the routes the caller may use, in the dialect's shape."""


@dataclass(frozen=True, slots=True)
class WireFormats(Capability):
    """An upstream of the dialect may reply in another wire format than its usual one (AG-UI's protobuf)."""

    decoder_for: Callable[[str, int], Decoder | None]
    """A decoder for a reply of this content type, given `max_event_bytes`; None where `new_decoder` reads it."""


@dataclass(frozen=True, slots=True)
class JudgedFrames(Capability):
    """The dialect's judge numbers a reply's frames otherwise than `conformance.sse_frame_ends` does: where each of
    them ends, so that the live judge shows a broken rule beside the frame that broke it."""

    ends: FrameEnds


@dataclass(frozen=True, slots=True)
class ClientHistory(Capability):
    """Its clients keep the history and name no conversation, and send a run's reply back next turn otherwise than
    the run's events show it: the gateway finds the conversation again by that history. Without this, the run's
    messages as recorded."""

    from_reply: Callable[[bytes], list[Message] | None] | None = None
    """For a reply in one body: its messages as the client will send them back (None if the body cannot be read;
    agent-respond's)."""
    from_run: Callable[[list[Message]], list[Message]] | None = None
    """The run's messages (as recorded) as the client will send them back (Chat Completions shows one assistant
    message, no server tool)."""


@dataclass(frozen=True, slots=True)
class WholeHistory(Capability):
    """Its encoder is given the conversation's whole history as the gateway knows it, not only the request's new
    messages: its replies carry the thread's state with every message (LangGraph's `values`)."""


@dataclass(frozen=True, slots=True)
class EventIds(Capability):
    """Its clients name each run and reconnect with `Last-Event-ID` (AG-UI): on a resumable route every SSE event
    gets an `id:`, and a request for a run that is running attaches to it. Other dialects' retries are matched by
    their body."""



@dataclass(frozen=True, slots=True)
class Exchanged:
    """An upstream's whole answer to one request a dialect sends while opening a session."""

    status: int
    headers: Mapping[str, str]
    """Lowercase names."""
    body: bytes


@dataclass(frozen=True, slots=True)
class Opened:
    """A session an upstream opened: what each request in it carries, and what opening it showed of the upstream."""

    headers: Mapping[str, str]
    """Added to every request of the session (the run's, its cancel): the session's id, the version agreed."""
    variant: str | None = None
    """The variant the upstream turned out to be, for the request's builder (None: the configured one)."""


@dataclass(frozen=True, slots=True)
class UpstreamSessions(Capability):
    """Its servers serve a run's request only inside a session the client opened first, with requests of its own,
    and name on each later request (MCP's `initialize` and `Mcp-Session-Id`). The server keeps one per conversation
    (for as many as the store keeps), opens another when the upstream says it lost one, and ends those it lets go."""

    open: Callable[[Callable[[UpstreamRequest], Awaitable[Exchanged]], Turn, str], Awaitable[Opened]]
    """Open a session for this turn's conversation, given a function that sends one request to the upstream (with
    the route's headers) and returns its whole answer, and the upstream's URL (what the dialect learnt of a server
    may be remembered by it); raises a `GatewayError` when the upstream refuses."""
    lost: Callable[[int], bool] = lambda status: status == 404
    """Whether a run's answer with this status says the upstream no longer knows the session."""
    ends: Callable[[Opened], UpstreamRequest | None] = lambda opened: None
    """The request that ends a session the server will not use again (MCP's `DELETE`), so that the upstream need
    not keep it; None for a session with nothing to end."""


@dataclass(frozen=True, slots=True)
class HeldCalls(Capability):
    """Its servers may ask the user in the middle of a call, on the call's own stream, and wait there for the
    answer (MCP 2025's `elicitation/create`). The run ends interrupted for the client while the server keeps the
    upstream's response open, in the process, bounded in number and time; the answer's turn sends the dialect's
    answering requests and reads the held response on as its reply."""

    waits: Callable[[Any], bool]
    """Whether an interrupt's `upstream_state` says its call waits, held open, for the answer."""
    answers: Callable[[list[Resume]], list[UpstreamRequest]]
    """The requests that give the upstream the client's answers to such interrupts (MCP: the JSON-RPC response to
    the elicitation), sent with the held call's headers."""


class AtEndpoint(Protocol):
    """A request to a `NamedRoutes` endpoint, as the server hands it to the dialect: what it said, the routes its
    caller may use, and the sessions the dialect keeps for that caller (in the gateway's store, so any replica serves
    a session's next request; another caller's are not found)."""

    @property
    def method(self) -> str:
        """The HTTP method."""
        ...

    @property
    def headers(self) -> Mapping[str, str]:
        """Lowercase names."""
        ...

    @property
    def body(self) -> Any:
        """The JSON body; None for a request without one (a GET, a DELETE)."""
        ...

    @property
    def routes(self) -> Sequence[AgentDescription]:
        """The routes the caller may use, by name, in the order the configuration lists them."""
        ...

    async def session(self, session_id: str) -> dict[str, Any] | None:
        """What was kept of the caller's session, or None for one it never opened or that was forgotten."""
        ...

    async def keep(self, session_id: str, kept: dict[str, Any]) -> None: ...

    async def forget(self, session_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class Answered:
    """What the dialect makes of a request to its `NamedRoutes` endpoint: its own answer, or a run of a route."""

    status: int = 200
    body: bytes = b""
    """The answer's body; for a run, the request as the route reads it when the dialect adds to it what only the
    endpoint knows (a session's log level), else empty: the request as it came."""
    headers: Mapping[str, str] = field(default_factory=dict)
    run: str | None = None
    """The route this request is a run of (MCP's `tools/call`): the route serves it as a POST to its path, with its
    own keys, limits and conversations; the status and headers are unused."""
    run_key: str | None = None
    """The name a later request may stop that run by."""
    stopped: bytes = b""
    """What ends the run's answer if a later request stops it (MCP: the call's `-32800 Request cancelled`, as the
    SDKs' servers send it): an SSE event of the answer's stream, begun with it if the run had written nothing yet.
    Empty: the answer ends as it stands."""
    stop: str | None = None
    """A running run this request stops (by its `run_key`), as its client leaving would (MCP's
    `notifications/cancelled`), besides being answered."""
    then: Continuation | None = None
    """For a run whose answer may go on past the run's end (MCP's elicitation: the client is asked on the same
    stream, and its answer resumes the agent in another run): what comes after each run (see `Continuation`)."""
    outlives: bool = False
    """With `then`: the runs go on when the client leaves, for it to come back for the rest (MCP's streams resumed
    by `Last-Event-ID`): a continuation is waited for until the run is stopped, not until the client leaves."""


Write = Callable[[bytes], Awaitable[None]]
Continuation = Callable[[bytes, Write], Awaitable[bytes | None]]
"""What comes after a run of `Answered.run`, given the last piece of its answer (held back by the endpoint) and a
way to write more of the answer, still open: the request of another run of the same route, whose answer continues
this one (its head not sent again; its last piece given to the continuation in turn), or None once it has written
what ends the answer (the held piece, or what replaces it). The endpoint stops waiting for it when the client
leaves or the run is stopped."""


@dataclass(frozen=True, slots=True)
class NamedRoutes(Capability):
    """Its clients reach every route at one endpoint and name the route in each request (MCP's tool names): the
    gateway serves it across the routes, like a `Catalog`, and the dialect answers what is not a run itself."""

    path: str
    """Where the endpoint is ("/mcp")."""
    methods: tuple[str, ...]
    """The HTTP methods it takes."""
    answer: Callable[[AtEndpoint], Awaitable[Answered]]
    check_origin: bool = False
    """Refuse (403) a request whose `Origin` is not the gateway's own, nor one a route's CORS allows: its clients
    may be a local page's, which DNS rebinding would turn against a local gateway."""
