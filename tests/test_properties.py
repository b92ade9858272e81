"""Properties every codec keeps, checked with hypothesis:

- any split of a byte stream into chunks gives the same events;
- decode(encode(events)) keeps what the dialect can carry;
- no bytes and no JSON, however broken, make a decoder raise, and every stream still ends in one terminal event.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from helpers import decode, decode_chunks, encode, fixture_dialect, fixtures, read_fixture
from hypothesis import given
from hypothesis import strategies as st

from adapters import registry
from gateway.core.codec import as_text
from gateway.core.decoding import JsonSSEDecoder
from gateway.core.events import (
    Data,
    Event,
    Interrupt,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StateSnapshot,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.repair import RunRepair

DIALECTS = list(registry.DIALECTS)
SSE_JSON_DIALECTS = [name for name, d in registry.DIALECTS.items() if isinstance(d.new_decoder(), JsonSSEDecoder)]


def semantics(events: list[Event], dialect: str = "ag-ui") -> dict[str, Any]:
    """What a client of `dialect` can tell apart in a run, ids aside."""
    carries = registry.get(dialect).carries
    texts: list[str] = []
    text_by_id: dict[str, int] = {}
    reasoning: list[str] = []
    tools: dict[str, list[str]] = {}
    view: dict[str, Any] = {"texts": texts, "tools": tools, "results": [], "reasoning": reasoning, "data": [],
                            "state": [], "interrupts": [], "terminal": None}
    for e in events:
        if isinstance(e, TextStart):
            text_by_id[e.message_id] = len(texts)
            texts.append("")
        elif isinstance(e, TextDelta):
            texts[text_by_id[e.message_id]] += e.delta
        elif isinstance(e, ReasoningDelta) and "reasoning" in carries:
            reasoning.append(e.delta)
        elif isinstance(e, ToolCallStart):
            tools[e.tool_call_id] = [e.name, ""]
        elif isinstance(e, ToolCallArgs):
            tools[e.tool_call_id][1] += e.delta
        elif isinstance(e, ToolResult):
            # A result that reads as JSON is the same result however it is spelled ("0E0", "0\r" and 0.0): dialects
            # that carry any JSON carry it as a value.
            view["results"].append((e.tool_call_id, _json(as_text(e.content)), e.is_error and "tool_errors" in carries))
        elif isinstance(e, Data) and "data" in carries:
            view["data"].append((e.name, e.data))
        elif isinstance(e, StateSnapshot | StateDelta) and "state" in carries:
            before = view["state"][-1] if view["state"] else StateSnapshot({})
            if isinstance(e, StateSnapshot) and isinstance(before, StateSnapshot) and e.snapshot == before.snapshot:
                continue  # the same state again (or an empty one first): nothing a client can tell apart
            view["state"].append(e)
        elif isinstance(e, Interrupt) and "interrupts" in carries:
            view["interrupts"].append((e.id if "interrupt_ids" in carries else None,
                                       e.tool_call_id if "interrupt_tool_call" in carries else None))
        elif isinstance(e, RunFinished):
            view["terminal"] = ("finished", e.outcome if "cancel" in carries or e.outcome != "cancelled" else "success",
                                e.stop_reason if "stop_reason" in carries else None)
        elif isinstance(e, RunError):
            view["terminal"] = ("error", e.message)
    if "server_tools" not in carries:  # the tools the agent ran itself are not shown: only the client's calls
        ran = {call for call, _, _ in view["results"]}
        view["results"] = []
        for call in ran:
            tools.pop(call, None)
    view["texts"] = [t for t in texts if t]
    if "messages" not in carries:  # no message boundaries on the wire: only the words survive, and a paragraph
        view["texts"] = "".join(texts).replace("\n\n", "")  # break may stand between two (Chat Completions)
    for call in tools.values():
        call[1] = _json(call[1])
    if "reasoning" in carries:
        view["reasoning"] = "".join(reasoning)
    return view


def _json(text: str) -> Any:
    try:
        return orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        return text


# -- any split gives the same events


@pytest.mark.parametrize("name", fixtures())
@given(data=st.data())
def test_any_split_of_a_stream_gives_the_same_events(name: str, data: st.DataObject) -> None:
    body = read_fixture(name)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(body)), max_size=12)))
    chunks = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    dialect = fixture_dialect(name)
    assert semantics(decode_chunks(dialect, chunks)) == semantics(decode(dialect, body))


def test_byte_at_a_time_gives_the_same_events() -> None:
    for name in fixtures():
        dialect = fixture_dialect(name)
        body = read_fixture(name)
        assert semantics(decode(dialect, body, chunk_size=1)) == semantics(decode(dialect, body)), name


# -- decode(encode(events)) keeps the events


_text = st.text(min_size=1, max_size=12)
_json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def runs(draw: st.DrawFn, dialect: str) -> list[Event]:
    """A well formed run using only what `dialect` carries."""
    carries = registry.get(dialect).carries
    blocks = ["text", "tool"] + [b for b in ("reasoning", "data", "state") if b in carries]
    events: list[Event] = [RunStarted(thread_id="thread", run_id="run")]
    last_tool: str | None = None
    for index in range(draw(st.integers(0, 5))):
        block = draw(st.sampled_from(blocks))
        if block == "text":
            message_id = f"m{index}"
            events.append(TextStart(message_id))
            events += [TextDelta(message_id, d) for d in draw(st.lists(_text, min_size=1, max_size=4))]
            events.append(TextEnd(message_id))
        elif block == "tool":
            call_id, args = f"c{index}", orjson.dumps(draw(st.dictionaries(st.text(max_size=5), _json_value,
                                                                            max_size=3))).decode()
            cut = draw(st.integers(0, len(args)))
            events += [ToolCallStart(call_id, draw(st.from_regex(r"[a-z_]{1,10}", fullmatch=True)))]
            events += [ToolCallArgs(call_id, part) for part in (args[:cut], args[cut:]) if part]
            events.append(ToolCallEnd(call_id))
            last_tool = call_id
            if "client_tools" not in carries or draw(st.booleans()):
                error = "tool_errors" in carries and draw(st.booleans())
                events.append(ToolResult(call_id, draw(_text), is_error=error))
                last_tool = None
        elif block == "reasoning":
            message_id = f"r{index}"
            events += [ReasoningStart(message_id), ReasoningDelta(message_id, draw(_text)), ReasoningEnd(message_id)]
        elif block == "data":
            events.append(Data(draw(st.from_regex(r"[a-z]{1,8}", fullmatch=True)), draw(_json_value)))
        elif block == "state":
            events.append(StateSnapshot(draw(st.dictionaries(st.text(max_size=5), _json_value, max_size=3))))
    endings = {"errors": "error", "interrupts": "interrupt", "cancel": "cancel", "stop_reason": "cut"}
    ending = draw(st.sampled_from(["finish"] + [e for feature, e in endings.items() if feature in carries]))
    if ending == "interrupt":
        tool = last_tool if "interrupt_tool_call" in carries and draw(st.booleans()) else None
        events.append(Interrupt("int-1", reason="approval", payload=draw(_json_value), tool_call_id=tool))
        events.append(RunFinished(outcome="interrupt"))
    elif ending == "error":
        events.append(RunError(draw(_text)))
    elif ending == "cut":
        events.append(RunFinished(stop_reason=draw(st.sampled_from(["length", "content_filter"]))))
    else:
        events.append(RunFinished(outcome="cancelled" if ending == "cancel" else "success"))
    return events


@pytest.mark.parametrize("dialect", DIALECTS)
@given(data=st.data())
def test_decode_of_encode_keeps_what_the_dialect_carries(dialect: str, data: st.DataObject) -> None:
    events = well_formed(data.draw(runs(dialect)))
    assert semantics(decode(dialect, encode(dialect, events)), dialect) == semantics(events, dialect)


def well_formed(events: list[Event]) -> list[Event]:
    """What a decoder hands an encoder: the events after `RunRepair`."""
    repair, out = RunRepair(), []
    for event in events:
        repair.push(event, out)
    return out


# -- nothing breaks a decoder


def _ends_in_one_terminal(events: list[Event]) -> bool:
    terminals = [e for e in events if isinstance(e, RunFinished | RunError)]
    return len(terminals) == 1 and events[-1] is terminals[0] and isinstance(events[0], RunStarted)


@pytest.mark.parametrize("dialect", DIALECTS)
@given(chunks=st.lists(st.binary(max_size=64), max_size=8))
def test_random_bytes_never_raise_and_still_end_the_run(dialect: str, chunks: list[bytes]) -> None:
    assert _ends_in_one_terminal(decode_chunks(dialect, chunks))


_TYPES = ["RUN_STARTED", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "TOOL_CALL_RESULT", "RUN_FINISHED", "CUSTOM",
          "TEXT_MESSAGE_CHUNK", "TOOL_CALL_CHUNK", "MESSAGES_SNAPSHOT", "STATE_DELTA", "text", "tool-call-start",
          "tool-call-args", "tool-result", "interrupt", "error", "text-start", "text-delta", "tool-input-start",
          "tool-input-available", "tool-output-available", "data-operation", "data-interrupt", "finish", "start"]
_FIELDS = ["messageId", "delta", "toolCallId", "toolCallName", "content", "id", "outcome", "result", "name",
           "value", "messages", "data", "input", "output", "toolName", "errorText", "error", "payload"]


@pytest.mark.parametrize("dialect", SSE_JSON_DIALECTS)
@given(frames=st.lists(st.fixed_dictionaries({"type": st.sampled_from(_TYPES) | _json_value},
                                             optional={f: _json_value for f in _FIELDS}), max_size=10),
       done=st.booleans())
def test_structured_garbage_never_raises_and_every_encoder_takes_the_result(
    dialect: str, frames: list[dict[str, Any]], done: bool
) -> None:
    body = b"".join(b"data: " + orjson.dumps(f) + b"\n\n" for f in frames) + (b"data: [DONE]\n\n" if done else b"")
    events = decode(dialect, body)
    assert _ends_in_one_terminal(events)
    for target in registry.DIALECTS.values():
        target.new_encoder(None).encode(events)


@pytest.mark.parametrize("name", ["agent_respond_mock_agent.json"])
@given(body=st.binary(max_size=200) | _json_value.map(orjson.dumps))
def test_agent_respond_decoder_takes_any_body(name: str, body: bytes) -> None:
    assert _ends_in_one_terminal(decode("agent-respond", body))
