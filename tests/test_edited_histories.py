"""A client that edits what it said earlier, in front of an upstream that keeps the conversation itself: the turn
is redone where the upstream can be given it, else refused (409 `history_conflict`, in the client's dialect),
never merged into what the upstream already heard. The real `@ag-ui/client` in front of `a2a-sdk`'s server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from node_clients import run_agui
from peers_env import a2a_upstream
from servers import Served

from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.server.app import create_app


@pytest.fixture(scope="module")
def before_a2a() -> Iterator[str]:
    with a2a_upstream() as a2a:
        config = GatewayConfig.model_validate({"routes": [{
            "name": "a2a", "paths": ["/agui"], "client_dialects": ["ag-ui"],
            "upstream": {"url": a2a, "dialect": "a2a"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield f"{gateway.url}/agui"


def said(step: dict[str, object]) -> str:
    messages = step["newMessages"]
    assert isinstance(messages, list)
    return "".join(m.get("content") or "" for m in messages if m["role"] == "assistant")


def test_an_edited_first_message_alone_is_its_turn_redone_in_a_new_context(before_a2a: str) -> None:
    first, edited = run_agui({"url": before_a2a, "threadId": "edit-redo", "steps": [
        {"messages": [{"role": "user", "content": "ask about tea"}]},
        {"edit": {"index": 0, "content": "ask about coffee"}},
    ]})["steps"]
    assert "echo: ask about tea" in said(first) and "history=1" in said(first)
    assert "echo: ask about coffee" in said(edited) and "history=1" in said(edited)  # a context of its own


def test_an_edited_first_message_with_one_added_is_refused_not_joined_into_one(before_a2a: str) -> None:
    """The agent takes one message a turn: the edited message and the new one are two turns it cannot be given
    as they were said, so the client is told to start a new conversation."""
    first, edited = run_agui({"url": before_a2a, "threadId": "edit-add", "steps": [
        {"messages": [{"role": "user", "content": "ask about tea"}]},
        {"edit": {"index": 0, "content": "ask about coffee"},
         "messages": [{"role": "user", "content": "and biscuits"}]},
    ]})["steps"]
    assert "echo: ask about tea" in said(first)
    assert edited["runError"] is None and edited["error"] is not None and "409" in edited["error"]
    assert "history_conflict" in edited["error"] and said(edited) == ""
