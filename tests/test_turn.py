"""The canonical turn's readings of what a client said: a yes or a no in words."""

from __future__ import annotations

import pytest

from gateway.core.turn import Resume, approves, yes_or_no


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
