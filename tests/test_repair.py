from __future__ import annotations

from gateway.core.events import (
    Event,
    Interrupt,
    RunError,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.repair import INTERRUPTED_TOOL, RunRepair


def repaired(*events: Event, end: bool = True) -> list[Event]:
    repair = RunRepair()
    out: list[Event] = []
    for event in events:
        repair.push(event, out)
    if end:
        repair.end_of_stream(out)
    return out


def test_run_started_is_added_when_missing_and_kept_once() -> None:
    out = repaired(TextDelta("m", "hi"), RunStarted(thread_id="t", run_id="r"), RunFinished())
    assert out == [RunStarted(), TextStart("m"), TextDelta("m", "hi"), TextEnd("m"), RunFinished()]


def test_delta_without_start_starts_the_message() -> None:
    out = repaired(RunStarted(), TextDelta("m", "a"), TextDelta("m", "b"), TextEnd("m"), RunFinished())
    assert out[1] == TextStart("m")
    assert out.count(TextStart("m")) == 1


def test_end_for_a_message_not_open_is_dropped() -> None:
    out = repaired(RunStarted(), TextEnd("ghost"), RunFinished())
    assert out == [RunStarted(), RunFinished()]


def test_open_messages_and_tool_calls_are_closed_before_finish() -> None:
    out = repaired(RunStarted(), TextStart("m"), ToolCallStart("c", "f"), StepStarted(name="s"), RunFinished())
    assert out[-4:] == [TextEnd("m"), ToolCallEnd("c"), StepFinished(name="s"), RunFinished()]


def test_error_fails_tool_calls_still_waiting_for_a_result() -> None:
    out = repaired(RunStarted(), ToolCallStart("c", "f"), ToolCallEnd("c"), ToolCallStart("d", "g"),
                   RunError("boom"))
    assert out[-4:] == [ToolCallEnd("d"), ToolResult("c", INTERRUPTED_TOOL, is_error=True),
                        ToolResult("d", INTERRUPTED_TOOL, is_error=True), RunError("boom")]


def test_stream_cut_before_terminator_is_an_error_not_a_success() -> None:
    out = repaired(RunStarted(), TextDelta("m", "partial"))
    assert isinstance(out[-1], RunError)
    assert out[-1].code == "upstream_truncated"
    assert out[-2] == TextEnd("m")


def test_nothing_follows_the_terminal_event() -> None:
    out = repaired(RunStarted(), RunError("first"), RunError("second"), TextDelta("m", "late"), RunFinished())
    assert out == [RunStarted(), RunError("first")]


def test_interrupt_makes_the_outcome_interrupt_and_only_it_does() -> None:
    assert repaired(RunStarted(), Interrupt("i"), RunFinished())[-1] == RunFinished(outcome="interrupt")
    assert repaired(RunStarted(), RunFinished(outcome="interrupt"))[-1] == RunFinished(outcome="success")


def test_args_for_an_unstarted_call_start_it_and_args_after_its_end_are_dropped() -> None:
    out = repaired(RunStarted(), ToolCallArgs("c", "{"), ToolCallEnd("c"), ToolCallArgs("c", "}"), RunFinished())
    assert out[1] == ToolCallStart("c", "unknown_tool")
    assert ToolCallArgs("c", "}") not in out


def test_result_closes_a_call_still_open() -> None:
    out = repaired(RunStarted(), ToolCallStart("c", "f"), ToolResult("c", "ok"), RunFinished())
    assert out[1:4] == [ToolCallStart("c", "f"), ToolCallEnd("c"), ToolResult("c", "ok")]


def test_step_finished_without_a_start_is_dropped_and_inner_steps_close_first() -> None:
    assert repaired(RunStarted(), StepFinished(), RunFinished()) == [RunStarted(), RunFinished()]
    out = repaired(RunStarted(), StepStarted(name="outer"), StepStarted(name="inner"), StepFinished(name="outer"),
                   RunFinished())
    assert out[3:5] == [StepFinished(name="inner"), StepFinished(name="outer")]
