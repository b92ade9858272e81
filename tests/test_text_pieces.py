"""A text held in pieces as it streams (`TextPieces`): the text is the pieces joined, whatever way they were added
and read, and a long message costs about its characters, in the recorder (`tests/test_recorder.py`) and in every
client dialect's encoder that holds it until the message ends or the reply is whole."""

from __future__ import annotations

import tracemalloc

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters import registry
from gateway.core.events import (
    Event,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
)
from gateway.core.text_pieces import TextPieces
from gateway.core.turn import Message, Turn


@given(st.lists(st.tuples(st.text(max_size=5), st.sampled_from(["add", "append", "settle", "read"])), max_size=80))
def test_the_text_is_every_piece_joined_however_they_were_added_settled_and_read(steps: list[tuple[str, str]]
                                                                                  ) -> None:
    text, expected = TextPieces(), ""
    for piece, how in steps:
        if how == "settle":
            text.settle()
        elif how == "read":
            assert text.text() == expected
        else:
            text.add(piece) if how == "add" else text.pieces.append(piece)
            expected += piece
    assert text.text() == expected
    text.clear()
    assert text.text() == ""


def _deltas() -> list[str]:  # a long answer, a token a delta: 10,000 characters
    return [f"t{k:03} " for k in range(2000)]


@pytest.mark.parametrize("dialect", sorted(registry.DIALECTS))
def test_an_encoder_holds_a_long_message_and_call_at_about_their_characters_not_an_object_per_delta(
        dialect: str) -> None:
    """A string per delta is some 60 bytes beside a token's few characters: 360 KB for the three of these."""
    turn = Turn(messages=[Message(role="user", content="hi")], conversation_id="c", run_id="r")
    encoder = registry.get(dialect).new_encoder(turn)
    opening: list[Event] = [RunStarted(thread_id="c", run_id="r"), TextStart("m")]
    encoder.encode(opening)
    tracemalloc.start()
    try:
        for delta in _deltas():  # a batch each, as a paced stream's
            encoder.encode([TextDelta("m", delta)])
        encoder.encode([ReasoningStart("r")])  # the message still open, as a reply in one body holds it
        for delta in _deltas():
            encoder.encode([ReasoningDelta("r", delta)])
        encoder.encode([ToolCallStart("call", "write")])
        for delta in _deltas():
            encoder.encode([ToolCallArgs("call", delta)])
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 3 * 30_000
    ending: list[Event] = [ReasoningEnd("r"), TextEnd("m"), ToolCallEnd("call"), RunFinished()]
    assert encoder.encode(ending) is not None
