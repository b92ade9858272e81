"""A2A (Agent2Agent) 1.0, and 0.3 where still common: JSON-RPC over HTTP, a task per run, an agent card to find
the agent by. As an upstream the gateway calls `SendStreamingMessage` (or `SendMessage`) on the binding the
agent's card prefers among JSON-RPC, HTTP+JSON and gRPC; as a server it answers all three (HTTP+JSON: `rest.py`;
gRPC: `grpc_server.py`), the requests about tasks (`queries.py`), and publishes a card of its own (`card.py`).

```
request.py   a client's request to a turn; a turn to an upstream's request     versions.py  A2A-Version
encode.py    canonical events to a task's responses (streamed, or one body)   errors.py    JSON-RPC errors
grpc_server.py  the gRPC binding, served; grpc_wire.py its stream responses; grpc_errors.py its statuses; proto.py
             the protobuf schema (proto_schema.py, generated); grpc_calls.py an agent called over gRPC, and
             grpc_decode.py its answer read
updates.py   the task, status and artifact updates encode.py writes; the client's call
decode.py    an agent's responses to canonical events                          card.py      the agent card
reading.py   an agent's messages and parts, for decode.py
document.py  a task as its watchers see it; fold.py, a task from its responses
queries.py   GetTask, CancelTask, SubscribeToTask; listing.py ListTasks; push.py push notification configs
rest.py      the HTTP+JSON binding's calls, read as the JSON-RPC calls they stand for
wire.py      the spellings of 1.0 and 0.3                                      settings.py  the `a2a:` section
signing.py   signed cards: the gateway's signed, an upstream's checked         canonical.py what is signed
```
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any
from urllib.parse import quote

from gateway.core.capabilities import (
    Discovery,
    Endpoint,
    OwnErrors,
    ProtocolHeaders,
    Settings,
    Variants,
    WireFormats,
)
from gateway.core.codec import Dialect, Likeness, Sniff
from gateway.core.decoding import Decoder
from gateway.core.encoding import Encoder
from gateway.core.listeners import Listener
from gateway.core.queries import RunQueries, RunRecord, Webhook
from gateway.core.transports import Unusable, UpstreamTransport
from gateway.core.turn import Turn

from . import encode, grpc_calls, grpc_server
from .card import VARIES, agent_card
from .conformance import judge
from .decode import A2ADecoder
from .document import TaskLog
from .errors import error_reply
from .grpc_wire import MEDIA_TYPE, A2AProtoStreamEncoder, wants_proto
from .push import webhook_of
from .queries import answer_query, follows, read_query
from .request import build_request, parse_request, sample_request
from .rest import RESOURCES
from .settings import A2ASettings
from .updates import client_call
from .versions import check_request
from .wire import GRPC, GRPC_SEND, JSONRPC, METHODS, QUERIES, REST, SEND, V03

CARD_PATH = "/.well-known/agent-card.json"


def sniff(body: dict[str, Any]) -> Likeness:
    """A2A's clients send JSON-RPC 2.0; no other dialect does."""
    if body.get("jsonrpc") != "2.0":
        return Likeness.FOREIGN
    method = body.get("method")
    return Likeness.OWN if isinstance(method, str) and (method in METHODS or method in QUERIES) else \
        Likeness.PLAUSIBLE


SPOKEN: dict[tuple[str, str], str | None] = {("JSONRPC", "1.0"): None, ("HTTP+JSON", "1.0"): REST,
                                            ("GRPC", "1.0"): GRPC, ("JSONRPC", "0.3"): V03}
"""The interfaces the gateway calls, by binding and version, and the variant each is."""
_PINNED: dict[str, str | None] = {JSONRPC: None, SEND: None, GRPC_SEND: GRPC}
"""A pin that names a variant of an interface (`send`: JSON-RPC 1.0 without a stream), or JSON-RPC 1.0 itself."""


