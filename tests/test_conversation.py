from __future__ import annotations

import asyncio

from adapters import registry
from gateway.conversations.mapper import ConversationMapper
from gateway.conversations.recorder import RunRecorder
from gateway.conversations.store import MemoryStore
from gateway.core.events import Interrupt, RunFinished, RunStarted, TextDelta, ToolCallEnd, ToolCallStart
from gateway.core.turn import Message, Resume, ToolCall, Turn


def exchange_once(mapper: ConversationMapper, turn: Turn, client: str, upstream: str, events: list[object],
                  transcript: list[Message] | None = None) -> Turn:
    async def run() -> Turn:
        exchange = await mapper.begin("r", turn, registry.get(client), registry.get(upstream))
        recorder = RunRecorder()
        recorder.record(events)  # type: ignore[arg-type]
        await mapper.finish(exchange, recorder, transcript)
        return exchange.upstream_turn

    return asyncio.run(run())


def test_full_history_client_sends_a_delta_upstream_only_what_it_has_not_seen() -> None:
    mapper = ConversationMapper(MemoryStore())
    first = Turn([Message("user", "use the tool", "u1")], conversation_id="t")
    sent = exchange_once(mapper, first, "ag-ui", "ag-kit", [RunStarted(), ToolCallStart("c", "ask"), ToolCallEnd("c"),
                                                            RunFinished()])
    assert sent.messages == first.messages and sent.conversation_id == "t" and sent.history == "delta"
    second = Turn([Message("user", "use the tool", "u1"),
                   Message("assistant", "", "a-client-id", [ToolCall("c", "ask", "{}")]),
                   Message("tool", "yes", "t1", tool_call_id="c")], conversation_id="t")
    sent = exchange_once(mapper, second, "ag-ui", "ag-kit", [RunStarted(), TextDelta("m", "ok"), RunFinished()])
    assert sent.messages == [Message("tool", "yes", "t1", tool_call_id="c")]


def test_resume_with_nothing_new_sends_no_messages_again() -> None:
    mapper = ConversationMapper(MemoryStore())
    turn = Turn([Message("user", "delete it", "u1")], conversation_id="t")
    exchange_once(mapper, turn, "ag-ui", "ag-kit", [RunStarted(), Interrupt("i", tool_call_id="c"),
                                                   RunFinished("interrupt")])
    resumed = exchange_once(mapper, Turn(turn.messages, conversation_id="t", resume=[Resume("i")]), "ag-ui",
                            "vercel", [RunStarted(), RunFinished()])
    assert resumed.resume == [Resume("i", tool_call_id="c")]  # the tool call comes from the stored interrupt
    sent = exchange_once(mapper, Turn(turn.messages, conversation_id="t", resume=[Resume("i")]), "ag-ui", "ag-kit",
                         [RunStarted(), RunFinished()])
    assert sent.messages == []


def test_delta_client_gets_its_history_filled_in_for_a_full_history_upstream() -> None:
    mapper = ConversationMapper(MemoryStore())
    exchange_once(mapper, Turn([Message("user", "hi")], "delta", "c"), "ag-kit", "ag-ui",
                  [RunStarted(), TextDelta("m", "hello"), RunFinished()])
    sent = exchange_once(mapper, Turn([Message("user", "again")], "delta", "c"), "ag-kit", "ag-ui",
                         [RunStarted(), RunFinished()])
    assert [(m.role, m.text) for m in sent.messages] == [("user", "hi"), ("assistant", "hello"), ("user", "again")]
    assert sent.history == "full"


def test_clients_without_ids_are_keyed_by_test_case_and_transcript() -> None:
    mapper = ConversationMapper(MemoryStore())
    meta = {"test_case_id": "tc"}
    one = [Message("user", "hi")]
    reply = [Message("assistant", "hello")]
    first = exchange_once(mapper, Turn(one, metadata=meta), "agent-respond", "ag-kit",
                          [RunStarted(), TextDelta("m", "hello"), RunFinished()], transcript=one + reply)
    two = Turn([*one, *reply, Message("user", "again")], metadata=meta)
    second = exchange_once(mapper, two, "agent-respond", "ag-kit", [RunStarted(), RunFinished()])
    assert second.conversation_id == first.conversation_id  # one upstream conversation
    assert [m.text for m in second.messages] == ["again"]
    rerun = exchange_once(mapper, Turn(one, metadata=meta), "agent-respond", "ag-kit", [RunStarted(), RunFinished()])
    assert rerun.conversation_id != first.conversation_id  # a new run of the test case starts afresh


def test_an_edited_history_under_a_delta_upstream_starts_a_new_conversation_holding_it() -> None:
    mapper = ConversationMapper(MemoryStore())
    first = Turn([Message("user", "hi", "u1")], conversation_id="t")
    sent = exchange_once(mapper, first, "ag-ui", "ag-kit", [RunStarted(), TextDelta("m", "hello"), RunFinished()])
    edited = Turn([Message("user", "hi there", "u1")], conversation_id="t")
    again = exchange_once(mapper, edited, "ag-ui", "ag-kit", [RunStarted(), TextDelta("m", "hi!"), RunFinished()])
    assert again.conversation_id != sent.conversation_id and again.history == "full"
    assert [m.text for m in again.messages] == ["hi there"]
    extended = Turn([*edited.messages, Message("assistant", "hi!"), Message("user", "bye", "u2")],
                    conversation_id="t")
    then = exchange_once(mapper, extended, "ag-ui", "ag-kit", [RunStarted(), RunFinished()])
    assert then.conversation_id == again.conversation_id and [m.text for m in then.messages] == ["bye"]


def test_a_resume_of_an_interrupt_no_longer_waiting_is_not_sent_again() -> None:
    mapper = ConversationMapper(MemoryStore())
    turn = Turn([Message("user", "delete it", "u1")], conversation_id="t")
    exchange_once(mapper, turn, "ag-ui", "ag-kit", [RunStarted(), Interrupt("i"), RunFinished("interrupt")])
    resumed = Turn(turn.messages, conversation_id="t", resume=[Resume("i")])
    assert exchange_once(mapper, resumed, "ag-ui", "ag-kit", [RunStarted(), RunFinished()]).resume == [Resume("i")]
    assert exchange_once(mapper, resumed, "ag-ui", "ag-kit", [RunStarted(), RunFinished()]).resume == []


def test_the_upstream_variant_learned_once_is_remembered_by_the_conversation() -> None:
    async def run() -> tuple[str | None, str]:
        mapper = ConversationMapper(MemoryStore())
        exchange = await mapper.begin("r", Turn([Message("user", "hi")], conversation_id="t"),
                                      registry.get("ag-ui"), registry.get("vercel"))
        exchange.upstream_variant = "inkeep"  # what the proxy does when the response headers show it
        await mapper.finish(exchange, RunRecorder())
        later = await mapper.begin("r", Turn([Message("user", "hi"), Message("assistant", ""),
                                              Message("user", "again")], conversation_id="t"),
                                   registry.get("ag-ui"), registry.get("vercel"))
        return later.upstream_variant, later.upstream_turn.history

    assert asyncio.run(run()) == ("inkeep", "delta")
