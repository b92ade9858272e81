from __future__ import annotations

import pytest

from gateway.core.errors import MalformedRequest
from gateway.core.validation import field_path, load_json_object


def test_body_that_is_not_json_or_not_an_object_is_malformed() -> None:
    with pytest.raises(MalformedRequest, match="not valid JSON"):
        load_json_object(b"{nope")
    with pytest.raises(MalformedRequest, match="must be a JSON object, got an array"):
        load_json_object(b"[1]")
    with pytest.raises(MalformedRequest, match="not valid JSON"):
        load_json_object(b'{"a": "\xff"}')  # invalid UTF-8


def test_field_paths_read_like_the_body_the_client_wrote() -> None:
    body = {"messages": [{}, {}, {"role": "assistant", "toolCalls": [{"function": {"arguments": "{}"}}]}]}
    assert field_path(("messages", 2, "assistant", "toolCalls", 0, "function", "name"), body) == (
        "messages[2].toolCalls[0].function.name")
    assert field_path(()) == "body"


def test_a_field_pydantic_tried_as_several_types_is_one_message_without_type_names() -> None:
    from adapters import registry
    from gateway.core.errors import InvalidRequest

    body = {"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "user", "content": 5}]}
    with pytest.raises(InvalidRequest) as caught:
        registry.read_request(body, ["ag-ui"], "/agui")
    assert caught.value.message == ("invalid ag-ui request: messages[0].content: Input should be a valid string or "
                                    "a valid list")
    assert caught.value.details == [{"field": "messages[0].content",
                                     "message": "Input should be a valid string or a valid list"}]
