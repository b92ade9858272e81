"""Helpers for end-to-end tests: request bodies as each dialect's client sends them (from `client_bodies`, which the
benchmarks share), reading replies, and watching the relay's direct path."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import httpx
import orjson
from client_bodies import DIALECTS as DIALECTS
from client_bodies import request_body as request_body
from client_bodies import user_message as user_message
from helpers import decode, encode
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from gateway.core.events import (
    Event,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallStart,
    ToolResult,
    Usage,
)
from gateway.server.route import RouteHandler
from gateway.server.stream.relay import Relay
from gateway.upstream.http1 import Offer

if TYPE_CHECKING:
    import pytest

    from gateway.server.app import Gateway


def watch_offers(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Offer, object]]:
    """Every outcome of `Relay._offered` from now on (TAKEN: written in the upstream's read callback; DECLINED: left
    to the run's task; TAKEN_AND_WAKE: handed to it), with what was handed. For gateways served in this process."""
    seen: list[tuple[Offer, object]] = []
    offered = Relay._offered

    def watching(relay: Relay, chunk: bytes) -> Offer:
        took = offered(relay, chunk)
        seen.append((took, relay._handed_back))
        return took

    monkeypatch.setattr(Relay, "_offered", watching)
    return seen


def usage_agent() -> Starlette:
    """An AG-UI agent at /agui that reports the tokens each run used, twice (as a run over two models does):
    15 in and 7 out in all, the last model `gpt-test-mini`."""
    run = encode("ag-ui", [RunStarted(thread_id="t", run_id="r"), TextStart("m1"), TextDelta("m1", "Counted."),
                           TextEnd("m1"),
                           Usage(input_tokens=12, output_tokens=5, total_tokens=17, model="gpt-test",
                                 provider="openai"),
                           Usage(input_tokens=3, output_tokens=2, total_tokens=5, model="gpt-test-mini",
                                 provider="openai"),
                           RunFinished()])

    async def respond(request: Request) -> Response:
        return Response(run, media_type="text/event-stream")

    return Starlette(routes=[Route("/agui", respond, methods=["POST"])])


def post(client: httpx.Client, url: str, body: dict[str, Any], headers: dict[str, str] | None = None,
         **kwargs: Any) -> httpx.Response:
    headers = {"content-type": "application/json", **(headers or {})}
    return client.post(url, content=orjson.dumps(body), headers=headers, **kwargs)


class Reply:
    """A gateway reply read back with the client dialect's own decoder."""

    def __init__(self, dialect: str, response: httpx.Response) -> None:
        self.dialect = dialect
        self.response = response
        if response.status_code >= 400:
            error = orjson.loads(response.content)["error"]
            self.events: list[Event] = [RunStarted(), RunError(error["message"], code=error.get("code"))]
        else:
            self.events = decode(dialect, response.content)

    @property
    def text(self) -> str:
        return "".join(e.delta for e in self.events if isinstance(e, TextDelta))

    @property
    def tool_calls(self) -> list[str]:
        return [e.name for e in self.events if isinstance(e, ToolCallStart)]

    @property
    def results(self) -> list[str]:
        return [e.content if isinstance(e.content, str) else orjson.dumps(e.content).decode()
                for e in self.events if isinstance(e, ToolResult)]

    @property
    def error(self) -> RunError | None:
        last = self.events[-1]
        return last if isinstance(last, RunError) else None

    @property
    def finished(self) -> RunFinished | None:
        last = self.events[-1]
        return last if isinstance(last, RunFinished) else None


@contextmanager
def no_gateway_side_violation(http: httpx.Client, gateway: str, app: Gateway) -> Iterator[None]:
    """For a block of runs on routes that judge every run (`judge: {sample: 1}`): once their judges have settled,
    what the gateway wrote its clients broke no rule of their dialects."""
    before = _gateway_side_violations(http, gateway)
    yield
    judges_settled(app)
    after = _gateway_side_violations(http, gateway)
    assert after == before, f"the gateway broke its clients' rules: {sorted(set(after.items()) - set(before.items()))}"


def _gateway_side_violations(http: httpx.Client, gateway: str) -> dict[str, float]:
    """`agent_gateway_conformance_violations_total`'s samples on the gateway's own side, each by its labels."""
    return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
            for line in http.get(f"{gateway}/metrics").text.splitlines()
            if line.startswith("agent_gateway_conformance_violations_total{") and 'side="client"' in line}


def judges_settled(app: Gateway) -> None:
    """Until no judge of `app`'s routes has a run under way (it judges after a run's last byte, so a client has its
    reply first): for an app served in this process."""
    judgings = {handler.observer.judging for handler, _ in app.handlers.values()
                if isinstance(handler, RouteHandler) and handler.observer is not None
                and handler.observer.judging is not None}
    deadline = time.monotonic() + 30
    while any(judging._pending for judging in judgings):
        assert time.monotonic() < deadline, "the judges did not settle"
        time.sleep(0.01)

