"""A toy sixth dialect, written the way a real one is: JSON lines. A request is `{"session", "messages", "tools"}`
with OpenAI-like messages; a reply is `application/x-ndjson`, one event object per line, the last `end` or
`error`. It lives in the tests to prove that a dialect is one package plus one registry line
(`plugin.py` is that line), capabilities included (`capabilities.py`: a second wire format, an endpoint of its own)."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import Dialect, Likeness, Sniff

from .capabilities import CAPABILITIES
from .conformance import judge
from .decode import ToyDecoder
from .encode import ToyEncoder
from .request import build_request, parse_request, sample_request


def sniff(body: dict[str, Any]) -> Likeness:
    """Only this dialect's clients name a `session`."""
    return Likeness.OWN if "session" in body else Likeness.FOREIGN


DIALECT = Dialect(
    name="toy",
    history="full",
    paths=("/toy",),
    carries=frozenset({"server_tools", "messages", "tool_definitions", "client_tools", "errors"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=ToyDecoder,
    new_encoder=ToyEncoder,
    sniff=Sniff(sniff, "a toy request needs session and messages"),
    sample_request=sample_request,
    judge=judge,
    capabilities=CAPABILITIES,
)
