"""LangGraph's server API (the Agent Protocol as LangGraph serves it): assistants, threads that keep their history,
and runs streamed in the stream modes a client asks for. As an upstream the gateway runs the route's assistant on
a thread per conversation (`POST /threads/{id}/runs/stream`), answers interrupts with `command.resume`, cancels a
run its client abandons and joins one whose connection broke; as a server it takes the same calls from
`langgraph-sdk` and `@langchain/langgraph-sdk`.

```
request.py     a client's run to a turn; a turn to an upstream's run        messages.py    LangChain messages
decode.py      a run stream to canonical events; reading.py its messages    interrupts.py  `__interrupt__`
encode.py      canonical events to a run stream, in the modes asked         conformance.py the judge
replies.py     a background run's `Run` at once; a waited run's values
shapes.py      the LangChain objects the encoder writes messages as
resources.py   the SDKs' calls under the server's URL                       queries.py     threads, runs, assistants
threads.py     `Thread`, `ThreadState`, `Run`, `Assistant`; a run's log
```
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.capabilities import OwnErrors, WholeHistory
from gateway.core.codec import Dialect, Likeness, Sniff
from gateway.core.errors import GatewayError
from gateway.core.queries import RunQueries

from .conformance import judge
from .decode import LangGraphDecoder
from .queries import answer_query, follows, read_query
from .replies import new_encoder
from .request import build_request, parse_request, sample_request
from .resources import RESOURCES
from .threads import RunLog


def sniff(body: dict[str, Any]) -> Likeness:
    """A LangGraph client names the assistant it runs; no other dialect's does."""
    if not isinstance(body.get("assistant_id"), str):
        return Likeness.FOREIGN
    return Likeness.OWN if any(key in body for key in ("input", "command", "stream_mode")) else Likeness.PLAUSIBLE


def error_reply(error: GatewayError, request: Any) -> tuple[int, bytes]:
    """LangGraph's `ErrorResponse` (`detail`, which the SDKs show), beside the gateway's own error object."""
    return error.status, orjson.dumps({"detail": error.message, **error.to_json()})


QUERIES_OF_RUNS = RunQueries(read=read_query, answer=answer_query, new_log=RunLog, continues=lambda turn: None,
                             continued=lambda turn, record: turn, follows=follows)
"""Each run is its own: a run after an interrupt is a new run on the thread, not the old one continued."""


DIALECT = Dialect(
    name="langgraph",
    history="delta",
    paths=("/langgraph",),
    carries=frozenset({"messages", "reasoning", "state", "data", "interrupts", "interrupt_ids", "server_tools",
                       "tool_definitions", "client_tools", "tool_errors", "errors", "cancel"}),
    parse_request=parse_request,
    build_request=build_request,
    new_decoder=LangGraphDecoder,
    new_encoder=new_encoder,
    sniff=Sniff(sniff, "a LangGraph run is {assistant_id, input: {messages}, stream_mode}, as "
                       "POST /threads/{id}/runs/stream takes it"),
    sample_request=sample_request,
    judge=judge,
    capabilities=(QUERIES_OF_RUNS, WholeHistory(), *RESOURCES, OwnErrors(error_reply)),
)