def read_card(card: Any, url: str, pinned: str | None = None) -> Endpoint | None:
    """The interface the agent prefers among those the gateway speaks: the first of `supportedInterfaces` (card
    order is the agent's preference) whose binding and version are JSON-RPC 1.0 (`SendMessage` if the agent does
    not stream), HTTP+JSON 1.0, gRPC 1.0 (with grpcio installed) or JSON-RPC 0.3; the one of the `pinned` variant
    if the route names one. A card without `supportedInterfaces` is 0.3's: its `url` and `preferredTransport`.
    A card whose only such interface is gRPC, without grpcio, raises `Unusable`."""
    if not isinstance(card, dict):
        return None
    capabilities = card.get("capabilities")
    streaming = not (isinstance(capabilities, dict) and capabilities.get("streaming") is False)
    offered: list[tuple[str, str, str, str]] = []
    for interface in card.get("supportedInterfaces") or ():
        if isinstance(interface, dict) and isinstance(interface.get("url"), str):
            offered.append((str(interface.get("protocolBinding", "")).upper(),
                            _version(interface.get("protocolVersion")), interface["url"],
                            str(interface.get("tenant") or "")))
    if isinstance(card.get("url"), str):
        offered.append((str(card.get("preferredTransport") or "JSONRPC").upper(),
                        _version(card.get("protocolVersion") or "0.3"), card["url"], ""))
    wanted = None if pinned is None else _PINNED.get(pinned, pinned)
    without_grpc = None
    for binding, version, where, tenant in offered:
        if (binding, version) not in SPOKEN or (pinned is not None and SPOKEN[binding, version] != wanted):
            continue
        variant = SPOKEN[binding, version]
        if variant == GRPC:
            if (without_grpc := grpc_calls.missing()) is not None:
                continue
            return Endpoint(where + ("/" + quote(tenant, safe="") if tenant else ""),
                            GRPC if streaming else GRPC_SEND)
        return Endpoint(where, SEND if variant is None and not streaming else variant)
    if without_grpc is not None:
        raise Unusable(f"the agent's card offers {'' if pinned is None else 'the route pins '}gRPC only, and "
                       f"{without_grpc}")
    return None


def _version(value: Any) -> str:
    """`1.0` for 1.0.x (a patch changes nothing on the wire) and for no version; `0.3` for 0.3.x."""
    text = str(value or "1.0")
    return ".".join(text.split(".")[:2])


def new_encoder(request: Turn | None = None) -> Encoder:
    """The reply the request asked for (`encode.new_encoder`); a stream for the gRPC listener in protobuf."""
    if client_call(request).get("stream") is not False and wants_proto(request):
        return A2AProtoStreamEncoder(request)
    return encode.new_encoder(request)


def refusal(card: Any, settings: A2ASettings | None) -> str | None:
    """An upstream's card refused by `a2a.trusted_card_keys` (`signing.py`)."""
    return None if settings is None else settings.refusal(card)


def proto_decoder(content_type: str, max_event_bytes: int) -> Decoder | None:
    """The decoder of a gRPC call's answer (`grpc_calls`); None for the other bindings' (`A2ADecoder`)."""
    if content_type != MEDIA_TYPE:
        return None
    from .grpc_decode import A2AProtoDecoder

    return A2AProtoDecoder(max_event_bytes)


def continues(turn: Turn) -> str | None:
    """A message naming its task continues it."""
    task_id = client_call(turn).get("continues")
    return task_id if isinstance(task_id, str) else None


def continued(turn: Turn, record: RunRecord) -> Turn:
    """A message to a task that waits for it: in the task's context, and answered with the whole task."""
    return replace(turn, conversation_id=turn.conversation_id or record.conversation_id,
                   metadata={**turn.metadata, "a2a": {**client_call(turn), "task": record.document}})


def webhooks(turn: Turn) -> list[Webhook]:
    """The push notification config a message carries for its task."""
    return [webhook_of(config, turn.run_id or "") for config in client_call(turn).get("webhooks") or ()]


QUERIES_OF_TASKS = RunQueries(read=read_query, answer=answer_query, new_log=TaskLog, continues=continues,
                              continued=continued, left_tools_wait=True, webhooks=webhooks, follows=follows)


DIALECT = Dialect(
    name="a2a",
    history="delta",
    paths=("/a2a",),
    carries=frozenset({"server_tools", "interrupts", "data", "errors", "cancel", "stop_reason"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=A2ADecoder,
    new_encoder=new_encoder,
    sniff=Sniff(sniff, "an A2A request is JSON-RPC 2.0 calling SendStreamingMessage or SendMessage with "
                       "params.message"),
    sample_request=sample_request,
    judge=judge,
    capabilities=(
        Variants({V03: "delta", REST: "delta", SEND: "delta", GRPC: "delta", GRPC_SEND: "delta", JSONRPC: "delta"}),
        UpstreamTransport(frozenset({GRPC, GRPC_SEND}), grpc_calls.missing, grpc_calls.new_calls),
        WireFormats(proto_decoder),
        Discovery(path=CARD_PATH, read=read_card, document=agent_card, varies=VARIES, refusal=refusal),
        OwnErrors(error_reply),
        QUERIES_OF_TASKS,
        ProtocolHeaders(check=check_request, passed=("a2a-extensions",)),
        Settings(A2ASettings, "A2A across the gateway: its gRPC binding, and the keys that sign and check agent "
                              "cards."),
        Listener("grpc", "grpc_port", grpc_server.missing, grpc_server.start),
        *RESOURCES,
    ),
)
