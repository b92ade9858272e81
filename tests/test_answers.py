"""An answer that came in a message (A2A's next message to a task, an MCP client's later call) shaped as its
interrupt's `responseSchema` asks (`gateway/conversations/answers.py`): what a text can say is filled in, and what it
cannot is refused saying what the form asks, for the client to be asked again."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.conversations.answers import AnswerNotExpected, shaped

CONFIRM = {"type": "object", "properties": {"ok": {"type": "boolean", "description": "Go ahead?"},
                                            "note": {"type": "string"}}, "required": ["ok"]}
APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
            "required": ["approved"]}


def one(kind: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"value": {"type": kind}}, "required": ["value"]}


@pytest.mark.parametrize(("text", "schema", "expected"), [
    ("Ada", one("string"), {"value": "Ada"}),
    ("3", one("integer"), {"value": 3}),
    ("2.5", one("number"), {"value": 2.5}),
    ("no", one("boolean"), {"value": False}),
    ("yes", CONFIRM, {"ok": True}),
    ("No.", APPROVAL, {"approved": False}),
    ("yes", {"type": "boolean"}, True),
    ("anything", {"type": "string"}, "anything"),
])
def test_a_text_fills_what_a_text_can_say(text: str, schema: dict[str, Any], expected: Any) -> None:
    assert shaped(text, schema) == expected


@pytest.mark.parametrize(("text", "schema", "says"), [
    ("ship it", CONFIRM, '"ok" (boolean, required: Go ahead?), "note" (string)'),
    ("three", one("integer"), '"value" (integer, required)'),
    ("2.5", one("integer"), '"value" (integer, required)'),
    ("maybe", APPROVAL, "(or yes or no)"),
])
def test_a_text_that_fills_nothing_is_refused_saying_what_the_form_asks(text: str, schema: dict[str, Any],
                                                                       says: str) -> None:
    with pytest.raises(AnswerNotExpected) as refused:
        shaped(text, schema)
    assert says in refused.value.message and "data part" in refused.value.message
    assert refused.value.schema == schema


def test_a_data_part_that_fits_goes_as_it_is_and_one_that_does_not_is_refused() -> None:
    assert shaped({"ok": False, "note": "later"}, CONFIRM) == {"ok": False, "note": "later"}
    with pytest.raises(AnswerNotExpected, match="has no ok"):
        shaped({"note": "later"}, CONFIRM)
