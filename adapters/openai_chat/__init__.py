"""OpenAI Chat Completions: `POST /v1/chat/completions`, the whole history every call, a reply streamed as
`chat.completion.chunk`s or sent as one `chat.completion`. As an upstream, any OpenAI-compatible server (a model
server, or an agent behind the API); as a face, what every OpenAI SDK and most eval tools speak."""

from __future__ import annotations

from typing import Any

from adapters.openai_common.catalog import MODELS_PATH, models
from gateway.core.capabilities import Catalog, ClientHistory, OwnErrors
from gateway.core.codec import Dialect, Likeness, Sniff

from .conformance import judge
from .decode import ChatDecoder
from .encode import new_encoder
from .errors import error_reply
from .request import build_request, echoed, parse_request, sample_request


def sniff(body: dict[str, Any]) -> Likeness:
    """OpenAI clients name a `model` beside `messages`; none of the agent dialects does."""
    if not isinstance(body.get("messages"), list):
        return Likeness.FOREIGN
    return Likeness.OWN if isinstance(body.get("model"), str) else Likeness.PLAUSIBLE


DIALECT = Dialect(
    name="openai-chat",
    history="full",
    paths=("/v1/chat/completions",),
    carries=frozenset({"reasoning", "tool_definitions", "client_tools", "errors", "stop_reason"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=ChatDecoder,
    new_encoder=new_encoder,
    sniff=Sniff(sniff, "a Chat Completions request needs model and messages"),
    sample_request=sample_request,
    judge=judge,
    capabilities=(OwnErrors(error_reply), ClientHistory(from_run=echoed), Catalog(path=MODELS_PATH, listing=models)),
)
