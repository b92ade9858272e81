from __future__ import annotations

import tracemalloc

from gateway.conversations.recorder import LEFT_OUT, RunRecorder
from gateway.core.events import (
    Interrupt,
    ReasoningDelta,
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
    Usage,
)
from gateway.core.turn import Message, ToolCall


def test_a_run_becomes_the_messages_a_client_would_assemble() -> None:
    recorder = RunRecorder()
    recorder.record([
        RunStarted(thread_id="upstream-thread"), ReasoningDelta("r", "hmm"), TextStart("m1"),
        TextDelta("m1", "Let me "), TextDelta("m1", "check."),
        ToolCallStart("c1", "get_weather", parent_message_id="m1"), ToolCallArgs("c1", '{"city":'),
        ToolCallArgs("c1", '"Paris"}'), ToolCallEnd("c1"), ToolResult("c1", {"t": 21}, message_id="res1"),
        TextStart("m2"), TextDelta("m2", "Sunny."), ToolCallStart("c2", "ask_user"), ToolCallEnd("c2"),
    ])
    assert recorder.close() == [
        Message("reasoning", "hmm", "r"),
        Message("assistant", "Let me check.", "m1", [ToolCall("c1", "get_weather", '{"city":"Paris"}')]),
        Message("tool", '{"t":21}', "res1", tool_call_id="c1", name="get_weather"),
        Message("assistant", "Sunny.", "m2", [ToolCall("c2", "ask_user", "{}")]),
    ]
    assert recorder.pending_tools == {"c2": "ask_user"}
    assert recorder.upstream_thread_id == "upstream-thread"


def test_interrupts_and_state_are_kept() -> None:
    recorder = RunRecorder(state={"count": 0})
    recorder.record([Interrupt("i1", tool_call_id="c"), StateDelta([{"op": "replace", "path": "/count", "value": 1}])])
    assert [i.id for i in recorder.interrupts] == ["i1"] and recorder.state.value == {"count": 1}
    recorder.record([StateSnapshot({"fresh": True})])
    assert recorder.state.value == {"fresh": True}


def test_a_run_longer_than_the_store_keeps_lets_go_of_its_text() -> None:
    recorder = RunRecorder(max_chars=1000)
    recorder.record([TextStart("m")] + [TextDelta("m", "x" * 100) for _ in range(50)] + [TextEnd("m")])
    assert recorder.overflowed and [m.text for m in recorder.close()] == [LEFT_OUT]  # 5,000 characters let go
    held = RunRecorder(max_chars=1000)
    held.record([TextStart("m"), TextDelta("m", "x" * 900), TextEnd("m")])
    assert not held.overflowed and held.close()[0].text == "x" * 900


def test_a_long_message_costs_about_its_characters_while_it_streams_not_an_object_per_delta() -> None:
    def deltas() -> list[str]:  # a long answer, a token a delta: 10,000 characters, each delta a string of its own
        return [f"t{k:03} " for k in range(2000)]

    recorder = RunRecorder()
    tracemalloc.start()
    try:
        recorder.record([TextStart("m")])
        for delta in deltas():  # a batch each, as a paced stream's
            recorder.record([TextDelta("m", delta)])
        recorder.record([ToolCallStart("c", "write"), *(ToolCallArgs("c", d) for d in deltas()),
                         ReasoningDelta("r", "x")])
        recorder.record([ReasoningDelta("r", d) for d in deltas()])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 3 * 30_000  # a string per delta: 60 bytes and more each, 360 KB for the three
    [reasoning, message] = recorder.close()
    assert message.content == "".join(deltas()) and message.tool_calls[0].arguments == "".join(deltas())
    assert reasoning.content == "x" + "".join(deltas())


def test_token_usage_is_summed_over_reports_and_what_is_not_a_count_is_left_out() -> None:
    recorder = RunRecorder()
    assert recorder.usage is None
    recorder.record([RunStarted(), Usage(input_tokens=10, output_tokens=4, total_tokens=14, model="model-a",
                                         provider="openai")])
    recorder.record([Usage(input_tokens=2, output_tokens=None, total_tokens=None, model="m" * 1000),
                     Usage(input_tokens="lots", output_tokens=-3),  # type: ignore[arg-type]
                     Usage(input_tokens=True, output_tokens=1 << 60),
                     Usage(input_tokens=1, output_tokens=1, model=42)])  # type: ignore[arg-type]
    assert recorder.usage == Usage(input_tokens=13, output_tokens=5, total_tokens=None, model="m" * 256,
                                   provider="openai")
