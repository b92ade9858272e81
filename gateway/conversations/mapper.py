"""Conversation mapping between dialects that keep history and dialects that don't.

Per conversation the gateway keeps the canonical history the upstream has seen (what it was sent and what it
said), the upstream's conversation id, open client tool calls and interrupts, and the last AG-UI state. From that,
each turn the upstream gets what its dialect expects:

```
client sends     upstream wants   the upstream gets
full history     full history     the client's history, as sent
full history     only what's new  the client's messages past the longest prefix the upstream has already seen
only what's new  full history     the stored history with the client's new messages appended
only what's new  only what's new  the client's messages, as sent
```

A full history that does not extend what a delta upstream has seen (useChat's `regenerate()`, an edited message),
or one the gateway has never seen at all (an eval's golden transcript, a client that brings its own), is never sent
as if only its last message were new: the upstream starts a new conversation that is given the client's whole
history (`history="full"`), as far as its dialect can carry it.

What "extends" means is what the agent was told and said, not how a client spelled it: clients rename ids, split
one assistant message around a tool call or a data part, merge several, or add messages of their own (activity,
reasoning); the comparison reads each history as the turns an agent hears (`heard`).

A client with no conversation id (agent-respond) is keyed by its test case and a hash of the transcript up to where
the agent last spoke (before the new user message, or the results of the client tools it asked for): the record of
a conversation moves to the key of its new transcript after every turn, so the next turn of the same eval finds it,
and a rerun of the same test case starts afresh.

A store that does not answer never makes a turn look like a first one. A turn that needs what it holds (a delta
client's turn to a full-history upstream, an answer to an interrupt) waits up to `STORE_PATIENCE` for it, then is
refused (`StoreUnavailable`, 503); any other goes on, the upstream given all it can be: the client's whole history
when its conversation upstream is new.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

import orjson
from pydantic import TypeAdapter

from gateway.conversations.answers import shaped
from gateway.conversations.recorder import RunRecorder
from gateway.conversations.store import ConversationStore, StoreError, scoped_digest, scoped_key
from gateway.core.codec import Dialect
from gateway.core.errors import InterruptAnswered, StoreUnavailable, UnknownRun
from gateway.core.ids import new_id
from gateway.core.turn import ANY_OPEN_INTERRUPT, History, Message, Resume, Turn, new_messages

log = logging.getLogger("agent_gateway.conversation")

STORE_PATIENCE = 5.0
"""Seconds a turn that needs its history waits for a store that does not answer, before it is refused."""
STORE_RETRY_SECONDS = 0.25


@dataclass(slots=True)
class Conversation:
    key: str
    upstream_id: str
    history: list[Message] = field(default_factory=list)
    pending_tools: dict[str, str] = field(default_factory=dict)
    """Client tool calls waiting for a result: id -> tool name."""
    interrupts: dict[str, str | None] = field(default_factory=dict)
    """Interrupts waiting for a resume: id -> the tool call they are about, if any."""
    state: Any = None
    upstream_variant: str | None = None
    """What the upstream showed itself to be (Inkeep, by its response headers), for the next turn on any replica."""
    interrupted_run: str | None = None
    """The client's id of the run that ended in the open `interrupts`: a client that answers a run rather than
    each interrupt (A2A continues a task) resumes them all by naming it."""
    answered: list[str] = field(default_factory=list)
    """The last interrupts (and interrupted runs) the client answered: an answer sent again (a retry, a double
    click) is dropped rather than passed on or read as something the user said."""
    interrupt_schemas: dict[str, Any] = field(default_factory=dict)
    """The `responseSchema` of each open interrupt that declared one: what its answer must be."""
    continued: bool = False
    """A later run continued this record of a chain of runs (`Turn.chains_runs`): an upstream that keeps the
    history has moved past it, so continuing from here again is a fork."""


@dataclass(slots=True)
class Exchange:
    """One turn in flight: the conversation as it was, and what goes upstream."""

    route: str
    principal: str
    conversation: Conversation
    client_turn: Turn
    upstream_turn: Turn
    known_history: list[Message]
    """The history the upstream will have seen once it reads this turn: the base the run's messages extend."""
    stored: bool
    upstream_variant: str | None
    history_lost: bool = False
    """The store failed this turn (it could not be read, or the turn not saved): the access log says so."""
    decision: str = ""
    """What the upstream was sent this turn and why, in a sentence (the inspector shows it)."""
    followed: Conversation | None = None
    """The record of a chain's run this turn continues, as it was read: marked continued once this turn is stored,
    when the upstream keeps the history."""


