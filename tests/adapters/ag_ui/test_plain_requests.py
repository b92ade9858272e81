"""A plain AG-UI request is read without the models, into the turn the models make of it; any other, by the models.

Bodies are drawn near the plain shape and past it (a field of another kind, a key the models ignore, a message
the plain reading does not take), so that both sides of the line are crossed."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.ag_ui.request import modelled_request, parse_request, plain_request, sample_request
from gateway.core.errors import GatewayError

_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                 max_size=3), max_leaves=6)
_odd = st.none() | st.integers() | st.booleans() | st.lists(st.text(max_size=3), max_size=2) | st.just({})


def _mostly(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually the field's own kind, now and then another."""
    return st.sampled_from([True] * 9 + [False]).flatmap(lambda own: strategy if own else _odd)


def _fields(required: dict[str, st.SearchStrategy[Any]], optional: dict[str, st.SearchStrategy[Any]],
            extras: tuple[str, ...] = ("extra", "toolCallId")) -> st.SearchStrategy[dict[str, Any]]:
    """A dict of these fields, each optional one present or not, now and then a key the plain reading leaves to
    the models (one they ignore, or one the plain shape has no place for)."""
    def added(drawn: tuple[dict[str, Any], str | None, Any]) -> dict[str, Any]:
        fields, extra, value = drawn
        return {**fields, extra: value} if extra is not None else fields

    return st.tuples(st.fixed_dictionaries(required, optional=optional),
                     st.sampled_from([None] * 6 * len(extras) + list(extras)), _json).map(added)


_text = _mostly(st.text(max_size=8))
_message = _fields({"role": st.sampled_from(["user"] * 4 + ["system", "developer", "assistant"] * 2
                                            + ["tool", "reasoning", "activity", "bogus"]),
                    "id": _text, "content": _mostly(st.text(max_size=8) | st.text(max_size=8) | st.none())},
                   {"name": _mostly(st.text(max_size=8))},
                   extras=("toolCalls", "extra"))
_tool = _fields({"name": _text}, {"description": _text,
                                  "parameters": _mostly(st.none() | st.dictionaries(st.text(max_size=3), _json,
                                                                                    max_size=2))})
_context = _fields({"description": _text, "value": _text}, {})
_forwarded = st.one_of(_json, st.fixed_dictionaries({"command": st.fixed_dictionaries({"resume": _json})}))
_body = _fields(
    {"threadId": _text, "runId": _text, "messages": _mostly(st.lists(_message, min_size=1, max_size=4))},
    {"parentRunId": _mostly(st.text(max_size=8) | st.none()),
     "protocolVersion": _mostly(st.sampled_from(["1.0", "0.0.40", ""]) | st.none()), "state": _json,
     "forwardedProps": _forwarded, "tools": _mostly(st.lists(_tool, max_size=2)),
     "context": _mostly(st.lists(_context, max_size=2))},
    extras=("resume", "thread_id", "extra"))


@settings(max_examples=1000, deadline=None)
@given(_body)
def test_a_request_read_plainly_is_the_turn_the_models_make_of_it(body: dict[str, Any]) -> None:
    plain = plain_request(body)
    if plain is None:
        return
    try:
        modelled = modelled_request(body)
    except GatewayError as refused:
        raise AssertionError(f"read plainly, refused by the models: {refused}") from None
    assert plain == modelled


def test_what_an_ag_ui_client_sends_is_read_plainly_and_the_rest_by_the_models() -> None:
    body = sample_request("hi", "thread-1")
    body["tools"] = [{"name": "search", "description": "look it up", "parameters": {"type": "object"}}]
    body["context"] = [{"description": "where", "value": "here"}]
    body["messages"].append({"id": "m2", "role": "assistant", "content": None})
    assert plain_request(body) is not None and plain_request(body) == modelled_request(body)
    for not_plain in ({**body, "resume": []}, {**body, "messages": [{"id": "m", "role": "user", "content": []}]},
                      {**body, "messages": [{"id": "c", "role": "tool", "content": "4", "toolCallId": "t"}]}):
        assert plain_request(not_plain) is None
        assert parse_request(not_plain) == modelled_request(not_plain)
