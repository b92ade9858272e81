"""`verifyEvents`: the run lifecycle, start/content/end pairing per id, steps, subagents and who owns what."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .common import ABSENT, Event, Report, who


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
        self._first = True
        self._started = self._finished = self._errored = False
        self._reset()

    def _reset(self) -> None:
        self._open: dict[str, dict[str, None]] = {kind: {} for kind in _STREAMED}
        self._ended: dict[str, set[str]] = {kind: set() for kind in _STREAMED}
        owners = ("message", "tool call", "activity", "reasoning message")
        self._owners: dict[str, dict[str, str | None]] = {kind: {} for kind in owners}
        self._steps: dict[str | None, dict[str, None]] = {}
        self._subagents: dict[str, None] = {}
        self._closed_subagents: set[str] = set()

    def check(self, event: Event) -> None:
        kind = event["type"]
        if self._errored and kind != "RUN_STARTED":
            self._fail("event-after-run-error", f"{kind} after RUN_ERROR: a run that errored is over, and only a new "
                                                f"RUN_STARTED may follow")
            self._errored = False
        if self._finished and kind not in ("RUN_STARTED", "RUN_ERROR"):
            self._fail("event-after-run-finished", f"{kind} after RUN_FINISHED: the run is over; start a new one "
                                                   f"with RUN_STARTED first")
            self._finished = False
        if self._first:
            self._first = False
            if kind not in ("RUN_STARTED", "RUN_ERROR"):
                self._fail("first-event-not-run-started", f"the first event must be RUN_STARTED (or RUN_ERROR), "
                                                          f"got {kind}")
        elif kind == "RUN_STARTED":
            if self._started and not self._finished and not self._errored:
                self._fail("run-started-while-active", "RUN_STARTED while a run is still active: end it with "
                                                       "RUN_FINISHED or RUN_ERROR first")
            if self._finished or self._errored:
                self._reset()
                self._finished = self._errored = False
        handler = _VERIFY.get(kind)
        if handler is not None:
            handler(self, event)

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

    def _step_started(self, event: Event) -> None:
        name, owner = event["stepName"], event.get("subagentRunId")
        where = "" if owner is None else f" in subagent '{owner}'"
        steps = self._steps.setdefault(owner, {})
        if name in steps:
            self._fail("step-start-duplicate", f'STEP_STARTED for step "{name}"{where}, which is already active')
            return
        steps[name] = None

    def _step_finished(self, event: Event) -> None:
        name, owner = event["stepName"], event.get("subagentRunId")
        steps = self._steps.setdefault(owner, {})
        if name in steps:
            del steps[name]
            return
        others = [o for o, names in self._steps.items() if o != owner and name in names]
        if others:
            self._fail("step-owner-mismatch", f'STEP_FINISHED for step "{name}" comes from {who(owner)}, but '
                                              f"{who(others[0])} started it: a step is finished by whoever started it")
        else:
            self._fail("step-finished-without-start", f'STEP_FINISHED for step "{name}", which was never started '
                                                      f"(STEP_STARTED)")

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

    def _subagent_started(self, event: Event) -> None:
        subagent, parent = event["subagentRunId"], event.get("parentSubagentRunId")
        if subagent in self._subagents:
            self._fail("subagent-start-duplicate", f"SUBAGENT_STARTED for subagent '{subagent}', which is already "
                                                   f"active: finish it with SUBAGENT_FINISHED first")
        elif subagent in self._closed_subagents:
            self._fail("subagent-id-reused", f"SUBAGENT_STARTED for subagent '{subagent}', which already finished in "
                                             f"this run: a subagentRunId names one invocation")
        elif parent is not None and parent not in self._subagents and parent not in self._closed_subagents:
            self._fail("subagent-parent-unknown", f"SUBAGENT_STARTED names parentSubagentRunId '{parent}', which has "
                                                  f"not started in this run")
        else:
            self._subagents[subagent] = None

    def _subagent_finished(self, event: Event) -> None:
        subagent = event["subagentRunId"]
        if subagent not in self._subagents:
            self._fail("subagent-end-without-start", f"{event['type']} for subagent '{subagent}', which is not active "
                                                     f"(SUBAGENT_STARTED)")
            return
        del self._subagents[subagent]
        self._closed_subagents.add(subagent)

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
        self._started = True
        run = event.get("input")
        self._seed(run.get("messages") if isinstance(run, dict) else None, authoritative=False)

    def _run_finished(self, event: Event) -> None:
        steps = [name if owner is None else f"{name} (subagent '{owner}')"
                 for owner, names in self._steps.items() for name in names]
        still_open = [("steps", steps)] + [
            (f"{_STREAMED[kind].noun}s", list(self._open[kind]))
            for kind in ("message", "reasoning message", "reasoning span", "tool call")
        ] + [("subagents", list(self._subagents))]
        for noun, names in still_open:
            if names:
                self._fail(f"run-finished-with-open-{noun.replace(' ', '-')}", f"RUN_FINISHED while {noun} are still "
                                                                               f"open: {', '.join(names)}; end each "
                                                                               f"one before the run")
        for kind in self._open:
            self._open[kind].clear()
        self._steps.clear()
        self._subagents.clear()
        self._finished = True

    def _run_error(self, event: Event) -> None:
        self._errored = True


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
    "STEP_STARTED": Verifier._step_started,
    "STEP_FINISHED": Verifier._step_finished,
    "ACTIVITY_SNAPSHOT": Verifier._activity_snapshot,
    "ACTIVITY_DELTA": Verifier._activity_delta,
    "SUBAGENT_STARTED": Verifier._subagent_started,
    "SUBAGENT_FINISHED": Verifier._subagent_finished,
    "SUBAGENT_ERROR": Verifier._subagent_finished,
    "MESSAGES_SNAPSHOT": Verifier._messages_snapshot,
    "RUN_STARTED": Verifier._run_started,
    "RUN_FINISHED": Verifier._run_finished,
    "RUN_ERROR": Verifier._run_error,
}
