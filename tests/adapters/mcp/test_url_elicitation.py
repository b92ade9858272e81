"""URL-mode elicitation (2025-11-25) both ways: a real MCPServer (`mcp` 2.3.0, `tests/peers/mcp_server.py`'s
`sign_in` tool, which asks its user to open a sign-in link with `ctx.elicit_url`) behind the gateway, served as the
2025-only server (`/legacy`) whose tool waits on the call's stream. Its question is an AG-UI interrupt carrying the
link in its payload, answered accept/decline/cancel; and, through the gateway's own `/mcp`, a URL-mode
`elicitation/create` for an SDK client that declared `elicitation.url` (the Python `Client`, and the TypeScript
`Client` told to), or a form whose message holds the link for one that takes forms only; and a 2026-07-28 client
(`Client(mode="auto")`) asked it by an `input_required` in URL mode.
Install first: `.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from e2e import Reply, post, request_body, user_message
from node_clients import run_mcp
from peers_env import MCP, PEERS_DIR, mcp_upstream, run_mcp_client
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters import registry
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.events import (
    Event,
    Interrupt,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
)
from gateway.core.turn import Message, Resume, Turn
from gateway.server.app import create_app

SIGN_IN_URL = "https://auth.example.com/authorize?client=gateway-peer"


def modern_client(url: str, plan: list[dict[str, Any]]) -> dict[str, Any]:
    """`mcp` 2.3.0's `Client(mode="auto")` (`tests/peers/mcp_modern_client.py`): what it printed."""
    done = subprocess.run([str(MCP.python), str(PEERS_DIR / "mcp_modern_client.py"), url, json.dumps(plan)],
                          cwd=PEERS_DIR, capture_output=True, text=True, timeout=120, check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    said = [line for line in done.stderr.splitlines() if line.strip()]
    return {"opened": lines[0] if lines else {}, "steps": lines[1:],
            "error": (said[-1] if said else f"exited with {done.returncode}") if done.returncode else None}


class Gateway:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30)

    def send(self, body: dict[str, Any], route: str = "sign-in") -> Reply:
        return Reply("ag-ui", post(self.http, f"{self.url}/{route}/in", body))

    def ask(self, conversation: str, route: str = "sign-in", text: str = "deploy") -> Interrupt:
        reply = self.send(request_body("ag-ui", [user_message("ag-ui", text)], conversation), route)
        assert reply.response.status_code == 200, reply.response.text
        interrupts = [e for e in reply.events if isinstance(e, Interrupt)]
        assert len(interrupts) == 1, reply.events
        assert reply.finished is not None and reply.finished.outcome == "interrupt"
        return interrupts[0]


CHECKOUT_URL = "https://pay.example.com/checkout/7"


def paying_agent() -> Starlette:
    """An AG-UI agent (the dialect's own parser and encoder) whose interrupt's payload is a link to open; the answer
    it gets, in words."""
    dialect = registry.get("ag-ui")

    async def run(request: Request) -> Response:
        turn = dialect.parse_request(orjson.loads(await request.body()))
        events: list[Event] = [RunStarted(thread_id=turn.conversation_id or "t", run_id="r")]
        if turn.resume:
            said = "; ".join(f"{r.status} {orjson.dumps(r.payload).decode()}" for r in turn.resume)
            events += [TextStart("m"), TextDelta("m", said), TextEnd("m"), RunFinished()]
        else:
            events += [Interrupt("pay-1", reason="payment", message="Pay to go on", payload=CHECKOUT_URL),
                       RunFinished(outcome="interrupt")]
        encoder = dialect.new_encoder(turn)
        return Response(encoder.encode(events), encoder.status_code, encoder.headers)

    return Starlette(routes=[Route("/agui", run, methods=["POST"])])


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with mcp_upstream() as server, Served(paying_agent()) as paying:
        routes = [{"name": "sign-in", "paths": ["/sign-in/in"], "client_dialects": ["ag-ui", "mcp"],
                   "upstream": {"url": f"{server}/legacy/mcp", "dialect": "mcp", "agent": "sign_in"}},
                  {"name": "pay", "paths": ["/pay/in"], "client_dialects": ["mcp"],
                   "upstream": {"url": f"{paying.url}/agui", "dialect": "ag-ui"}}]
        routes.append({"name": "open-link", "paths": ["/open-link/in"], "client_dialects": ["ag-ui"],
                       "upstream": {"url": f"{server}/mcp", "dialect": "mcp", "agent": "open_link"}})
        routes += [{"name": f"{era}pay-first", "paths": [f"/{era}pay-first/in"], "client_dialects": ["ag-ui"],
                    "upstream": {"url": f"{server}{path}", "dialect": "mcp", "agent": "pay"}}
                   for era, path in (("", "/mcp"), ("legacy-", "/legacy/mcp"))]
        config = GatewayConfig.model_validate({"routes": routes, "keepalive_seconds": 0.5})
        with Served(create_app(config, store=MemoryStore())) as served:
            gateway = Gateway(served.url)
            yield gateway
            gateway.http.close()


