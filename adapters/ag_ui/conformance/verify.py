"""`verifyEvents`: the run lifecycle, start/content/end pairing per id, steps, subagents and who owns what.

The lifecycle is one state whose transitions are `lifecycle`'s; steps and subagents are `scopes`'; the pairing and
the owners are kept here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .common import ABSENT, Event, Report, who
from .lifecycle import OVER, Run, after, mistakes
from .scopes import Scopes


class _Streamed(NamedTuple):
    """An entity opened, continued and closed by id."""

    opener: str
    end: str
    noun: str
    rule: str
    """How its rules start: `text` in `text-content-without-start`."""
    key: str
    """The field holding its id."""


_STREAMED = {
    "message": _Streamed("TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "text message", "text", "messageId"),
    "tool call": _Streamed("TOOL_CALL_START", "TOOL_CALL_END", "tool call", "tool-call", "toolCallId"),
    "reasoning message": _Streamed("REASONING_MESSAGE_START", "REASONING_MESSAGE_END", "reasoning message",
                                   "reasoning-message", "messageId"),
    "reasoning span": _Streamed("REASONING_START", "REASONING_END", "reasoning span", "reasoning-span", "messageId"),
}


class Verifier:
    """`verifyEvents`: the run lifecycle, start/content/end pairing by id, steps, subagents, and that a continuation's
    `subagentRunId` agrees with whoever opened the entity."""

    def __init__(self, fail: Report) -> None:
        self._fail = fail
        self._run = Run.NO_EVENT
        self._reset()

    def _reset(self) -> None:
        self._open: dict[str, dict[str, None]] = {kind: {} for kind in _STREAMED}
        self._ended: dict[str, set[str]] = {kind: set() for kind in _STREAMED}
        owners = ("message", "tool call", "activity", "reasoning message")
        self._owners: dict[str, dict[str, str | None]] = {kind: {} for kind in owners}
        self._scopes = Scopes(self._fail)

    def check(self, event: Event) -> None:
        kind = event["type"]
        for rule, message in mistakes(self._run, kind):
            self._fail(rule, message)
        if kind == "RUN_STARTED" and self._run in OVER:
            self._reset()
        handler = _VERIFY.get(kind)
        if handler is not None:
            handler(self, event)
        self._run = after(self._run, kind)

    def _disagrees(self, event: Event, kind: str, entity_id: str, owner: Any = ABSENT) -> bool:
        tag = event.get("subagentRunId")
        if owner is ABSENT:
            owner = self._owners[kind].get(entity_id, ABSENT)
        if tag is None or owner is ABSENT or owner == tag:
            return False
        self._fail("subagent-owner-mismatch", f"{event['type']} says subagentRunId '{tag}', but the {kind} "
                                              f"'{entity_id}' belongs to {who(owner)}, which opened it")
        return True

    def _opened(self, event: Event, kind: str, owner_kind: str) -> None:
        entity = _STREAMED[kind]
        entity_id = event[entity.key]
        if entity_id in self._open[kind]:
            self._fail(f"{entity.rule}-start-duplicate", f"{entity.opener} for {entity.noun} '{entity_id}', which is "
                                                         f"already open: end it with {entity.end} first")
            return
        owners = self._owners[owner_kind]
        known = entity_id in owners
        if known:
            self._disagrees(event, owner_kind, entity_id)
        self._open[kind][entity_id] = None
        if not known:
            owners[entity_id] = event.get("subagentRunId")

    def _continued(self, event: Event, kind: str, owner_kind: str) -> None:
        entity = _STREAMED[kind]
        entity_id = event[entity.key]
        closing = event["type"] == entity.end
        if entity_id not in self._open[kind]:
            state = f"which already ended ({entity.end})" if entity_id in self._ended[kind] else \
                f"which was never started ({entity.opener})"
            step = "end" if closing else "args" if kind == "tool call" else "content"
            self._fail(f"{entity.rule}-{step}-without-start", f"{event['type']} for {entity.noun} '{entity_id}', "
                                                              f"{state}")
            if closing:
                return
            self._open[kind][entity_id] = None
        self._disagrees(event, owner_kind, entity_id)
        if closing:
            del self._open[kind][entity_id]
            self._ended[kind].add(entity_id)

    def _text_start(self, event: Event) -> None:
        self._opened(event, "message", "message")

    def _text(self, event: Event) -> None:
        self._continued(event, "message", "message")

    def _reasoning_start(self, event: Event) -> None:
        span = event["type"] == "REASONING_START"
        self._opened(event, "reasoning span" if span else "reasoning message", "reasoning message")

    def _reasoning(self, event: Event) -> None:
        span = event["type"] == "REASONING_END"
        self._continued(event, "reasoning span" if span else "reasoning message", "reasoning message")

    def _tool_start(self, event: Event) -> None:
        call, parent, tag = event["toolCallId"], event.get("parentMessageId"), event.get("subagentRunId")
        if call in self._open["tool call"]:
            self._opened(event, "tool call", "tool call")
            return
        inherited: Any = ABSENT
        owners = self._owners["tool call"]
        if parent is not None and parent in self._owners["message"]:
            inherited = self._owners["message"][parent]
            if tag is not None and tag != inherited:
                self._fail("subagent-owner-mismatch", f"TOOL_CALL_START '{call}' says subagentRunId '{tag}', but its "
                                                      f"parent message '{parent}' belongs to {who(inherited)}: a "
                                                      f"tool call belongs to the message that carries it")
                owners.setdefault(call, tag)
                self._open["tool call"][call] = None
                return
        if call in owners:
            if not self._disagrees(event, "tool call", call) and tag is None and inherited is not ABSENT and (
                    inherited != owners[call]):
                self._fail("subagent-owner-mismatch", f"TOOL_CALL_START '{call}' reopens a tool call of "
                                                      f"{who(owners[call])} under parent message '{parent}' of "
                                                      f"{who(inherited)}: a tool call belongs to the message that "
                                                      f"carries it")
        else:
            owners[call] = tag if tag is not None else (None if inherited is ABSENT else inherited)
        self._open["tool call"][call] = None

    def _tool(self, event: Event) -> None:
        self._continued(event, "tool call", "tool call")

    def _tool_result(self, event: Event) -> None:
        self._owners["message"][event["messageId"]] = event.get("subagentRunId")

    def _activity_snapshot(self, event: Event) -> None:
        activity = event["messageId"]
        if activity not in self._owners["activity"] or event.get("replace") is not False:
            self._owners["activity"][activity] = event.get("subagentRunId")

    def _activity_delta(self, event: Event) -> None:
        self._disagrees(event, "activity", event["messageId"])

    def _encrypted(self, event: Event) -> None:
        entity, subtype = event["entityId"], event["subtype"]
        if subtype == "tool-call":
            kind, owner = "tool call", self._owners["tool call"].get(entity, ABSENT)
        else:
            kind = "message"
            owner = self._owners["message"].get(entity, self._owners["reasoning message"].get(entity, ABSENT))
        self._disagrees(event, kind, entity, owner)

    def _seed(self, messages: Any, authoritative: bool) -> None:
        """Messages replayed on the wire (a snapshot, RUN_STARTED.input) have owners later events must agree with."""
        for message in messages if isinstance(messages, list) else ():
            if not isinstance(message, dict) or not isinstance(message.get("id"), str):
                continue
            role, owner = message.get("role"), message.get("subagentRunId")
            bucket = self._owners["reasoning message" if role == "reasoning" else
                                  "activity" if role == "activity" else "message"]
            if authoritative or message["id"] not in bucket:
                bucket[message["id"]] = owner
            for call in message.get("toolCalls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str) and (
                        authoritative or call["id"] not in self._owners["tool call"]):
                    self._owners["tool call"][call["id"]] = owner

    def _messages_snapshot(self, event: Event) -> None:
        self._seed(event["messages"], authoritative=True)

    def _run_started(self, event: Event) -> None:
        run = event.get("input")
        self._seed(run.get("messages") if isinstance(run, dict) else None, authoritative=False)

    def _run_finished(self, event: Event) -> None:
        still_open = [("steps", self._scopes.open_steps())] + [
            (f"{_STREAMED[kind].noun}s", list(self._open[kind]))
            for kind in ("message", "reasoning message", "reasoning span", "tool call")
        ] + [("subagents", self._scopes.open_subagents())]
        for noun, names in still_open:
            if names:
                self._fail(f"run-finished-with-open-{noun.replace(' ', '-')}", f"RUN_FINISHED while {noun} are still "
                                                                               f"open: {', '.join(names)}; end each "
                                                                               f"one before the run")
        for kind in self._open:
            self._open[kind].clear()
        self._scopes.end_run()


_VERIFY: dict[str, Callable[[Verifier, Event], None]] = {
    "TEXT_MESSAGE_START": Verifier._text_start,
    "TEXT_MESSAGE_CONTENT": Verifier._text,
    "TEXT_MESSAGE_END": Verifier._text,
    "TOOL_CALL_START": Verifier._tool_start,
    "TOOL_CALL_ARGS": Verifier._tool,
    "TOOL_CALL_END": Verifier._tool,
    "TOOL_CALL_RESULT": Verifier._tool_result,
    "REASONING_START": Verifier._reasoning_start,
    "REASONING_MESSAGE_START": Verifier._reasoning_start,
    "REASONING_MESSAGE_CONTENT": Verifier._reasoning,
    "REASONING_MESSAGE_END": Verifier._reasoning,
    "REASONING_END": Verifier._reasoning,
    "REASONING_ENCRYPTED_VALUE": Verifier._encrypted,
    "STEP_STARTED": lambda verifier, event: verifier._scopes.step_started(event),
    "STEP_FINISHED": lambda verifier, event: verifier._scopes.step_finished(event),
    "ACTIVITY_SNAPSHOT": Verifier._activity_snapshot,
    "ACTIVITY_DELTA": Verifier._activity_delta,
    "SUBAGENT_STARTED": lambda verifier, event: verifier._scopes.subagent_started(event),
    "SUBAGENT_FINISHED": lambda verifier, event: verifier._scopes.subagent_finished(event),
    "SUBAGENT_ERROR": lambda verifier, event: verifier._scopes.subagent_finished(event),
    "MESSAGES_SNAPSHOT": Verifier._messages_snapshot,
    "RUN_STARTED": Verifier._run_started,
    "RUN_FINISHED": Verifier._run_finished,
}
