"""Record the AG-UI 1.0 corpus: every event family of the 1.0 specification, built with the `ag-ui-protocol` 1.0.0
models and written by its own `EventEncoder`, as a 1.0 server built on the Python SDK streams them.

    .venv/bin/python tests/record_agui_corpus.py      # rewrites tests/fixtures/ag-ui/agui10_*.sse

Each stream is one family (activity, subagents, encrypted reasoning, usage, metadata, tool results as content parts,
branching, interrupts with an expiry), plus one with all of them at once; `tests/test_corpora.py` holds the
gateway to them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ag_ui.core import (
    PROTOCOL_VERSION,
    ActivityDeltaEvent,
    ActivitySnapshotEvent,
    BaseEvent,
    CustomEvent,
    DocumentPart,
    FileSource,
    ImagePart,
    Interrupt,
    ReasoningEncryptedValueEvent,
    ReasoningEndEvent,
    ReasoningMessageContentEvent,
    ReasoningMessageEndEvent,
    ReasoningMessageStartEvent,
    ReasoningStartEvent,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    StateDeltaEvent,
    StateSnapshotEvent,
    StepFinishedEvent,
    StepStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentFinishedSuccessOutcome,
    SubagentFinishedSuspendedOutcome,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TextPart,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UrlSource,
)
from ag_ui.encoder import EventEncoder

FIXTURES = Path(__file__).parent / "fixtures" / "ag-ui"
T, R = "thread-corpus", "run-corpus"


def started(**extra: object) -> RunStartedEvent:
    return RunStartedEvent(thread_id=T, run_id=R, protocol_version=PROTOCOL_VERSION, **extra)  # type: ignore[arg-type]


def said(message_id: str, text: str, **extra: object) -> list[BaseEvent]:
    return [TextMessageStartEvent(message_id=message_id, role="assistant", **extra),  # type: ignore[arg-type]
            TextMessageContentEvent(message_id=message_id, delta=text, **extra),  # type: ignore[arg-type]
            TextMessageEndEvent(message_id=message_id, **extra)]  # type: ignore[arg-type]


def finished(**extra: object) -> RunFinishedEvent:
    return RunFinishedEvent(thread_id=T, run_id=R, outcome=RunFinishedSuccessOutcome(), **extra)  # type: ignore[arg-type]


def activity() -> list[BaseEvent]:
    """A plan shown as an activity message, moved on by patches; a second activity merged into with
    `replace: false`."""
    plan = {"steps": [{"title": "Search flights", "done": False}, {"title": "Book hotel", "done": False}]}
    return [started(),
            ActivitySnapshotEvent(message_id="plan-1", activity_type="plan", content=plan),
            *said("m1", "Working on your trip."),
            ActivityDeltaEvent(message_id="plan-1", activity_type="plan",
                               patch=[{"op": "replace", "path": "/steps/0/done", "value": True}]),
            ActivitySnapshotEvent(message_id="search-1", activity_type="search", content={"query": "Paris"}),
            ActivitySnapshotEvent(message_id="search-1", activity_type="search", content={"results": 3},
                                  replace=False),
            ActivityDeltaEvent(message_id="plan-1", activity_type="plan",
                               patch=[{"op": "replace", "path": "/steps/1/done", "value": True}]),
            finished()]


def subagents() -> list[BaseEvent]:
    """A research subagent called from a tool call, its text and tool call tagged with it, a nested subagent that
    suspends, and one that fails (the run goes on)."""
    return [started(),
            *said("m1", "Let me ask the researcher."),
            ToolCallStartEvent(tool_call_id="call-delegate", tool_call_name="delegate", parent_message_id="m1"),
            ToolCallArgsEvent(tool_call_id="call-delegate", delta='{"task":"find flights"}'),
            ToolCallEndEvent(tool_call_id="call-delegate"),
            SubagentStartedEvent(subagent_run_id="sub-1", name="researcher", description="Finds flights",
                                 parent_tool_call_id="call-delegate", parent_message_id="m1"),
            *said("m-sub", "Three flights found.", subagent_run_id="sub-1"),
            ToolCallStartEvent(tool_call_id="call-search", tool_call_name="search", parent_message_id="m-sub",
                               subagent_run_id="sub-1"),
            ToolCallArgsEvent(tool_call_id="call-search", delta='{"q":"CDG"}', subagent_run_id="sub-1"),
            ToolCallEndEvent(tool_call_id="call-search", subagent_run_id="sub-1"),
            ToolCallResultEvent(message_id="res-search", tool_call_id="call-search", content="3 flights",
                                role="tool", subagent_run_id="sub-1"),
            SubagentStartedEvent(subagent_run_id="sub-1a", name="pricer", parent_subagent_run_id="sub-1"),
            SubagentFinishedEvent(subagent_run_id="sub-1a",
                                  outcome=SubagentFinishedSuspendedOutcome(interrupt_ids=["int-price"])),
            SubagentFinishedEvent(subagent_run_id="sub-1", result={"flights": 3},
                                  outcome=SubagentFinishedSuccessOutcome()),
            SubagentStartedEvent(subagent_run_id="sub-2", name="booker"),
            SubagentErrorEvent(subagent_run_id="sub-2", message="booking service down", code="unavailable"),
            ToolCallResultEvent(message_id="res-delegate", tool_call_id="call-delegate", content="3 flights",
                                role="tool"),
            *said("m2", "The researcher found three flights."),
            finished()]


def encrypted() -> list[BaseEvent]:
    """Reasoning whose content the model keeps encrypted, for the agent to be given back: on the reasoning message,
    and on a tool call."""
    return [started(),
            ReasoningStartEvent(message_id="r1"),
            ReasoningMessageStartEvent(message_id="r1", role="reasoning"),
            ReasoningMessageContentEvent(message_id="r1", delta="Thinking about the weather."),
            ReasoningMessageEndEvent(message_id="r1"),
            ReasoningEncryptedValueEvent(subtype="message", entity_id="r1", encrypted_value="gAAAAB-opaque-1"),
            ReasoningEndEvent(message_id="r1"),
            *said("m1", "Checking."),
            ToolCallStartEvent(tool_call_id="call-w", tool_call_name="get_weather", parent_message_id="m1"),
            ToolCallArgsEvent(tool_call_id="call-w", delta='{"city":"Paris"}'),
            ToolCallEndEvent(tool_call_id="call-w"),
            ReasoningEncryptedValueEvent(subtype="tool-call", entity_id="call-w", encrypted_value="gAAAAB-opaque-2"),
            ToolCallResultEvent(message_id="res-w", tool_call_id="call-w", content="sunny", role="tool"),
            *said("m2", "It is sunny."),
            finished()]


def usage() -> list[BaseEvent]:
    """Token usage of two models, with reasoning and cached tokens."""
    return [started(), *said("m1", "Counted."),
            finished(usage=[TokenUsage(provider="openai", model="gpt-5", input_tokens=120, output_tokens=40,
                                       total_tokens=160, reasoning_tokens=25, cached_input_tokens=100,
                                       cache_write_input_tokens=20),
                            TokenUsage(provider="anthropic", model="claude-haiku", input_tokens=8,
                                       output_tokens=4, total_tokens=12)])]


def metadata() -> list[BaseEvent]:
    """Metadata on the run, a message, its content and its end, a tool call and state: the client folds each into
    what the event builds."""
    return [started(metadata={"traceId": "abc123"}),
            TextMessageStartEvent(message_id="m1", role="assistant", name="concierge", metadata={"lang": "en"}),
            TextMessageContentEvent(message_id="m1", delta="Bonjour.", metadata={"tokens": 2}),
            TextMessageEndEvent(message_id="m1", metadata={"final": True}),
            ToolCallStartEvent(tool_call_id="call-1", tool_call_name="lookup", parent_message_id="m1",
                               metadata={"cost": 1}),
            ToolCallArgsEvent(tool_call_id="call-1", delta="{}"),
            ToolCallEndEvent(tool_call_id="call-1"),
            ToolCallResultEvent(message_id="res-1", tool_call_id="call-1", content="found", role="tool",
                                metadata={"cached": True}),
            StateSnapshotEvent(snapshot={"count": 1}, metadata={"source": "db"}),
            StepStartedEvent(step_name="wrap-up", metadata={"step": 1}),
            StepFinishedEvent(step_name="wrap-up"),
            finished(metadata={"latencyMs": 42})]


def content_parts() -> list[BaseEvent]:
    """A tool result as content parts: text, an image by URL and a document uploaded to a provider."""
    return [started(), *said("m1", "Rendering."),
            ToolCallStartEvent(tool_call_id="call-r", tool_call_name="render", parent_message_id="m1"),
            ToolCallArgsEvent(tool_call_id="call-r", delta="{}"),
            ToolCallEndEvent(tool_call_id="call-r"),
            ToolCallResultEvent(message_id="res-r", tool_call_id="call-r", role="tool", content=[
                TextPart(text="Here is the chart."),
                ImagePart(source=UrlSource(value="https://example.com/chart.png", mime_type="image/png")),
                DocumentPart(source=FileSource(value="file-abc123", provider="openai", mime_type="application/pdf")),
            ]),
            *said("m2", "Done."),
            finished()]


def branching() -> list[BaseEvent]:
    """A run that branches from an earlier one (an edit or a retry)."""
    return [started(parent_run_id="run-earlier"), *said("m1", "A different answer."), finished()]


def interrupt() -> list[BaseEvent]:
    """An approval with a deadline, a response schema and metadata, and a question of a subagent's."""
    return [started(),
            *said("m1", "I need your approval."),
            ToolCallStartEvent(tool_call_id="call-del", tool_call_name="delete_file", parent_message_id="m1"),
            ToolCallArgsEvent(tool_call_id="call-del", delta='{"path":"/tmp/x"}'),
            ToolCallEndEvent(tool_call_id="call-del"),
            RunFinishedEvent(thread_id=T, run_id=R, outcome=RunFinishedInterruptOutcome(interrupts=[
                Interrupt(id="int-del", reason="tool_approval", message="Delete /tmp/x?", tool_call_id="call-del",
                          expires_at="2026-12-01T12:00:00Z",
                          response_schema={"type": "object", "properties": {"approved": {"type": "boolean"}}},
                          metadata={"payload": {"path": "/tmp/x"}, "risk": "high"}),
                Interrupt(id="int-budget", reason="confirm", message="Spend over 100 EUR?"),
            ]))]


