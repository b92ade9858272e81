from __future__ import annotations

import pytest

from adapters import registry
from gateway.core.errors import InvalidRequest, UnknownDialect


@pytest.mark.parametrize(("body", "dialect"), [
    ({"threadId": "t", "runId": "r", "messages": []}, "ag-ui"),
    ({"conversationId": "c", "messages": [{"role": "user", "content": "hi"}]}, "ag-kit"),
    ({"conversationId": "c", "resume": {"interruptId": "i", "payload": "1"}}, "ag-kit"),
])
def test_send_message_tells_ag_ui_from_ag_kit_by_the_body(body: dict[str, object], dialect: str) -> None:
    assert registry.read_request(body, ["ag-ui", "ag-kit"], "/send-message")[0].name == dialect


@pytest.mark.parametrize(("body", "dialect"), [
    ({"id": "c", "trigger": "submit-message",
      "messages": [{"id": "u", "role": "user", "parts": [{"type": "text", "text": "hi"}]}]}, "vercel"),
    ({"messages": [{"role": "user", "content": "hi"}], "metadata": {"test_case_id": "t"}}, "agent-respond"),
    ({"messages": [{"role": "user", "content": "ping"}]}, "agent-respond"),
])
def test_any_dialect_is_recognised_on_an_auto_detect_path(body: dict[str, object], dialect: str) -> None:
    assert registry.read_request(body, list(registry.DIALECTS), "/chat")[0].name == dialect


def test_unrecognised_body_is_a_clear_error() -> None:
    with pytest.raises(UnknownDialect, match="AG-UI request"):
        registry.read_request({"hello": "world"}, list(registry.DIALECTS), "/chat")


def test_unknown_dialect_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: ag-ui, ag-kit, vercel, agent-respond, a2a"):
        registry.get("acp")


ALL = list(registry.DIALECTS)
INKEEP_BODY = {"messages": [{"role": "user", "content": "What can you do?"}], "conversationId": "chat-1234"}


@pytest.mark.parametrize(("path", "dialect"), [("/api/chat", "vercel"), ("/send-message", "ag-kit")])
def test_a_body_the_paths_own_dialect_reads_is_that_dialect(path: str, dialect: str) -> None:
    """Inkeep's documented body on /api/chat is a Vercel request; the same body on /send-message is AG-Kit's."""
    client, turn = registry.read_request(INKEEP_BODY, ALL, path)
    assert client.name == dialect and turn.conversation_id == "chat-1234"


def test_a_body_that_belongs_on_another_path_is_refused_with_that_path_named() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "metadata": {"test_case_id": "t", "turn_index": 0}}
    with pytest.raises(UnknownDialect, match=r"agent-respond request.*POST it to /agent/respond"):
        registry.read_request(body, ALL, "/send-message")


def test_a_body_no_dialect_of_the_path_reads_says_what_each_expects() -> None:
    with pytest.raises(UnknownDialect) as caught:
        registry.read_request({"hello": "world"}, ALL, "/send-message")
    assert "AG-UI request (RunAgentInput) needs threadId" in caught.value.message
    assert "AG-Kit request needs conversationId" in caught.value.message
    assert [d["dialect"] for d in caught.value.details] == ["ag-ui", "ag-kit"]


def test_a_body_of_the_paths_only_dialect_gets_that_dialects_field_errors() -> None:
    with pytest.raises(InvalidRequest, match="runId: Field required"):
        registry.read_request({"threadId": "t", "messages": []}, ALL, "/agui")


def test_on_a_path_no_dialect_owns_every_candidate_may_read_the_body() -> None:
    assert registry.read_request(INKEEP_BODY, ["vercel", "agent-respond"], "/chat")[0].name == "vercel"


def test_a_dialects_capability_of_each_kind_is_the_first_it_brings_of_that_kind_asked_once_or_again() -> None:
    kinds = {type(capability) for dialect in registry.DIALECTS.values() for capability in dialect.capabilities}
    kinds |= {base for kind in list(kinds) for base in kind.__mro__[1:-1]}
    for dialect in registry.DIALECTS.values():
        for kind in sorted(kinds, key=lambda kind: kind.__qualname__):
            first = next((c for c in dialect.capabilities if isinstance(c, kind)), None)
            assert dialect.capability(kind) is first and dialect.capability(kind) is first