def test_an_mcp_servers_url_elicitation_is_an_interrupt_carrying_the_link_and_the_servers_message(
        gateway: Gateway) -> None:
    interrupt = gateway.ask("link-1")
    assert interrupt.message == "Sign in to go on with deploy"
    assert interrupt.payload == {"url": SIGN_IN_URL, "message": "Sign in to go on with deploy",
                                 "elicitationId": "signin-6"}
    assert interrupt.response_schema is None
    assert interrupt.upstream_state is None  # the held call's id stays in the gateway


@pytest.mark.parametrize(("payload", "status", "said"), [
    ({"action": "accept"}, "resolved", "deploy: signed in"),
    ("done", "resolved", "deploy: signed in"),
    (True, "resolved", "deploy: signed in"),
    ({"action": "decline"}, "resolved", "deploy: declined"),
    ("no", "resolved", "deploy: declined"),
    (None, "cancelled", "deploy: cancelled"),
])
def test_an_ag_ui_answer_to_the_link_is_the_url_elicitations_accept_decline_or_cancel(
        gateway: Gateway, payload: Any, status: str, said: str) -> None:
    conversation = f"link-{status}-{payload!r}"
    interrupt = gateway.ask(conversation)
    answer = request_body("ag-ui", [user_message("ag-ui", "deploy")], conversation,
                          resume=[{"interruptId": interrupt.id, "status": status, "payload": payload}])
    done = gateway.send(answer)
    assert done.response.status_code == 200, done.response.text
    assert done.text == said


@pytest.mark.parametrize(("action", "said"), [("accept", "deploy: signed in"), ("decline", "deploy: declined"),
                                              ("cancel", "deploy: cancelled")])
def test_the_python_sdk_client_is_asked_to_open_the_link_by_url_mode_and_its_answer_reaches_the_server(
        gateway: Gateway, action: str, said: str) -> None:
    run = run_mcp_client(f"{gateway.url}/mcp", [{"call": "sign-in", "arguments": {"message": "deploy"},
                                                 "elicit": {"action": action}}])
    assert run.error is None, run.error
    step = run.steps[-1]
    assert step["elicited"] == [{"mode": "url", "message": "Sign in to go on with deploy", "url": SIGN_IN_URL,
                                 "elicitationId": "signin-6"}]
    assert step["content"][-1].endswith(said), step


@pytest.mark.parametrize(("links", "asked_by_url"), [(True, True), (False, False)])
def test_the_typescript_client_gets_the_link_by_url_mode_or_in_a_form_when_it_takes_forms_only(
        gateway: Gateway, links: bool, asked_by_url: bool) -> None:
    elicit: dict[str, Any] = {"action": "accept", "links": links}
    if not links:
        elicit["content"] = {"answer": "done"}
    run = run_mcp(f"{gateway.url}/mcp", [{"call": "sign-in", "arguments": {"message": "deploy"}, "elicit": elicit}])
    assert run["error"] is None, run["error"]
    step = run["steps"][-1]
    [asked] = step["elicited"]
    if asked_by_url:
        assert asked == {"mode": "url", "message": "Sign in to go on with deploy", "url": SIGN_IN_URL,
                         "elicitationId": "signin-6"}
    else:
        assert asked["mode"] == "form"
        assert SIGN_IN_URL in asked["message"] and "Sign in to go on with deploy" in asked["message"]
    assert step["content"][-1].endswith("deploy: signed in"), step


