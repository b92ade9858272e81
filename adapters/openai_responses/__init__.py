"""OpenAI Responses / Open Responses: `POST /v1/responses` with `input` items, the history kept by the server
(`previous_response_id`, `conversation`), semantic events with sequence numbers; `GET`, `DELETE` and `cancel` on a
stored response; the same over a WebSocket at `/v1/responses` (`SocketMode`); `POST /v1/responses/compact`
(`compaction.py`). As an upstream, any Responses server, sent the whole history each call."""

from __future__ import annotations

from typing import Any

import orjson

from adapters.openai_common.catalog import MODELS_PATH, models
from gateway.core.capabilities import Catalog, OwnErrors
from gateway.core.codec import Dialect, Likeness, Sniff
from gateway.core.errors import GatewayError
from gateway.core.sockets import SocketMode

from .compaction import COMPACTION
from .conformance import judge
from .decode import ResponsesDecoder
from .encode import new_encoder
from .items import refusal
from .queries import QUERIES_OF_RESPONSES
from .request import build_request, parse_request, sample_request
from .socket import ResponsesSession
from .socket import refusal as socket_refusal


def sniff(body: dict[str, Any]) -> Likeness:
    """Responses clients send `input` (or continue a response) and never `messages`."""
    if "messages" in body:
        return Likeness.FOREIGN
    if "input" in body or "previous_response_id" in body:
        return Likeness.OWN if isinstance(body.get("model"), str) else Likeness.PLAUSIBLE
    return Likeness.FOREIGN


def error_reply(error: GatewayError, request: Any) -> tuple[int, bytes]:
    status, error_object = refusal(error)
    return status, orjson.dumps({"error": error_object})


DIALECT = Dialect(
    name="openai-responses",
    history="full",
    paths=("/v1/responses",),
    carries=frozenset({"messages", "reasoning", "server_tools", "interrupts", "interrupt_ids",
                       "interrupt_tool_call", "tool_definitions", "client_tools", "tool_errors", "errors",
                       "cancel", "stop_reason"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=ResponsesDecoder,
    new_encoder=new_encoder,
    sniff=Sniff(sniff, "a Responses request needs model and input"),
    sample_request=sample_request,
    judge=judge,
    capabilities=(OwnErrors(error_reply), COMPACTION, QUERIES_OF_RESPONSES, Catalog(path=MODELS_PATH, listing=models),
                  SocketMode(ResponsesSession, socket_refusal)),
)
