"""A2A (Agent2Agent) 1.0, and 0.3 where still common: JSON-RPC over HTTP, a task per run, an agent card to find
the agent by. As an upstream the gateway calls `SendStreamingMessage` (or `SendMessage`, or the HTTP+JSON binding,
as the card says); as a server it answers both on JSON-RPC and on HTTP+JSON (`rest.py`), the requests about tasks
(`queries.py`), and publishes a card of its own (`card.py`).

```
request.py   a client's request to a turn; a turn to an upstream's request     versions.py  A2A-Version
encode.py    canonical events to a task's responses (streamed, or one body)   errors.py    JSON-RPC errors
grpc_server.py  the gRPC binding, served; grpc_wire.py its stream responses; grpc_errors.py its statuses; proto.py
             the protobuf schema (proto_schema.py, generated)
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

from gateway.core.capabilities import (
    Discovery,
    Endpoint,
    Listener,
    OwnErrors,
    ProtocolHeaders,
    Settings,
    Variants,
)
from gateway.core.codec import Dialect, Likeness, Sniff
from gateway.core.encoding import Encoder
from gateway.core.queries import RunQueries, RunRecord, Webhook
from gateway.core.turn import Turn

from . import encode, grpc_server
from .card import VARIES, agent_card
from .conformance import judge
from .decode import A2ADecoder
from .document import TaskLog
from .errors import error_reply
from .grpc_wire import A2AProtoStreamEncoder, wants_proto
from .push import webhook_of
from .queries import answer_query, read_query
from .request import build_request, parse_request, sample_request
from .rest import RESOURCES
from .settings import A2ASettings
from .updates import client_call
from .versions import check_request
from .wire import METHODS, QUERIES, REST, SEND, V03

CARD_PATH = "/.well-known/agent-card.json"


def sniff(body: dict[str, Any]) -> Likeness:
    """A2A's clients send JSON-RPC 2.0; no other dialect does."""
    if body.get("jsonrpc") != "2.0":
        return Likeness.FOREIGN
    method = body.get("method")
    return Likeness.OWN if isinstance(method, str) and (method in METHODS or method in QUERIES) else \
        Likeness.PLAUSIBLE


def read_card(card: Any, url: str) -> Endpoint | None:
    """The interface to call, best first: JSON-RPC 1.0 (`SendMessage` if the agent does not stream), HTTP+JSON
    1.0, JSON-RPC 0.3. A card without `supportedInterfaces` is 0.3's: its `url` and `preferredTransport`."""
    if not isinstance(card, dict):
        return None
    capabilities = card.get("capabilities")
    streaming = not (isinstance(capabilities, dict) and capabilities.get("streaming") is False)
    offered: dict[tuple[str, str], str] = {}
    for interface in card.get("supportedInterfaces") or ():
        if isinstance(interface, dict) and isinstance(interface.get("url"), str):
            key = (str(interface.get("protocolBinding", "")).upper(), str(interface.get("protocolVersion", "")))
            offered.setdefault(key, interface["url"])
    if isinstance(card.get("url"), str):
        version = str(card.get("protocolVersion") or "0.3")
        offered.setdefault((str(card.get("preferredTransport") or "JSONRPC").upper(), version), card["url"])
    for key, variant in ((("JSONRPC", "1.0"), None if streaming else SEND), (("HTTP+JSON", "1.0"), REST),
                         (("JSONRPC", "0.3"), V03)):
        if key in offered:
            return Endpoint(offered[key], variant)
    return None


def new_encoder(request: Turn | None = None) -> Encoder:
    """The reply the request asked for (`encode.new_encoder`); a stream for the gRPC listener in protobuf."""
    if client_call(request).get("stream") is not False and wants_proto(request):
        return A2AProtoStreamEncoder(request)
    return encode.new_encoder(request)


def refusal(card: Any, settings: A2ASettings | None) -> str | None:
    """An upstream's card refused by `a2a.trusted_card_keys` (`signing.py`)."""
    return None if settings is None else settings.refusal(card)


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
                              continued=continued, left_tools_wait=True, webhooks=webhooks)


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
        Variants({V03: "delta", REST: "delta", SEND: "delta"}),
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
