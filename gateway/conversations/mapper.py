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
reasoning); the comparison reads each history as the turns an agent hears (`history.heard`).

A client with no conversation id (agent-respond) is keyed by its test case and a hash of the transcript up to where
the agent last spoke (before the new user message, or the results of the client tools it asked for): the record of
a conversation moves to the key of its new transcript after every turn, so the next turn of the same eval finds it,
and a rerun of the same test case starts afresh. A client that continues runs by their ids (`Turn.chains_runs`)
is kept under each run's id too, and found by its transcript when it sends the whole of it back instead.

A store that does not answer never makes a turn look like a first one. A turn that needs what it holds (a delta
client's turn to a full-history upstream, an answer to an interrupt) waits up to the store's patience
(`store.patience`) for it, then is refused (`StoreUnavailable`, 503); any other goes on, the upstream given all it
can be: the client's whole history when its conversation upstream is new.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import orjson

from gateway.conversations.answers import AnswerNotExpected, shaped
from gateway.conversations.conversation import Conversation, Exchange, decode_conversation, encode_conversation
from gateway.conversations.history import DECISION, FULL_ASKED, needs_history, says_anything_new, sent_upstream
from gateway.conversations.recorder import RunRecorder
from gateway.conversations.store import (
    STORE_PATIENCE,
    ConversationStore,
    StoreError,
    StoreUnreachable,
    scoped_digest,
    scoped_key,
)
from gateway.core.codec import Dialect
from gateway.core.errors import InterruptAnswered, StoreUnavailable, UnknownRun
from gateway.core.ids import new_id
from gateway.core.turn import ANY_OPEN_INTERRUPT, Message, Resume, Turn, new_messages, revised

__all__ = ["STORE_PATIENCE", "Conversation", "ConversationMapper", "Exchange", "decode_conversation",
           "encode_conversation"]

log = logging.getLogger("agent_gateway.conversation")

STORE_RETRY_SECONDS = 0.25


class ConversationMapper:
    def __init__(self, store: ConversationStore, *, max_messages: int = 1000, max_bytes: int = 1 << 62,
                 patience: float = STORE_PATIENCE) -> None:
        self.store = store
        self.patience = patience
        """Seconds a turn that needs its history waits for a store that does not answer."""
        self.max_messages = max_messages
        self.max_bytes = max_bytes
        """What the store keeps of one conversation: a run's recorder holds no more."""

    async def begin(self, route: str, turn: Turn, client: Dialect, upstream: Dialect,
                    variant: str | None = None, principal: str = "anonymous", *,
                    transparent_ids: bool = False, heard_by: str = "") -> Exchange:
        """What goes upstream this turn. `variant` is the upstream's as configured or learned, if known; the
        conversation remembers what its upstream turned out to be. `principal` is whose conversations the caller
        reaches (see `gateway.server.request.access`): the same id from another principal is another conversation, here
        and upstream, unless `transparent_ids` says the upstream is sent the client's own ids. `heard_by` names which
        of the route's upstreams this is (`Conversation.upstream`): a conversation another one heard moves here, in
        a new upstream conversation given the whole history."""
        key = self._key(route, principal, turn)
        conversation, readable = await self._load(key)
        if not readable and needs_history(turn, upstream.history_of(variant)):
            conversation, readable = await self._load_within(key, self.patience)
            if not readable:
                raise StoreUnavailable("the conversation store did not answer, and this turn needs the history it "
                                       "keeps: retry shortly")
        stored = conversation is not None
        if turn.follows is not None and conversation is None and readable:
            raise UnknownRun(f"Previous response with id '{turn.follows}' not found.")
        followed = replace(conversation) if turn.follows is not None and conversation is not None else None
        if conversation is None:
            conversation = Conversation(key, _upstream_id(route, principal, turn.conversation_id, transparent_ids),
                                        upstream=heard_by)
        moved = stored and conversation.upstream != heard_by
        if moved:
            _moved(conversation, heard_by, transparent_ids)
        variant = variant or conversation.upstream_variant
        upstream_history = upstream.history_of(variant)
        forked = followed is not None and followed.continued and upstream_history == "delta"
        if forked:
            # A second run from the same point of a chain: the upstream's copy has moved on, so this branch is a
            # new upstream conversation, given the whole history.
            conversation.upstream_id = new_id("conv")
        resume, unanswerable, repeated = _resumes(turn, conversation, stored or not transparent_ids)
        if repeated and not resume and not unanswerable and not says_anything_new(turn, conversation, stored):
            raise InterruptAnswered(f"interrupt {repeated[0]!r} was already answered; its answer is not sent again")
        if unanswerable and not any(m.role == "user" for m in new_messages(turn)):
            # An answer to a run that waits for nothing any more: what the client said is a new message.
            turn = replace(turn, messages=turn.messages + [Message("user", text) for text in unanswerable])
        messages, known, history, why = sent_upstream(turn, conversation, stored, upstream_history, transparent_ids)
        if forked:
            history, messages = "full", known
            why = "a second run from the same point of a chain: a new upstream conversation, given the whole history"
        if moved:
            history, messages = "full", known
            why = "the conversation moves here from another of the route's upstreams: given the whole history"
        state = turn.state
        if state is None and "state" not in client.carries:
            state = conversation.state  # the upstream gets back the state it last reported
        upstream_turn = revised(turn, messages=messages, history=history,
                                conversation_id=conversation.upstream_id, run_id=None, resume=resume, state=state)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("conversation %s (%s): the upstream's %s is sent %s, %d of the %d messages it will have seen%s",
                      key, "stored" if stored else "new" if readable else "store unreadable", conversation.upstream_id,
                      "the whole history" if history == "full" else "what is new", len(messages), len(known),
                      f", and {len(resume)} answers to interrupts" if resume else "")
        if not stored and why == FULL_ASKED:
            why = "a new upstream conversation: the upstream takes the whole history each turn"
        return Exchange(route, principal, conversation, turn, upstream_turn, known, stored, variant,
                        history_lost=not readable,
                        decision=f"{DECISION[history]} ({len(messages)} of {len(known)} messages): {why}",
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
        conversation.interrupt_states = {k: v for k, v in conversation.interrupt_states.items()
                                         if k in conversation.interrupts}
        conversation.interrupt_states.update({i.id: i.upstream_state for i in recorder.interrupts
                                              if i.upstream_state is not None})
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
        keys = []
        if client_turn.chains_runs and client_turn.run_id:
            # Kept as this run leaves it, under the run's id; the record it continued stays, for a fork.
            keys.append(scoped_key("after", exchange.route, exchange.principal, client_turn.run_id))
        if next_transcript is not None:  # and where the client finds it when it sends the whole transcript back
            keys.append(_derived_key(exchange.route, exchange.principal, client_turn, next_transcript))
        group = _principal_group(exchange.principal)
        conversation.transcript_key = keys[1] if len(keys) > 1 else None
        followed = exchange.followed if exchange.followed is not None and not exchange.followed.continued else None
        if followed is not None:
            followed.continued = True
        moved_on = exchange.stored and bool(keys) and old_key not in keys and client_turn.follows is None

        async def write() -> None:
            for key in keys or [old_key]:
                conversation.key = key
                await self.store.put(key, encode_conversation(conversation), group)
            conversation.key = keys[0] if keys else old_key
            if followed is not None:
                await self.store.put(old_key, encode_conversation(followed), group)
            elif moved_on:
                await self.store.delete(old_key)  # found by the transcript it has moved on from

        # A store that answered as the turn began and does not now (failing over) is waited for, as a turn that
        # needs its history waits: the turn costs a wait, not its history. One that did not answer is not.
        failed = await _written_within(write, 0.0 if exchange.history_lost else self.patience)
        if failed is not None:
            exchange.history_lost = True
            log.warning("conversation %s not saved: %s", conversation.key, failed)

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
        """Delete the conversation as a run of a chain left it (`Turn.chains_runs`), and its copy kept for the
        transcript, if they were kept (raises `StoreError`)."""
        key = scoped_key("after", route, principal, run_id)
        conversation, readable = await self._load(key)
        if not readable:
            raise StoreError(f"conversation {key} could not be read")
        if conversation is not None and conversation.transcript_key is not None:
            await self.store.delete(conversation.transcript_key)
        await self.store.delete(key)

    async def heard_by(self, route: str, principal: str, turn: Turn) -> str | None:
        """Which of the route's upstreams heard the turn's conversation last (`Conversation.upstream`), if the
        store keeps it and answers."""
        conversation, _ = await self._load(self._key(route, principal, turn), quiet=True)
        return conversation.upstream if conversation is not None else None

    @staticmethod
    def _key(route: str, principal: str, turn: Turn) -> str:
        if turn.conversation_id:
            return scoped_key("client", route, principal, turn.conversation_id)
        if turn.follows is not None:
            return scoped_key("after", route, principal, turn.follows)
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

async def _written_within(write: Callable[[], Awaitable[None]], patience: float) -> StoreError | None:
    """`write` done, done again while the store does not answer (`StoreUnreachable`) for up to `patience` seconds;
    the error it gave up on, or None once written."""
    deadline = time.monotonic() + patience
    while True:
        try:
            await write()
            return None
        except StoreUnreachable as exc:
            if time.monotonic() + STORE_RETRY_SECONDS >= deadline:
                return exc
            await asyncio.sleep(STORE_RETRY_SECONDS)
        except StoreError as exc:
            return exc


@functools.lru_cache(maxsize=1024)
def _principal_group(principal: str) -> str:
    """The store's group of a principal's conversations (what a listing reads), the same for each of its turns."""
    return scoped_key("principal", principal)


def _upstream_id(route: str, principal: str, client_id: str | None, transparent: bool) -> str:
    """The id a new conversation has upstream. Derived, not minted, so that a conversation the store lost still
    reaches the upstream's copy of it; and from the principal, so that another caller naming the same client id
    never does. An upstream may key state on any id it is sent: it must never be one a client chose."""
    if client_id is None:
        return new_id("conv")
    if transparent:
        return client_id
    return f"conv_{scoped_digest('upstream', route, principal, client_id)[:32]}"


def _moved(conversation: Conversation, heard_by: str, transparent: bool) -> None:
    """A conversation another of the route's upstreams heard, as the one `heard_by` names starts it: a new
    conversation there (what the other showed itself to be and the ids it minted are not this one's)."""
    conversation.upstream = heard_by
    conversation.upstream_variant = None
    if not transparent:
        conversation.upstream_id = new_id("conv")


def _resumes(turn: Turn, conversation: Conversation, checked: bool) -> tuple[list[Resume], list[str], list[str]]:
    """The client's answers to the conversation's open interrupts, each with the tool call it is about; one that
    names the interrupted run, or no interrupt (`ANY_OPEN_INTERRUPT`), answers each open one. Also the text of
    answers to nothing open, and the ids of answers to interrupts answered already (dropped). An interrupt id is an
    upstream's handle (an A2A task id) that only the caller it was given to may answer; unless `checked` (a
    conversation the gateway does not hold, on a route of transparent ids) an answer passes as sent. A message that
    answers whatever is open (an MCP call's `message`: `ANY_OPEN_INTERRUPT` and a `message_id`) is the user's
    message when nothing is, as far as the gateway knows."""
    resumes: list[Resume] = []
    unanswerable: list[str] = []
    repeated: list[str] = []
    open_interrupts = conversation.interrupts
    for r in turn.resume:
        if r.interrupt_id == ANY_OPEN_INTERRUPT and r.message_id is not None and not open_interrupts:
            if isinstance(r.payload, str) and r.payload:
                unanswerable.append(r.payload)
        elif not checked or r.interrupt_id in open_interrupts:
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
    # Each goes with the schema its interrupt declared, for the upstream's dialect to write it so.
    schemas, states = conversation.interrupt_schemas, conversation.interrupt_states
    resumes = [replace(r, payload=_shaped(r, schemas[r.interrupt_id]), response_schema=schemas[r.interrupt_id],
                       upstream_state=states.get(r.interrupt_id))
               if r.message_id is not None and r.status == "resolved" and r.interrupt_id in schemas else
               replace(r, response_schema=schemas.get(r.interrupt_id), upstream_state=states.get(r.interrupt_id))
               for r in resumes]
    if repeated:
        log.info("conversation %s: dropped answers to interrupts already answered: %s", conversation.key,
                 ", ".join(repeated))
    return resumes, unanswerable, repeated


def _shaped(resume: Resume, schema: Any) -> Any:
    """An answer that came in a message as its interrupt's schema takes it; refused naming the interrupt, which
    the client is then asked again."""
    try:
        return shaped(resume.payload, schema)
    except AnswerNotExpected as refused:
        refused.interrupt_id = resume.interrupt_id
        raise


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