class ConversationMapper:
    def __init__(self, store: ConversationStore, *, max_messages: int = 1000, max_bytes: int = 1 << 62) -> None:
        self.store = store
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        """What the store keeps of one conversation: a run's recorder holds no more."""

    async def begin(self, route: str, turn: Turn, client: Dialect, upstream: Dialect,
                    variant: str | None = None, principal: str = "anonymous", *,
                    transparent_ids: bool = False) -> Exchange:
        """What goes upstream this turn. `variant` is the upstream's as configured or learned, if known; the
        conversation remembers what its upstream turned out to be. `principal` is whose conversations the caller
        reaches (see `gateway.server.access`): the same id from another principal is another conversation, here
        and upstream, unless `transparent_ids` says the upstream is sent the client's own ids."""
        key = self._key(route, principal, turn)
        conversation, readable = await self._load(key)
        if not readable and _needs_history(turn, upstream.history_of(variant)):
            conversation, readable = await self._load_within(key, STORE_PATIENCE)
            if not readable:
                raise StoreUnavailable("the conversation store did not answer, and this turn needs the history it "
                                       "keeps: retry shortly")
        stored = conversation is not None
        if turn.follows is not None and conversation is None and readable:
            raise UnknownRun(f"Previous response with id '{turn.follows}' not found.")
        followed = replace(conversation) if turn.follows is not None and conversation is not None else None
        if conversation is None:
            conversation = Conversation(key, _upstream_id(route, principal, turn.conversation_id, transparent_ids))
        variant = variant or conversation.upstream_variant
        upstream_history = upstream.history_of(variant)
        forked = followed is not None and followed.continued and upstream_history == "delta"
        if forked:
            # A second run from the same point of a chain: the upstream's copy has moved on, so this branch is a
            # new upstream conversation, given the whole history.
            conversation.upstream_id = new_id("conv")
        resume, unanswerable, repeated = _resumes(turn, conversation, stored or not transparent_ids)
        if repeated and not resume and not unanswerable and not _says_anything_new(turn, conversation, stored):
            raise InterruptAnswered(f"interrupt {repeated[0]!r} was already answered; its answer is not sent again")
        if unanswerable and not any(m.role == "user" for m in new_messages(turn)):
            # An answer to a run that waits for nothing any more: what the client said is a new message.
            turn = replace(turn, messages=turn.messages + [Message("user", text) for text in unanswerable])
        messages, known, history, why = self._messages_for_upstream(turn, conversation, stored, upstream_history,
                                                                    transparent_ids)
        if forked:
            history, messages = "full", known
            why = "a second run from the same point of a chain: a new upstream conversation, given the whole history"
        state = turn.state
        if state is None and "state" not in client.carries:
            state = conversation.state  # the upstream gets back the state it last reported
        upstream_turn = replace(turn, messages=messages, history=history,
                                conversation_id=conversation.upstream_id, run_id=None, resume=resume, state=state)
        log.debug("conversation %s (%s): the upstream's %s is sent %s, %d of the %d messages it will have seen%s",
                  key, "stored" if stored else "new" if readable else "store unreadable", conversation.upstream_id,
                  "the whole history" if history == "full" else "what is new", len(messages), len(known),
                  f", and {len(resume)} answers to interrupts" if resume else "")
        if not stored and why == _FULL_ASKED:
            why = "a new upstream conversation: the upstream takes the whole history each turn"
        return Exchange(route, principal, conversation, turn, upstream_turn, known, stored, variant,
                        history_lost=not readable,
                        decision=f"{_DECISION[history]} ({len(messages)} of {len(known)} messages): {why}",
                        followed=followed if upstream_history == "delta" else None)

    async def finish(self, exchange: Exchange, recorder: RunRecorder, next_transcript: list[Message] | None = None
                     ) -> None:
        """Store what the run added. `next_transcript` is what a client without ids will send back next turn."""
        conversation = exchange.conversation
        if recorder.overflowed:
            log.warning("conversation %s: the run was longer than the store keeps; its reply is stored as left out",
                        conversation.key)
        history = exchange.known_history + recorder.close()
        conversation.history = history[-self.max_messages:]
        answered = {m.tool_call_id for m in exchange.client_turn.messages if m.role == "tool"}
        conversation.pending_tools = {k: v for k, v in conversation.pending_tools.items() if k not in answered}
        conversation.pending_tools.update(recorder.pending_tools)
        resumed = {r.interrupt_id for r in exchange.upstream_turn.resume}
        if resumed:
            ids = [*resumed, *([conversation.interrupted_run] if conversation.interrupted_run else [])]
            conversation.answered = [*conversation.answered, *ids][-_ANSWERED_KEPT:]
        conversation.interrupts = {k: v for k, v in conversation.interrupts.items() if k not in resumed}
        conversation.interrupts.update({i.id: i.tool_call_id for i in recorder.interrupts})
        conversation.interrupt_schemas = {k: v for k, v in conversation.interrupt_schemas.items()
                                          if k in conversation.interrupts}
        conversation.interrupt_schemas.update({i.id: i.response_schema for i in recorder.interrupts
                                               if i.response_schema is not None})
        if recorder.interrupts:
            conversation.interrupted_run = exchange.client_turn.run_id
        if recorder.state.known:
            conversation.state = recorder.state.value
        conversation.upstream_variant = exchange.upstream_variant
        if recorder.upstream_thread_id and exchange.upstream_turn.history == "full":
            # Some AG-UI servers mint their own thread id: follow it, or the next turn starts a new thread.
            conversation.upstream_id = recorder.upstream_thread_id
        old_key = conversation.key
        client_turn = exchange.client_turn
        if next_transcript is not None:
            conversation.key = _derived_key(exchange.route, exchange.principal, client_turn, next_transcript)
        elif client_turn.chains_runs and client_turn.run_id:
            # Kept as this run leaves it, under the run's id; the record it continued stays, for a fork.
            conversation.key = scoped_key("after", exchange.route, exchange.principal, client_turn.run_id)
        group = scoped_key("principal", exchange.principal)
        try:
            await self.store.put(conversation.key, encode_conversation(conversation), group)
            if exchange.followed is not None and not exchange.followed.continued:
                exchange.followed.continued = True
                await self.store.put(old_key, encode_conversation(exchange.followed), group)
            elif conversation.key != old_key and exchange.stored and not client_turn.chains_runs:
                await self.store.delete(old_key)
        except StoreError as exc:
            exchange.history_lost = True
            log.warning("conversation %s not saved: %s", conversation.key, exc)

    async def history_after(self, route: str, principal: str, run_id: str) -> list[Message]:
        """The whole history as a run of a chain left it (`Turn.chains_runs`): raises `UnknownRun` when the store
        keeps no such run of the caller's, `StoreError` when it cannot be asked."""
        key = scoped_key("after", route, principal, run_id)
        conversation, readable = await self._load(key)
        if not readable:
            raise StoreError(f"conversation {key} could not be read")
        if conversation is None:
            raise UnknownRun(f"Previous response with id '{run_id}' not found.")
        return conversation.history

    async def forget_chain(self, route: str, principal: str, run_id: str) -> None:
        """Delete the conversation as a run of a chain left it (`Turn.chains_runs`), if it was kept (raises
        `StoreError`)."""
        await self.store.delete(scoped_key("after", route, principal, run_id))

    @staticmethod
    def _key(route: str, principal: str, turn: Turn) -> str:
        if turn.conversation_id:
            return scoped_key("client", route, principal, turn.conversation_id)
        if turn.follows is not None:
            return scoped_key("after", route, principal, turn.follows)
        if turn.chains_runs and turn.run_id:
            return scoped_key("after", route, principal, turn.run_id)  # a chain's first run: nothing to find
        said_before = len(turn.messages) - len(new_messages(turn))  # up to where the agent last spoke
        return _derived_key(route, principal, turn, turn.messages[:said_before])

    async def _load(self, key: str, *, quiet: bool = False) -> tuple[Conversation | None, bool]:
        """The stored conversation, if any, and whether the store could be asked."""
        try:
            raw = await self.store.get(key)
        except StoreError as exc:
            if not quiet:
                log.warning("conversation %s not loaded: %s", key, exc)
            return None, False
        if raw is None:
            return None, True
        try:
            return decode_conversation(raw), True
        except (ValueError, TypeError, KeyError) as exc:
            log.warning("conversation %s unreadable, starting afresh: %s", key, exc)
            return None, True

    async def _load_within(self, key: str, patience: float) -> tuple[Conversation | None, bool]:
        """`_load`, asked again until the store answers or `patience` seconds have gone: a store that restarts or
        stalls for a moment costs the turn a wait, not its history."""
        deadline = time.monotonic() + patience
        while (left := deadline - time.monotonic()) > 0:
            await asyncio.sleep(min(STORE_RETRY_SECONDS, left))
            conversation, readable = await self._load(key, quiet=True)
            if readable:
                log.info("conversation %s loaded once the store answered again", key)
                return conversation, True
        return None, False

    def _messages_for_upstream(self, turn: Turn, conversation: Conversation, stored: bool, upstream: History,
                               transparent: bool = False) -> tuple[list[Message], list[Message], History, str]:
        """(what the upstream is sent, the whole history it will have seen, which of the two the first is, why)."""
        if turn.history == "delta":
            known = conversation.history + turn.messages
            if upstream == "full":
                return known, known, "full", ("the client sends only what is new and the upstream takes the whole "
                                              "history: the stored history with the new messages")
            return turn.messages, known, "delta", "client and upstream both keep the history: the new messages"
        if upstream == "full":
            return turn.messages, turn.messages, "full", _FULL_ASKED
        if not stored and turn.conversation_id is None:
            # a new upstream conversation: it has heard nothing yet
            return turn.messages, turn.messages, "full", "a new upstream conversation, given the client's history"
        if not stored:
            new = new_messages(turn)
            answers = turn.resume or any(m.role == "tool" for m in new)
            if answers or not heard(turn.messages[:len(turn.messages) - len(new)]):
                # What is new answers the upstream (a tool's result, a resume): its conversation is the one that
                # asked, reached by the derived id even when the store lost it.
                return new, turn.messages, "delta", ("no stored conversation for this id: what is new since the "
                                                     "agent last spoke")
            # A history the gateway never saw (an eval's golden transcript, a client's own): a new upstream
            # conversation is given all of it. Sent into the derived one, only its last message would be heard.
            log.info("conversation %s: a history of %d messages the gateway has not seen; starting a new upstream "
                     "conversation with it", conversation.key, len(turn.messages))
            if not transparent:
                conversation.upstream_id = new_id("conv")
            return turn.messages, turn.messages, "full", ("a history the gateway has not seen: a new upstream "
                                                          "conversation, given all of it")
        client, heard_before = heard(turn.messages), heard(conversation.history)
        seen = _common_prefix(client, heard_before)
        if seen == len(heard_before):
            after = client[seen - 1].end if seen else 0
            return ([m for m in turn.messages[after:] if m.role not in _UNHEARD], turn.messages, "delta",
                    f"the upstream keeps the history and has heard {seen} of these turns: the rest")
        # The client's history forks from what the upstream has heard: a regenerated or edited turn. A new
        # upstream conversation, given the whole history, answers it; appending it would answer another question.
        log.info("conversation %s: the client's history differs from the upstream's at turn %d of %d; "
                 "starting a new upstream conversation", conversation.key, seen, len(client))
        conversation.upstream_id = new_id("conv")
        conversation.interrupts = {}
        conversation.pending_tools = {}
        return turn.messages, turn.messages, "full", (f"fork: the client's history differs from what the upstream "
                                                      f"heard at turn {seen + 1}: a new upstream "
                                                      f"conversation, given the whole history")


