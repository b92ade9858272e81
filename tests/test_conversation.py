from __future__ import annotations

import asyncio
import logging

import httpx
import pytest
from e2e import post, request_body, user_message
from helpers import encode
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from adapters import registry
from gateway.config import GatewayConfig
from gateway.conversations.mapper import Conversation, ConversationMapper, decode_conversation, encode_conversation
from gateway.conversations.recorder import LEFT_OUT, RunRecorder
from gateway.conversations.store import MemoryStore, StoreError, StoreUnreachable
from gateway.core.errors import InterruptAnswered, StoreUnavailable
from gateway.core.events import (
    Interrupt,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.turn import ContentPart, Message, Resume, ToolCall, Turn
from gateway.server.app import create_app
from gateway.server.operations.logs import ACCESS


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
    assert sent.messages == first.messages and sent.history == "delta"
    second = Turn([Message("user", "use the tool", "u1"),
                   Message("assistant", "", "a-client-id", [ToolCall("c", "ask", "{}")]),
                   Message("tool", "yes", "t1", tool_call_id="c")], conversation_id="t")
    sent = exchange_once(mapper, second, "ag-ui", "ag-kit", [RunStarted(), TextDelta("m", "ok"), RunFinished()])
    assert sent.messages == [Message("tool", "yes", "t1", tool_call_id="c")]


def test_the_upstreams_conversation_id_is_the_principals_own_and_survives_a_lost_store() -> None:
    async def upstream_id(route: str, principal: str, client_id: str, transparent: bool = False) -> str | None:
        mapper = ConversationMapper(MemoryStore())  # a store of its own: as if the last one was lost
        exchange = await mapper.begin(route, Turn([Message("user", "hi")], conversation_id=client_id),
                                      registry.get("ag-ui"), registry.get("ag-kit"), principal=principal,
                                      transparent_ids=transparent)
        return exchange.upstream_turn.conversation_id

    async def run() -> None:
        mine = await upstream_id("r", "key:a", "t")
        assert mine == await upstream_id("r", "key:a", "t")
        assert mine not in {"t", await upstream_id("r", "key:b", "t"), await upstream_id("other", "key:a", "t"),
                            await upstream_id("r", "key:a", "t2")}
        assert await upstream_id("r", "key:a", "t", transparent=True) == "t"

    asyncio.run(run())


def test_resume_with_nothing_new_sends_no_messages_again() -> None:
    mapper = ConversationMapper(MemoryStore())
    turn = Turn([Message("user", "delete it", "u1")], conversation_id="t")
    exchange_once(mapper, turn, "ag-ui", "ag-kit", [RunStarted(), Interrupt("i", tool_call_id="c"),
                                                   RunFinished(outcome="interrupt")])
    resumed = exchange_once(mapper, Turn(turn.messages, conversation_id="t", resume=[Resume("i")]), "ag-ui",
                            "vercel", [RunStarted(), RunFinished()])
    assert resumed.resume == [Resume("i", tool_call_id="c")]  # the tool call comes from the stored interrupt
    other = Turn([Message("user", "delete it", "u1")], conversation_id="t2")
    exchange_once(mapper, other, "ag-ui", "ag-kit", [RunStarted(), Interrupt("j"), RunFinished(outcome="interrupt")])
    sent = exchange_once(mapper, Turn(other.messages, conversation_id="t2", resume=[Resume("j")]), "ag-ui", "ag-kit",
                         [RunStarted(), RunFinished()])
    assert sent.messages == [] and sent.resume == [Resume("j")]


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


def test_a_client_without_ids_answering_its_tool_finds_its_conversation() -> None:
    mapper = ConversationMapper(MemoryStore())
    one = [Message("user", "use the tool")]
    call = [Message("assistant", "", tool_calls=[ToolCall("c", "ask", "{}")])]
    first = exchange_once(mapper, Turn(one), "agent-respond", "ag-kit",
                          [RunStarted(), ToolCallStart("c", "ask"), ToolCallEnd("c"), RunFinished()],
                          transcript=one + call)
    answer = Turn([*one, *call, Message("tool", "blue", tool_call_id="c")])
    second = exchange_once(mapper, answer, "agent-respond", "ag-kit", [RunStarted(), RunFinished()])
    assert second.conversation_id == first.conversation_id  # keyed on the transcript before the tool's result
    assert [(m.role, m.text) for m in second.messages] == [("tool", "blue")] and second.history == "delta"


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
    exchange_once(mapper, turn, "ag-ui", "ag-kit", [RunStarted(), Interrupt("i"), RunFinished(outcome="interrupt")])
    resumed = Turn(turn.messages, conversation_id="t", resume=[Resume("i", payload="yes")])
    assert exchange_once(mapper, resumed, "ag-ui", "ag-kit", [RunStarted(), RunFinished()]).resume == [
        Resume("i", payload="yes")]
    with pytest.raises(InterruptAnswered):  # nothing else new: refused, neither sent nor read as "yes"
        exchange_once(mapper, resumed, "ag-ui", "ag-kit", [RunStarted(), RunFinished()])
    with_news = Turn([*turn.messages, Message("user", "and the other one", "u2")], conversation_id="t",
                     resume=[Resume("i", payload="yes")])
    sent = exchange_once(mapper, with_news, "ag-ui", "ag-kit", [RunStarted(), RunFinished()])
    assert sent.resume == [] and [m.text for m in sent.messages] == ["and the other one"]


def test_a_history_the_gateway_never_saw_starts_a_delta_upstream_conversation_with_all_of_it() -> None:
    mapper = ConversationMapper(MemoryStore())
    brought = Turn([Message("user", "My name is Ada."), Message("assistant", "Hello Ada."),
                    Message("user", "What is my name?")], conversation_id="t")
    sent = exchange_once(mapper, brought, "ag-ui", "ag-kit", [RunStarted(), TextDelta("m", "Ada."), RunFinished()])
    assert sent.history == "full" and sent.messages == brought.messages
    assert sent.conversation_id != exchange_once(  # a fresh upstream conversation, not the one derived from "t"
        ConversationMapper(MemoryStore()), Turn([Message("user", "hi")], conversation_id="t"), "ag-ui", "ag-kit",
        [RunStarted(), RunFinished()]).conversation_id
    later = Turn([*brought.messages, Message("assistant", "Ada."), Message("user", "Thanks")], conversation_id="t")
    then = exchange_once(mapper, later, "ag-ui", "ag-kit", [RunStarted(), RunFinished()])
    assert then.history == "delta" and then.conversation_id == sent.conversation_id
    assert [m.text for m in then.messages] == ["Thanks"]


def test_a_client_that_splits_or_joins_the_agents_messages_is_still_heard_as_the_same_history() -> None:
    mapper = ConversationMapper(MemoryStore())
    exchange_once(mapper, Turn([Message("user", "plan", "u1")], conversation_id="t"), "ag-ui", "ag-kit", [
        RunStarted(), TextStart("m"), TextDelta("m", "Planning. "), TextDelta("m", "Searching."), TextEnd("m"),
        ToolCallStart("c", "search", parent_message_id="m"), ToolCallEnd("c"), ToolResult("c", "found"),
        TextStart("n"), TextDelta("n", "Done."), TextEnd("n"), RunFinished()])
    rebuilt = [Message("user", "plan", "renamed-u1"), Message("activity", "", "a0"),
               Message("assistant", "Planning.", "m"), Message("reasoning", "hmm", "r"),
               Message("assistant", "Searching.", "m-1-0", [ToolCall("c", "search")]),
               Message("tool", '{"found": true}', "x", tool_call_id="c"),
               Message("assistant", "Done.", "n"), Message("user", "next", "u2")]
    sent = exchange_once(mapper, Turn(rebuilt, conversation_id="t"), "ag-ui", "ag-kit", [RunStarted(), RunFinished()])
    assert sent.history == "delta" and [m.text for m in sent.messages] == ["next"]


class OutageStore(MemoryStore):
    """A store that fails every read while `down`, as Redis does while it restarts."""

    down = False

    async def get(self, key: str) -> bytes | None:
        if self.down:
            raise StoreError("the store is down")
        return await super().get(key)


def test_an_answer_to_an_interrupt_waits_for_the_store_and_is_refused_past_its_patience() -> None:
    """Only the store knows which interrupt an answer is for, and that it is this caller's to answer: without it
    the answer would reach the upstream as a new message."""
    store = OutageStore()
    mapper = ConversationMapper(store, patience=0.6)
    turn = Turn([Message("user", "delete it", "u1")], conversation_id="t")
    exchange_once(mapper, turn, "ag-ui", "ag-kit", [RunStarted(), Interrupt("i", tool_call_id="c"),
                                                   RunFinished(outcome="interrupt")])
    answer = Turn(turn.messages, conversation_id="t", resume=[Resume("i", payload="yes")])

    async def answered_after_an_outage_of(seconds: float) -> Turn:
        store.down = True
        asyncio.get_running_loop().call_later(seconds, setattr, store, "down", False)
        exchange = await mapper.begin("r", answer, registry.get("ag-ui"), registry.get("ag-kit"))
        return exchange.upstream_turn

    assert asyncio.run(answered_after_an_outage_of(0.3)).resume == [Resume("i", payload="yes", tool_call_id="c")]
    with pytest.raises(StoreUnavailable, match="retry"):
        asyncio.run(answered_after_an_outage_of(5))


def test_a_turn_that_needs_nothing_stored_goes_on_without_the_store() -> None:
    store = OutageStore()
    store.down = True
    sent = exchange_once(ConversationMapper(store), Turn([Message("user", "hi")], conversation_id="t"), "ag-ui",
                         "ag-kit", [RunStarted(), RunFinished()])
    assert [m.text for m in sent.messages] == ["hi"]


class FailingOverStore(MemoryStore):
    """A store that fails as unreachable while `down`, as Redis does while it fails over."""

    down = False
    puts_refused = 0

    async def get(self, key: str) -> bytes | None:
        if self.down:
            raise StoreUnreachable("failing over")
        return await super().get(key)

    async def put(self, key: str, value: bytes, group: str = "") -> None:
        if self.down:
            self.puts_refused += 1
            raise StoreUnreachable("failing over")
        await super().put(key, value, group)


def test_a_store_that_fails_as_a_turn_ends_is_waited_for_within_its_patience_and_the_turn_is_saved() -> None:
    store = FailingOverStore()
    mapper = ConversationMapper(store, patience=5)
    turn = Turn([Message("user", "hi", "u1")], conversation_id="t")

    async def a_turn_ending_in_a_failover_of(seconds: float) -> None:
        exchange = await mapper.begin("r", turn, registry.get("ag-kit"), registry.get("ag-ui"))
        store.down = True
        asyncio.get_running_loop().call_later(seconds, setattr, store, "down", False)
        recorder = RunRecorder()
        recorder.record([RunStarted(), TextStart("m"), TextDelta("m", "hello"), TextEnd("m"), RunFinished()])
        await mapper.finish(exchange, recorder)
        assert not exchange.history_lost

    asyncio.run(a_turn_ending_in_a_failover_of(0.6))
    assert store.puts_refused > 1
    saved = decode_conversation(asyncio.run(store.get(mapper._key("r", "anonymous", turn))) or b"")
    assert [m.text for m in saved.history] == ["hi", "hello"]


def test_a_store_that_was_down_as_the_turn_began_is_not_waited_for_as_it_ends() -> None:
    store = FailingOverStore()
    store.down = True
    mapper = ConversationMapper(store, patience=30)

    async def turn() -> bool:
        exchange = await mapper.begin("r", Turn([Message("user", "hi")], conversation_id="t"),
                                      registry.get("ag-ui"), registry.get("ag-kit"))
        await asyncio.wait_for(mapper.finish(exchange, RunRecorder()), 5)
        return exchange.history_lost

    assert asyncio.run(turn())
    assert store.puts_refused == 1


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


# Records exactly as the hand-written codec stored them (`orjson.dumps` of the dataclasses); the first one from before
# conversations remembered their upstream's variant, so it has no `upstream_variant` key.
STORED_BEFORE_VARIANTS = (
    b'{"key":"client:5f0c","upstream_id":"conv_ab12","history":[{"role":"user","content":"use the tool","id":"u1",'
    b'"tool_calls":[],"tool_call_id":null,"name":null,"error":null},{"role":"assistant","content":"","id":null,'
    b'"tool_calls":[{"id":"c","name":"ask","arguments":"{\\"q\\":1}"}],"tool_call_id":null,"name":null,'
    b'"error":null}],"pending_tools":{"c":"ask"},"interrupts":{"i":"c"},"state":{"count":2}}'
)
STORED = (
    b'{"key":"derived:9a1e","upstream_id":"conv_cd34","history":[{"role":"user","content":[{"type":"text",'
    b'"text":"what is this?","url":null,"data":null,"media_type":null,"filename":null},{"type":"image","text":null,'
    b'"url":"https://example.com/cat.png","data":null,"media_type":"image/png","filename":null}],"id":"u1",'
    b'"tool_calls":[],"tool_call_id":null,"name":null,"error":null},{"role":"reasoning","content":"looking","id":"r1",'
    b'"tool_calls":[],"tool_call_id":null,"name":null,"error":null},{"role":"tool","content":"boom","id":null,'
    b'"tool_calls":[],"tool_call_id":"c","name":"ask","error":"boom"}],"pending_tools":{},"interrupts":{},'
    b'"state":null,"upstream_variant":"inkeep"}'
)


def test_conversations_stored_by_earlier_gateways_still_load_and_are_written_back_the_same() -> None:
    old = decode_conversation(STORED_BEFORE_VARIANTS)
    assert old == Conversation(
        "client:5f0c", "conv_ab12",
        [Message("user", "use the tool", "u1"), Message("assistant", "", None, [ToolCall("c", "ask", '{"q":1}')])],
        {"c": "ask"}, {"i": "c"}, {"count": 2}, None)
    assert encode_conversation(old) == STORED_BEFORE_VARIANTS[:-1] + (
        b',"upstream_variant":null,"interrupted_run":null,"answered":[],"interrupt_schemas":{},"interrupt_states":{},"upstream":"",'
        b'"continued":false,"transcript_key":null}')
    conversation = decode_conversation(STORED)
    assert conversation == Conversation("derived:9a1e", "conv_cd34", [
        Message("user", [ContentPart("text", text="what is this?"),
                         ContentPart("image", url="https://example.com/cat.png", media_type="image/png")], "u1"),
        Message("reasoning", "looking", "r1"),
        Message("tool", "boom", tool_call_id="c", name="ask", error="boom"),
    ], upstream_variant="inkeep")
    # From before runs, answered interrupts, answers' schemas and upstream states, files held by a provider, chains
    # and their transcripts' copies, and which of a route's upstreams heard it were kept:
    assert encode_conversation(conversation) == STORED[:-1].replace(
        b'"filename":null}', b'"filename":null,"file_id":null,"provider":null}') + (
        b',"interrupted_run":null,"answered":[],"interrupt_schemas":{},"interrupt_states":{},"upstream":"",'
        b'"continued":false,"transcript_key":null}')


def test_an_unreadable_stored_conversation_starts_afresh() -> None:
    async def run() -> tuple[bool, str]:
        store = MemoryStore()
        mapper = ConversationMapper(store)
        turn = Turn([Message("user", "hi")], conversation_id="t")
        key = mapper._key("r", "anonymous", turn)
        await store.put(key, b'{"key":"x","upstream_id":"y","history":[{"role":"nobody"}]}')
        exchange = await mapper.begin("r", turn, registry.get("ag-ui"), registry.get("ag-kit"))
        return exchange.stored, exchange.upstream_turn.history

    assert asyncio.run(run()) == (False, "delta")


def test_a_reply_longer_than_the_store_keeps_is_stored_as_left_out_and_the_users_words_kept(
        caplog: pytest.LogCaptureFixture) -> None:
    """Over real HTTP: an AG-Kit client (it sends only what is new) before an AG-UI agent (it needs the whole
    history). The first reply is longer than `store.max_conversation_bytes`: the second turn still carries the
    first question, with the reply marked as left out, and the access line says so."""
    seen: list[list[str]] = []
    long_reply = encode("ag-ui", [RunStarted(thread_id="t", run_id="r"), TextStart("m"), TextDelta("m", "x" * 5000),
                                  TextEnd("m"), RunFinished()])

    async def agent(request: Request) -> Response:
        body = await request.json()
        seen.append([m.get("content") or "" for m in body["messages"]])
        return Response(long_reply, media_type="text/event-stream")

    with Served(Starlette(routes=[Route("/agui", agent, methods=["POST"])])) as upstream, \
            caplog.at_level(logging.INFO, logger=ACCESS):
        config = GatewayConfig.model_validate({"store": {"url": "memory://", "max_conversation_bytes": 2000},
                                               "routes": [{"paths": ["/in"], "client_dialects": ["ag-kit"],
                                                           "upstream": {"url": upstream.url + "/agui",
                                                                        "dialect": "ag-ui"}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
            for text in ("q0", "q1"):
                answer = post(http, f"{gateway.url}/in", request_body("ag-kit", [user_message("ag-kit", text)],
                                                                      "c-long"))
                assert answer.status_code == 200
    assert seen[1] == ["q0", LEFT_OUT, "q1"], seen[1]
    assert [getattr(r, "history", None) for r in caplog.records if r.name == ACCESS][:1] == ["reply_left_out"]
