from __future__ import annotations

import pytest

from adapters import registry
from gateway.errors import UnknownDialect


@pytest.mark.parametrize(("body", "dialect"), [
    ({"threadId": "t", "runId": "r", "messages": []}, "ag-ui"),
    ({"conversationId": "c", "messages": [{"role": "user", "content": "hi"}]}, "ag-kit"),
    ({"conversationId": "c", "resume": {"interruptId": "i", "payload": "1"}}, "ag-kit"),
])
def test_send_message_tells_ag_ui_from_ag_kit_by_the_body(body: dict[str, object], dialect: str) -> None:
    assert registry.detect(body, ["ag-ui", "ag-kit"]).name == dialect


@pytest.mark.parametrize(("body", "dialect"), [
    ({"id": "c", "trigger": "submit-message", "messages": [{"id": "u", "role": "user", "parts": []}]}, "vercel"),
    ({"messages": [{"role": "user", "content": "hi"}], "metadata": {"test_case_id": "t"}}, "agent-respond"),
    ({"messages": [{"role": "user", "content": "ping"}]}, "agent-respond"),
])
def test_any_dialect_is_recognised_on_an_auto_detect_path(body: dict[str, object], dialect: str) -> None:
    assert registry.detect(body).name == dialect


def test_inkeep_and_ag_kit_bodies_look_alike_so_the_path_decides() -> None:
    body = {"messages": [{"role": "user", "content": "hi"}], "conversationId": "c"}
    assert registry.detect(body, ["vercel", "ag-kit"]).name == "ag-kit"
    assert registry.detect(body, ["vercel"]).name == "vercel"


def test_unrecognised_body_is_a_clear_error() -> None:
    with pytest.raises(UnknownDialect, match="AG-UI needs threadId"):
        registry.detect({"hello": "world"})


def test_unknown_dialect_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: ag-ui, ag-kit, vercel, agent-respond"):
        registry.get("a2a")