@pytest.mark.parametrize(("action", "answered"), [("accept", 'resolved {"action":"accept"}'),
                                                  ("decline", 'resolved {"action":"decline"}'),
                                                  ("cancel", "cancelled null")])
def test_any_agents_interrupt_whose_payload_is_a_link_is_asked_by_url_mode(gateway: Gateway, action: str,
                                                                           answered: str) -> None:
    run = run_mcp_client(f"{gateway.url}/mcp", [{"call": "pay", "arguments": {"message": "buy"},
                                                 "elicit": {"action": action}}])
    assert run.error is None, run.error
    step = run.steps[-1]
    [asked] = step["elicited"]
    assert (asked["mode"], asked["message"], asked["url"]) == ("url", "Pay to go on", CHECKOUT_URL)
    assert step["content"][-1].endswith(answered), step


@pytest.mark.parametrize(("payload", "status", "said"), [
    ("done", "resolved", "open: accept"), ({"action": "decline"}, "resolved", "open: decline"),
    (None, "cancelled", "open: cancel")])
def test_a_2026_servers_input_required_in_url_mode_is_an_interrupt_and_the_retry_carries_the_action(
        gateway: Gateway, payload: Any, status: str, said: str) -> None:
    conversation = f"open-{status}-{payload!r}"
    interrupt = gateway.ask(conversation, "open-link", "open")
    assert interrupt.message == "Open this to go on with open"
    assert isinstance(interrupt.payload, dict)  # mcp 2.3.0 writes 2026-07-28's URL request without its elicitationId
    assert (interrupt.payload["url"], interrupt.payload["message"]) == (SIGN_IN_URL, "Open this to go on with open")
    answer = request_body("ag-ui", [user_message("ag-ui", "open")], conversation,
                          resume=[{"interruptId": interrupt.id, "status": status, "payload": payload}])
    done = gateway.send(answer, "open-link")
    assert done.response.status_code == 200, done.response.text
    assert done.text == said


PAY_URL = "https://pay.example.com/checkout?for=gateway-peer"


@pytest.mark.parametrize("era", ["", "legacy-"])
def test_a_servers_url_elicitation_required_error_is_an_interrupt_and_its_answer_makes_the_call_again(
        gateway: Gateway, era: str) -> None:
    text = f"order {era}42"
    interrupt = gateway.ask(f"pay-{era}", f"{era}pay-first", text)
    assert interrupt.message == f"Pay for {text} first"
    assert isinstance(interrupt.payload, dict) and interrupt.payload["url"] == PAY_URL
    answer = request_body("ag-ui", [user_message("ag-ui", text)], f"pay-{era}",
                          resume=[{"interruptId": interrupt.id, "status": "resolved", "payload": "done"}])
    done = gateway.send(answer, f"{era}pay-first")
    assert done.response.status_code == 200, done.response.text
    assert done.text == f"{text}: paid"


def test_a_client_that_does_not_elicit_reads_the_link_in_the_question(gateway: Gateway) -> None:
    run = run_mcp_client(f"{gateway.url}/mcp", [{"call": "sign-in", "arguments": {"message": "deploy"}}])
    assert run.error is None, run.error
    step = run.steps[-1]
    assert "elicited" not in step
    assert f"Sign in to go on with deploy\n{SIGN_IN_URL}" in step["content"][-1]
    [interrupt] = step["structured"]["interrupts"]
    assert interrupt["url"] == SIGN_IN_URL