_FULL_ASKED = "the upstream takes the whole history each turn: the client's, as sent"
_DECISION = {"full": "whole history", "delta": "delta"}


def _upstream_id(route: str, principal: str, client_id: str | None, transparent: bool) -> str:
    """The id a new conversation has upstream. Derived, not minted, so that a conversation the store lost still
    reaches the upstream's copy of it; and from the principal, so that another caller naming the same client id
    never does. An upstream may key state on any id it is sent: it must never be one a client chose."""
    if client_id is None:
        return new_id("conv")
    if transparent:
        return client_id
    return f"conv_{scoped_digest('upstream', route, principal, client_id)[:32]}"


def _needs_history(turn: Turn, upstream: History) -> bool:
    """Whether the turn cannot be put to the upstream without the conversation the store holds: a delta client's
    turn to an upstream that must be sent the whole history, answers to interrupts only the store can place, or a
    turn that continues a stored response (which must not be taken for a first turn)."""
    return (turn.history == "delta" and upstream == "full") or bool(turn.resume) or turn.follows is not None


def _resumes(turn: Turn, conversation: Conversation, checked: bool) -> tuple[list[Resume], list[str], list[str]]:
    """The client's answers to the conversation's open interrupts, each with the tool call it is about; one that
    names the interrupted run, or no interrupt (`ANY_OPEN_INTERRUPT`), answers each open one. Also the text of
    answers to nothing open, and the ids of answers to interrupts answered already (dropped). An interrupt id is an
    upstream's handle (an A2A task id) that only the caller it was given to may answer; unless `checked` (a
    conversation the gateway does not hold, on a route of transparent ids) an answer passes as sent."""
    resumes: list[Resume] = []
    unanswerable: list[str] = []
    repeated: list[str] = []
    open_interrupts = conversation.interrupts
    for r in turn.resume:
        if not checked or r.interrupt_id in open_interrupts:
            resumes.append(r if r.tool_call_id else replace(r, tool_call_id=open_interrupts.get(r.interrupt_id)))
        elif r.interrupt_id in (conversation.interrupted_run, ANY_OPEN_INTERRUPT) and open_interrupts:
            resumes += [replace(r, interrupt_id=id_, tool_call_id=call) for id_, call in open_interrupts.items()]
        elif r.interrupt_id in conversation.answered:
            repeated.append(r.interrupt_id)
        elif r.interrupt_id == ANY_OPEN_INTERRUPT:
            continue  # an answer to whatever is open, when nothing is
        elif isinstance(r.payload, str) and r.payload:
            unanswerable.append(r.payload)
    # An answer that came in a message (A2A) could not know the shape the interrupt asks for: given it, or refused.
    schemas = conversation.interrupt_schemas
    resumes = [replace(r, payload=shaped(r.payload, schemas[r.interrupt_id]))
               if r.message_id is not None and r.status == "resolved" and r.interrupt_id in schemas else r
               for r in resumes]
    if repeated:
        log.info("conversation %s: dropped answers to interrupts already answered: %s", conversation.key,
                 ", ".join(repeated))
    return resumes, unanswerable, repeated


