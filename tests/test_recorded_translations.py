"""Every recorded stream, decoded and re-encoded into every dialect, judged by that dialect's real client.

- AG-UI output runs through `@ag-ui/client` 1.0.0's own pipeline (zod schemas, chunk expansion, verifyEvents) and
  the `ag-ui-protocol` 1.0.0 models, with no client warning allowed;
- Vercel output through `ai` 7.0.173 (`uiMessageChunkSchema` + `readUIMessageStream`) and the strict `ai` 6.0.230,
  which rejects any key outside the schema;
- AG-Kit output through the event models of the real server, `cloudbase-agent-server` 0.1.1;
- agent-respond output through the eval platform's `AgentResponse` contract;
- every dialect's output, any dialect the registry holds, through that dialect's own judge (what `agent-gateway
  check` holds an agent to).
"""

from __future__ import annotations

import warnings
from typing import Any

import orjson
import pytest
from ag_ui.core import Event as AguiEvent
from helpers import FAILING, decode, encode, fixture_dialect, fixtures, read_fixture, sse_payloads
from node_clients import verify_agui, verify_vercel
from pydantic import TypeAdapter

from adapters import registry
from adapters.agent_respond.contract import AgentResponse
from gateway.core.conformance import Answer
from gateway.core.events import Event, RunError

with warnings.catch_warnings():  # the 0.1.1 server still uses pydantic's class-based config
    warnings.simplefilter("ignore", DeprecationWarning)
    from cloudbase_agent.server.send_message.models import SendMessageEvent

NAMES = fixtures()
AGUI_EVENT = TypeAdapter(AguiEvent)
AGKIT_EVENT = TypeAdapter(SendMessageEvent)


def translated(target: str) -> dict[str, tuple[int, bytes]]:
    out = {}
    for name in NAMES:
        events = decode(fixture_dialect(name), read_fixture(name))
        encoder = registry.get(target).new_encoder(None)
        body = encoder.encode(events)
        out[name] = (encoder.status_code, body)
    return out


@pytest.fixture(scope="module")
def agui_results() -> dict[str, Any]:
    return verify_agui({name: body for name, (_, body) in translated("ag-ui").items()})


@pytest.fixture(scope="module")
def vercel_results() -> dict[str, Any]:
    return verify_vercel({name: body for name, (_, body) in translated("vercel").items()})


@pytest.mark.parametrize("name", NAMES)
def test_every_fixture_decodes_to_one_run_with_the_expected_ending(name: str) -> None:
    events = decode(fixture_dialect(name), read_fixture(name))
    terminal = [e for e in events if type(e).__name__ in ("RunFinished", "RunError")]
    assert len(terminal) == 1 and events[-1] is terminal[0]
    assert isinstance(events[-1], RunError) == (name in FAILING)


@pytest.mark.parametrize("name", NAMES)
def test_ag_ui_client_accepts_the_translation(name: str, agui_results: dict[str, Any]) -> None:
    result = agui_results[name]
    assert result["ok"], (result["error"], result["warnings"])
    assert result["types"][-1] == ("RUN_ERROR" if name in FAILING else "RUN_FINISHED")


@pytest.mark.parametrize("name", NAMES)
def test_ag_ui_protocol_models_accept_every_event(name: str) -> None:
    _, body = translated_one("ag-ui", name)
    for payload in sse_payloads(body):
        AGUI_EVENT.validate_json(payload)
        assert None not in orjson.loads(payload).values()  # the JS client rejects null for an optional field


@pytest.mark.parametrize("name", NAMES)
def test_vercel_clients_accept_the_translation(name: str, vercel_results: dict[str, Any]) -> None:
    result = vercel_results[name]
    assert result["ok"], (result["error"], result["strict_error"])
    assert result["done"]
    assert (result["in_band_error"] is not None) == (name in FAILING)


@pytest.mark.parametrize("name", NAMES)
def test_ag_kit_server_models_accept_the_translation(name: str) -> None:
    _, body = translated_one("ag-kit", name)
    payloads = sse_payloads(body)
    assert payloads[-1] == b"[DONE]" and payloads.count(b"[DONE]") == 1
    events = [AGKIT_EVENT.validate_json(p) for p in payloads[:-1]]
    errors = [e for e in events if e.type == "error"]
    assert len(errors) == (1 if name in FAILING else 0)


@pytest.mark.parametrize("name", NAMES)
def test_agent_respond_contract_accepts_the_translation(name: str) -> None:
    status, body = translated_one("agent-respond", name)
    if name in FAILING:
        assert status in (502, 504)
        assert orjson.loads(body)["error"]["message"]
        return
    assert status == 200
    response = AgentResponse.model_validate_json(body)
    assert response.messages == [] or response.messages[-1].role == "assistant"


@pytest.mark.parametrize("target", list(registry.DIALECTS))
@pytest.mark.parametrize("name", NAMES)
def test_every_dialects_judge_accepts_the_translation(target: str, name: str) -> None:
    encoder = registry.get(target).new_encoder(None)
    body = encoder.encode(decode(fixture_dialect(name), read_fixture(name)))
    answer = Answer(encoder.status_code, encoder.headers, body)
    assert [v for v in registry.get(target).judge(answer) if not v.convention] == []


@pytest.mark.parametrize("name", NAMES)
def test_re_encoding_in_its_own_dialect_gives_an_equivalent_stream(name: str) -> None:
    from test_properties import semantics

    dialect = fixture_dialect(name)
    events = decode(dialect, read_fixture(name))
    assert semantics(decode(dialect, encode(dialect, events)), dialect) == semantics(events, dialect)


def translated_one(target: str, name: str) -> tuple[int, bytes]:
    events: list[Event] = decode(fixture_dialect(name), read_fixture(name))
    encoder = registry.get(target).new_encoder(None)
    body = encoder.encode(events)
    return encoder.status_code, body