@pytest.mark.parametrize(("action", "said"), [("accept", "deploy: signed in"), ("decline", "deploy: declined"),
                                              ("cancel", "deploy: cancelled")])
def test_a_2026_client_is_asked_to_open_the_link_by_an_input_required_in_url_mode(gateway: Gateway, action: str,
                                                                                  said: str) -> None:
    run = modern_client(f"{gateway.url}/mcp", [{"call": "sign-in", "arguments": {"message": "deploy"},
                                                "elicit": [{"action": action}]}])
    assert run["error"] is None, run["error"]
    assert run["opened"]["protocolVersion"] == "2026-07-28"
    step = run["steps"][-1]
    assert step["elicited"] == [{"message": "Sign in to go on with deploy", "requestedSchema": None, "mode": "url",
                                 "url": SIGN_IN_URL}]
    assert step["content"][-1].endswith(said), step


# The pieces on their own: 2026-07-28's input_required by URL, and what the gateway refuses to relay.

def asked(result: dict[str, Any]) -> list[Event]:
    """What the MCP decoder makes of a 2026-07-28 `tools/call` answered with `result`."""
    decoder = registry.get("mcp").new_decoder()
    decoder.sent(registry.get("mcp").build_request(Turn([Message("user", "deploy")], agent="sign_in"), "2026-07-28"))
    return decoder.feed(orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": result})) + decoder.close()


BY_URL = {"method": "elicitation/create", "params": {"mode": "url", "message": "Pay first", "url": SIGN_IN_URL,
                                                     "elicitationId": "pay-1"}}


@pytest.mark.parametrize(("payload", "status", "action"), [
    ({"action": "accept", "content": {"x": 1}}, "resolved", "accept"), ("yes", "resolved", "accept"),
    (False, "resolved", "decline"), (None, "cancelled", "cancel")])
def test_a_2026_url_question_is_retried_with_the_action_alone(payload: Any, status: str, action: str) -> None:
    events = asked({"resultType": "input_required", "inputRequests": {"k": BY_URL}, "requestState": "s"})
    interrupt = next(e for e in events if isinstance(e, Interrupt))
    assert interrupt.payload == {"url": SIGN_IN_URL, "message": "Pay first", "elicitationId": "pay-1"}
    resume = Resume(interrupt.id, status, payload=payload, upstream_state=interrupt.upstream_state)  # type: ignore[arg-type]
    retry = orjson.loads(registry.get("mcp").build_request(Turn([], agent="sign_in", resume=[resume]),
                                                           "2026-07-28").body)
    assert retry["params"]["inputResponses"] == {"k": {"action": action}}
    assert retry["params"]["requestState"] == "s"


@pytest.mark.parametrize("url", [None, "javascript:alert(1)", "https://x/" + "a" * 9000, "https://a b"])
def test_a_url_question_without_a_link_to_open_is_the_runs_error(url: Any) -> None:
    question = {"method": "elicitation/create", "params": {"mode": "url", "message": "Open", "url": url}}
    events = asked({"resultType": "input_required", "inputRequests": {"k": question}, "requestState": "s"})
    assert not any(isinstance(e, Interrupt) for e in events)
    assert any(isinstance(e, RunError) and "http(s) URL" in e.message for e in events)


@pytest.mark.parametrize("data", [None, {"elicitations": []}, {"elicitations": [{"mode": "url", "url": "ftp://x"}]},
                                  {"elicitations": [BY_URL["params"]] * 17}])
def test_a_url_elicitation_required_error_without_links_to_open_is_the_runs_error(data: Any) -> None:
    decoder = registry.get("mcp").new_decoder()
    decoder.sent(registry.get("mcp").build_request(Turn([Message("user", "deploy")], agent="pay")))
    error = {"code": -32042, "message": "URL elicitation required", **({"data": data} if data else {})}
    events = decoder.feed(orjson.dumps({"jsonrpc": "2.0", "id": 1, "error": error})) + decoder.close()
    assert not any(isinstance(e, Interrupt) for e in events)
    assert isinstance(events[-1], RunError)
