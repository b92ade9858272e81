"""The AG-UI 1.0 and AI SDK 7 corpora through the gateway's codecs, judged by the real clients.

- Recorded by the protocols' own writers: `tests/record_agui_corpus.py` (`ag-ui-protocol` 1.0.0's models and
  `EventEncoder`, a stream per 1.0 family) and `tests/clients/record-ai7-corpus.mjs` (`ai` 7.0.173's
  `createUIMessageStream`, a stream per family of chunks 7 added).
- Re-encoded for a client of its own dialect, a stream is what that client's real package makes of the recording:
  `@ag-ui/client`'s events, messages and state; the `ai` 7.0.173 reader's final message.
- Written for an older client, it is what that client's release reads, under its strict schema (ai 5.0.216, 6.0.230,
  7.0.31; an AG-UI client before 1.0).
- Translated into every dialect, every loss is counted under a kind the drop table of docs/mapping.md names.
"""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest
from helpers import FIXTURES, ROOT, decode, sse_payloads
from node_clients import verify_agui, verify_ai_versions

from adapters import registry
from gateway.core.conformance import Answer
from gateway.core.dropped import Dropped
from gateway.core.events import Event
from gateway.core.turn import Turn

AGUI = sorted(p.name for p in (FIXTURES / "ag-ui").glob("agui10_*.sse"))
AI7 = sorted(p.name for p in (FIXTURES / "vercel" / "ai7").glob("ai7_*.sse"))
"""In a folder of their own: the translation matrix's judges hold every other fixture to what ai 6.0.230 reads too."""


def recorded(name: str) -> bytes:
    folder = FIXTURES / "ag-ui" if name.startswith("agui10_") else FIXTURES / "vercel" / "ai7"
    return (folder / name).read_bytes()


def events_of(name: str) -> list[Event]:
    return decode("ag-ui" if name.startswith("agui10_") else "vercel", recorded(name))


def written(dialect: str, events: list[Event], client_version: str | None = None) -> tuple[bytes, dict[str, int]]:
    encoder = registry.get(dialect).new_encoder(Turn(client_version=client_version))
    return encoder.encode(events), dict(encoder.dropped)