def _says_anything_new(turn: Turn, conversation: Conversation, stored: bool) -> bool:
    """Whether a turn holds more than what the upstream has heard: a new message or a tool's result."""
    if turn.history == "delta" or not stored:
        return bool(turn.messages) if turn.history == "delta" else bool(new_messages(turn))
    client = heard(turn.messages)
    return _common_prefix(client, heard(conversation.history)) < len(client)


_ANSWERED_KEPT = 32
"""How many answered interrupts a conversation remembers, to drop an answer sent again."""

def _derived_key(route: str, principal: str, turn: Turn, transcript: list[Message]) -> str:
    digest = hashlib.sha256(str(turn.metadata.get("test_case_id", "")).encode())
    for message in transcript:
        digest.update(orjson.dumps(_signature(message)))
    return scoped_key("derived", route, principal, digest.hexdigest())


def _signature(message: Message) -> tuple[Any, ...]:
    """What two copies of one message agree on, whichever dialect carried them (ids and names may not survive)."""
    return (message.role, message.text.strip(), tuple(c.id for c in message.tool_calls), message.tool_call_id)


_UNHEARD = frozenset({"reasoning", "activity"})
"""Roles of what a client shows but an agent is not told back: its reasoning, activity messages."""


@dataclass(frozen=True, slots=True)
class Heard:
    """One turn of a conversation as an agent hears it, and where it ends in the client's list of messages."""

    signature: tuple[Any, ...]
    end: int