def everything() -> list[BaseEvent]:
    """Every family in one run, as a real agent mixes them."""
    return [started(parent_run_id="run-0", metadata={"traceId": "t-1"}),
            StepStartedEvent(step_name="plan"),
            ActivitySnapshotEvent(message_id="act-1", activity_type="plan", content={"status": "started"}),
            ReasoningStartEvent(message_id="r1"),
            ReasoningMessageStartEvent(message_id="r1", role="reasoning"),
            ReasoningMessageContentEvent(message_id="r1", delta="Plan first."),
            ReasoningMessageEndEvent(message_id="r1"),
            ReasoningEncryptedValueEvent(subtype="message", entity_id="r1", encrypted_value="opaque"),
            ReasoningEndEvent(message_id="r1"),
            StepFinishedEvent(step_name="plan"),
            SubagentStartedEvent(subagent_run_id="sub-x", name="helper"),
            *said("m-x", "Helper here.", subagent_run_id="sub-x"),
            SubagentFinishedEvent(subagent_run_id="sub-x", result="ok"),
            ActivityDeltaEvent(message_id="act-1", activity_type="plan",
                               patch=[{"op": "replace", "path": "/status", "value": "done"}]),
            StateSnapshotEvent(snapshot={"phase": "done"}),
            StateDeltaEvent(delta=[{"op": "add", "path": "/items", "value": 2}]),
            CustomEvent(name="progress", value={"pct": 100}),
            TextMessageStartEvent(message_id="m1", role="assistant", metadata={"lang": "en"}),
            TextMessageContentEvent(message_id="m1", delta="All done."),
            TextMessageEndEvent(message_id="m1"),
            finished(usage=[TokenUsage(model="m", input_tokens=5, output_tokens=3, total_tokens=8,
                                       reasoning_tokens=1, cached_input_tokens=2)])]


def failed() -> list[BaseEvent]:
    """A failed run reports what it used."""
    return [started(), *said("m1", "Partial."),
            RunErrorEvent(message="model overloaded", code="overloaded",
                          usage=[TokenUsage(model="m", input_tokens=5, output_tokens=1, total_tokens=6)])]


STREAMS: dict[str, Callable[[], list[BaseEvent]]] = {
    "activity": activity, "subagents": subagents, "encrypted": encrypted, "usage": usage, "metadata": metadata,
    "content_parts": content_parts, "branching": branching, "interrupt": interrupt, "everything": everything,
    "failed": failed,
}


def record() -> dict[str, bytes]:
    encoder = EventEncoder()
    return {f"agui10_{name}.sse": "".join(encoder.encode(event) for event in build()).encode()
            for name, build in STREAMS.items()}


if __name__ == "__main__":
    for name, body in record().items():
        (FIXTURES / name).write_bytes(body)
        print(f"wrote {FIXTURES / name} ({len(body)} bytes)")