def drop_table_kinds() -> set[str]:
    """The kinds the drop table of docs/mapping.md names."""
    page = (ROOT / "docs" / "mapping.md").read_text()
    table = page.split("| kind | client dialects | what |", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+)` \|", table, re.MULTILINE))


def test_the_corpora_cover_every_family() -> None:
    assert len(AGUI) == 10 and len(AI7) == 5
    agui_types = {orjson.loads(p)["type"] for name in AGUI for p in sse_payloads(recorded(name))}
    assert {"ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR",
            "REASONING_ENCRYPTED_VALUE"} <= agui_types
    ai7_types = {orjson.loads(p)["type"] for name in AI7 for p in sse_payloads(recorded(name)) if p != b"[DONE]"}
    assert {"tool-approval-response", "custom", "reasoning-file"} <= ai7_types


@pytest.fixture(scope="module")
def agui_seen() -> dict[str, Any]:
    streams = {}
    for name in AGUI:
        streams[f"{name}:recorded"] = recorded(name)
        streams[f"{name}:gateway"] = written("ag-ui", events_of(name), "1.0")[0]
    return verify_agui(streams)


@pytest.mark.parametrize("name", AGUI)
def test_an_ag_ui_client_sees_the_gateways_stream_as_it_sees_the_recording(name: str,
                                                                        agui_seen: dict[str, Any]) -> None:
    original, gateway = agui_seen[f"{name}:recorded"], agui_seen[f"{name}:gateway"]
    assert original["ok"], (original["error"], original["warnings"])
    assert gateway["ok"], (gateway["error"], gateway["warnings"])
    assert gateway["messages"] == original["messages"] and gateway["state"] == original["state"]
    # The same events, an encrypted value perhaps after the end of the reasoning it belongs to rather than before
    # (as the client's own compaction moves it): it attaches to the message whenever it comes.
    assert sorted(gateway["types"]) == sorted(original["types"])


@pytest.fixture(scope="module")
def ai7_seen() -> dict[str, Any]:
    streams: dict[str, tuple[bytes, str]] = {}
    for name in AI7:
        events = events_of(name)
        streams[f"{name}:recorded"] = (recorded(name), "7.0.173")
        streams[f"{name}:gateway"] = (written("vercel", events, "7.0.173")[0], "7.0.173")
        for sdk in ("5", "6", "7"):
            streams[f"{name}:{sdk}"] = (written("vercel", events, sdk)[0], sdk)
    for name in AGUI:
        for sdk in ("5", "6", "7", "7.0.173"):
            streams[f"{name}:{sdk}"] = (written("vercel", events_of(name), sdk)[0], sdk)
    return verify_ai_versions(streams)


@pytest.mark.parametrize("name", AI7)
def test_an_ai_7_client_sees_the_gateways_stream_as_it_sees_the_recording(name: str, ai7_seen: dict[str, Any]) -> None:
    original, gateway = ai7_seen[f"{name}:recorded"], ai7_seen[f"{name}:gateway"]
    assert original["ok"] and gateway["ok"], (original["error"], gateway["error"])
    assert gateway["message"] == original["message"]


@pytest.mark.parametrize(("name", "sdk"), [(name, sdk) for name in AI7 for sdk in ("5", "6", "7")]
                         + [(name, sdk) for name in AGUI for sdk in ("5", "6", "7", "7.0.173")])
def test_each_ai_release_reads_what_it_is_written(name: str, sdk: str, ai7_seen: dict[str, Any]) -> None:
    result = ai7_seen[f"{name}:{sdk}"]
    assert result["ok"], (result["package"], result["error"])


CLIENTS = [(dialect, None) for dialect in registry.DIALECTS] + [("vercel", "5"), ("vercel", "7"), ("ag-ui", "0")]
"""Every dialect's client, and the older or newer versions a dialect writes differently for."""


@pytest.mark.parametrize("name", AGUI + AI7)
@pytest.mark.parametrize(("dialect", "version"), CLIENTS)
def test_every_loss_is_counted_under_a_kind_the_drop_table_names(name: str, dialect: str, version: str | None) -> None:
    _, dropped = written(dialect, events_of(name), version)
    assert set(dropped) <= drop_table_kinds(), dropped


def test_the_drop_table_names_every_kind_an_encoder_counts() -> None:
    counted = {kind.value for kind in Dropped}  # an encoder counts under these alone (`Encoder.dropped`)
    assert counted <= drop_table_kinds(), counted - drop_table_kinds()


@pytest.fixture(scope="module")
def ai7_translated_for_ag_ui() -> dict[str, Any]:
    return verify_agui({name: written("ag-ui", events_of(name), "1.0")[0] for name in AI7})


@pytest.mark.parametrize("name", AI7)
def test_an_ag_ui_client_reads_the_ai_7_corpus_translated(name: str, ai7_translated_for_ag_ui: dict[str, Any]) -> None:
    result = ai7_translated_for_ag_ui[name]
    assert result["ok"], (result["error"], result["warnings"])
    assert result["types"][-1] == "RUN_FINISHED"


@pytest.mark.parametrize("dialect", list(registry.DIALECTS))
@pytest.mark.parametrize("name", AI7)
def test_every_dialects_judge_accepts_the_ai_7_corpus_translated(name: str, dialect: str) -> None:
    encoder = registry.get(dialect).new_encoder(Turn())  # the judge holds Vercel output to what ai 6 reads too
    body = encoder.encode(events_of(name))
    answer = Answer(encoder.status_code, encoder.headers, body)
    assert [v for v in registry.get(dialect).judge(answer) if not v.convention] == []


def test_a_vercel_client_gets_each_ag_ui_family_where_the_sdk_has_room() -> None:
    body, dropped = written("vercel", events_of("agui10_everything.sse"), "7")
    chunks = [orjson.loads(p) for p in sse_payloads(body) if p != b"[DONE]"]
    activity = [c for c in chunks if c["type"] == "data-activity"]
    assert activity[-1] == {"type": "data-activity", "id": "act-1",
                            "data": {"activityType": "plan", "content": {"status": "done"}}}
    subagent = [c for c in chunks if c["type"] == "data-subagent"]
    assert [c["data"]["status"] for c in subagent] == ["running", "success"]
    assert subagent[-1]["data"] == {"subagentRunId": "sub-x", "name": "helper", "status": "success", "result": "ok"}
    said = next(c for c in chunks if c["type"] == "text-start" and c["id"] == "m-x")
    assert said["providerMetadata"] == {"agent-gateway": {"subagentRunId": "sub-x"}}
    reasoning_end = next(c for c in chunks if c["type"] == "reasoning-end")
    assert reasoning_end["providerMetadata"] == {"agent-gateway": {"encryptedValue": "opaque"}}
    usage = next(c for c in chunks if c["type"] == "message-metadata")["messageMetadata"]["usage"]
    assert usage["reasoningTokens"] == 1 and usage["cachedInputTokens"] == 2
    assert chunks[0] == {"type": "start", "messageMetadata": {"metadata": {"traceId": "t-1"}}}
    assert dropped == {"step": 2}  # named (AG-UI) steps, as before


def test_an_eval_platform_gets_activities_subagents_and_usage_details() -> None:
    body, dropped = written("agent-respond", events_of("agui10_everything.sse"))
    reply = orjson.loads(body)
    assert reply["metadata"]["activities"] == [{"activityType": "plan", "content": {"status": "done"}}]
    assert reply["metadata"]["subagents"][0]["status"] == "success"
    assert reply["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8,
                              "completion_tokens_details": {"reasoning_tokens": 1},
                              "prompt_tokens_details": {"cached_tokens": 2}}
    assert dropped["reasoning"] and dropped["encrypted_value"] == 1


def test_an_ag_ui_client_before_1_0_gets_thinking_and_no_outcome() -> None:
    body, dropped = written("ag-ui", events_of("agui10_interrupt.sse"), "0")
    frames = [orjson.loads(p) for p in sse_payloads(body)]
    assert "protocolVersion" not in frames[0]
    assert frames[-3:-1] == [  # each interrupt as LangGraph's, its payload (or what it asks) the value
        {"type": "CUSTOM", "name": "on_interrupt", "value": '{"path":"/tmp/x"}', "rawEvent": "int-del"},
        {"type": "CUSTOM", "name": "on_interrupt", "value": '{"reason":"confirm","message":"Spend over 100 EUR?"}',
         "rawEvent": "int-budget"}]
    assert frames[-1] == {"type": "RUN_FINISHED", "threadId": "thread-corpus", "runId": "run-corpus"}
    body, dropped = written("ag-ui", events_of("agui10_encrypted.sse"), "0")
    types = [orjson.loads(p)["type"] for p in sse_payloads(body)]
    assert types[1:6] == ["THINKING_START", "THINKING_TEXT_MESSAGE_START", "THINKING_TEXT_MESSAGE_CONTENT",
                          "THINKING_TEXT_MESSAGE_END", "THINKING_END"]
    assert dropped == {"encrypted_value": 2}