def heard(messages: list[Message]) -> list[Heard]:
    """A history as the turns an agent hears, however a client rebuilt it: ids are ignored, consecutive assistant
    messages are one turn (a client may split one around a tool call or a data part, or join several), whitespace
    between its pieces does not count, a tool result is known by its call, and reasoning and activity are left out.
    """
    out: list[Heard] = []
    text: list[str] = []
    calls: list[str] = []
    end = 0

    def close() -> None:
        out.append(Heard(("assistant", "".join("".join(text).split()), tuple(calls)), end))
        text.clear()
        calls.clear()

    speaking = False
    for index, message in enumerate(messages):
        if message.role in _UNHEARD:
            continue
        if message.role == "assistant":
            speaking = True
            text.append(message.text)
            calls.extend(c.id for c in message.tool_calls)
            end = index + 1
            continue
        if speaking:
            close()
            speaking = False
        if message.role == "tool":
            out.append(Heard(("tool", message.tool_call_id), index + 1))
        else:
            out.append(Heard((message.role, " ".join(message.text.split())), index + 1))
    if speaking:
        close()
    return out


def _common_prefix(client: list[Heard], known: list[Heard]) -> int:
    count = 0
    for left, right in zip(client, known, strict=False):
        if left.signature != right.signature:
            break
        count += 1
    return count


_STORED = TypeAdapter(Conversation)
"""How a conversation is stored: its dataclasses as a JSON object per dataclass, keys named as the fields. Reading a
record, a field it lacks takes its default and a key no field has is ignored; anything else wrong is a ValueError."""


def encode_conversation(conversation: Conversation) -> bytes:
    return _STORED.dump_json(conversation)


def decode_conversation(raw: bytes) -> Conversation:
    return _STORED.validate_json(raw)
