"""The canonical turn's readings of what a client said (a yes or a no in words), and a turn revised."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from gateway.core.turn import Context, Message, Resume, Tool, Turn, approves, revised, yes_or_no


@pytest.mark.parametrize("said", [
    "yes", "Yes, go ahead", "yes please", "ok", "Okay!", "sure thing", "go ahead", "approve", "Approved.",
    "absolutely", "yep, do it", "please do", "no problem", "No worries, go ahead.", "true", "y", "confirm",
    "Yes \u2014 proceed", "YES",
])
def test_a_plain_yes_in_words_is_a_yes(said: str) -> None:
    assert yes_or_no(said) is True


@pytest.mark.parametrize("said", [
    "no", "No thanks", "nope", "absolutely not", "Definitely not!", "don't", "Do not do that", "please don't",
    "please do not", "deny", "cancel it", "never", "No, stop.", "not now", "false", "n", "no\u2019", "Nah.",
])
def test_a_plain_no_in_words_is_a_no(said: str) -> None:
    assert yes_or_no(said) is False


@pytest.mark.parametrize("said", [
    "", "maybe", "hmm", "yes, but not the prod database", "no, but delete the other file", "not sure",
    "I think so", "delete it, please", "Bob", "yes no", "yes, if it is backed up", "no problem, but wait",
    "yes " * 100,
])
def test_an_answer_that_is_neither_or_hedged_is_not_read_as_either(said: str) -> None:
    assert yes_or_no(said) is None


@pytest.mark.parametrize(("said", "approved"), [("no thanks", False), ("absolutely not", False),
                                                ("yes, go ahead", True), ("Bob", True)])
def test_a_text_answer_approves_unless_it_says_no(said: str, approved: bool) -> None:
    """Text that is not a no is an answer's content (a form's one field), so it does not refuse."""
    assert approves(Resume("int-1", payload=said)) is approved


def test_a_revised_turn_is_what_dataclasses_replace_makes_whichever_field_changes() -> None:
    turn = Turn(messages=[Message("user", "hi", "m1")], history="delta", conversation_id="c", run_id="r",
                parent_run_id="p", tools=[Tool("t")], context=[Context("d", "v")], state={"s": 1},
                forwarded_props={"f": 2}, resume=[Resume("i", "resolved", None)], metadata={"k": "v"}, variant="v",
                agent="a", client_version="1", accept="text/event-stream", model="m", follows="run_0",
                chains_runs=True)
    for field in fields(Turn):
        changed = {field.name: None}
        assert revised(turn, **changed) == replace(turn, **changed)
    assert revised(turn) == turn and revised(turn) is not turn
    with pytest.raises(KeyError):
        revised(turn, nothing=1)
