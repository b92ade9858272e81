from __future__ import annotations

import pytest

from gateway.core.errors import InvalidRequest, MalformedRequest
from gateway.core.turn import Message, Resume, ToolCall, Turn
from gateway.core.validation import MAX_ID, check_ids, field_path, load_json_object


def test_body_that_is_not_json_or_not_an_object_is_malformed() -> None:
    with pytest.raises(MalformedRequest, match="not valid JSON"):
        load_json_object(b"{nope")
    with pytest.raises(MalformedRequest, match="must be a JSON object, got an array"):
        load_json_object(b"[1]")
    with pytest.raises(MalformedRequest, match="not UTF-8 text"):
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


@pytest.mark.parametrize(("body", "said"), [
    (b"", "the request body is empty: send a JSON object"),
    (b"   ", "the request body is empty: send a JSON object"),
    (b'{"a": "\\ud800"}', "half of a UTF-16 surrogate pair"),
    (b'\xff\xfe', "the request body is not UTF-8 text (line 1 column 1)"),
    (b'{"a":', "the request body is not valid JSON: unexpected end of data at line 1 column 6"),
])
def test_a_body_that_does_not_parse_is_described_not_the_parser(body: bytes, said: str) -> None:
    with pytest.raises(MalformedRequest) as caught:
        load_json_object(body)
    message = str(caught.value)
    assert said in message and "zero-length" not in message and "surrogates not allowed" not in message
    assert "char " not in message  # the parser's own offsets


@pytest.mark.parametrize(("body", "said"), [
    ({"threadId": "t", "runId": "r", "messages": [{"id": "m", "role": "human", "content": "hi"}]},
     "messages[0]: role must be one of"),
    ({"conversationId": "c", "messages": []}, None),  # AG-Kit takes an empty delta
])
def test_pydantics_own_words_never_reach_a_client(body: dict[str, object], said: str | None) -> None:
    from adapters import registry
    from gateway.core.errors import InvalidRequest

    try:
        registry.read_request(body, list(registry.DIALECTS), "/send-message")
    except InvalidRequest as exc:
        assert said is not None and said in exc.message and "Input tag" not in exc.message, exc.message
    else:
        assert said is None


def test_a_config_file_that_is_no_mapping_or_an_empty_list_is_said_in_its_terms() -> None:
    from gateway.config import ConfigError, parse_config

    with pytest.raises(ConfigError, match=r"gw\.yaml:1: the file: must be an object"):
        parse_config("- a\n- b\n", "gw.yaml", environ={})
    with pytest.raises(ConfigError, match=r"gw\.yaml:1: routes: must not be empty"):
        parse_config("routes: []\n", "gw.yaml", environ={})


ID_FIELDS = ["conversation id", "run id", "parent run id", "message id", "tool call id", "tool call id",
             "interrupt id", "previous run id", "model"]


def _turn_with_ids(ids: list[str]) -> Turn:
    conversation, run, parent, message, answered, call, interrupt, follows, model = ids
    return Turn(messages=[Message("tool", "done", message, tool_call_id=answered),
                          Message("assistant", "", "m2", [ToolCall(call, "f", "{}")])],
                conversation_id=conversation, run_id=run, parent_run_id=parent,
                resume=[Resume(interrupt, "resolved", None)], follows=follows, model=model)


@pytest.mark.parametrize("bad", ["x" * 257, "a\nb", "\x7f", "c1\x9b", "\x00"])
@pytest.mark.parametrize("at", range(len(ID_FIELDS)))
def test_a_long_or_controlled_id_is_named_wherever_the_client_put_it(bad: str, at: int) -> None:
    ids = ["i" * 256, "r", "p", "m", "c", "d", "q", "f", "gpt"]
    check_ids(_turn_with_ids(ids), "toy")  # every id at most 256 plain characters: taken
    ids[at] = bad
    with pytest.raises(InvalidRequest) as refused:
        check_ids(_turn_with_ids(ids), "toy")
    assert refused.value.message == (f"invalid toy request: a {ID_FIELDS[at]} must be at most {MAX_ID} characters, "
                                     "without control characters")
    assert refused.value.details == [{"field": ID_FIELDS[at], "message": f"must be at most {MAX_ID} characters, "
                                      "without control characters"}]


@pytest.mark.parametrize("digits", range(19, 41))
def test_an_integer_past_64_bits_is_refused_wherever_it_stands_and_one_within_them_is_read(digits: int) -> None:
    past = str(2 ** 64 + 7).ljust(digits, "9")
    for body in (b'{"n":%s}' % past.encode(), b'{"a":"x1","n":[1,%s]}' % past.encode(),
                 b'{"s":"9a","n":-%s,"t":12}' % past.encode()):
        with pytest.raises(MalformedRequest, match=f"holds the integer -?{past[:39]}"):
            load_json_object(body)
    within = str(2 ** 64 - 1)[:digits]
    assert load_json_object(b'{"id":"%s","n":%s}' % (past.encode(), within.encode())) == {"id": past, "n": int(within)}
