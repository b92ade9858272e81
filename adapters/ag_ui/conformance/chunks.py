"""`transformChunks`: `*_CHUNK` events expanded into the start, content and end events they stand for."""

from __future__ import annotations

from dataclasses import dataclass

from .common import Event, who


class Rejected(Exception):
    """A fatal error from a stage that stops at it (chunk expansion)."""

    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


@dataclass(slots=True)
class _Lane:
    kind: str
    id: str
    owner: str | None
    role: str | None = None
    name: str | None = None
    parent: str | None = None


_ID_KEY = {"text": "messageId", "tool": "toolCallId", "reasoning": "messageId"}
_CONTENT = {"text": "TEXT_MESSAGE_CONTENT", "tool": "TOOL_CALL_ARGS", "reasoning": "REASONING_MESSAGE_CONTENT"}
_END = {"text": "TEXT_MESSAGE_END", "tool": "TOOL_CALL_END", "reasoning": "REASONING_MESSAGE_END"}
_LANE_FIELD = {"role": "role", "name": "name", "toolCallName": "name", "parentMessageId": "parent"}
"""A chunk field a continuation may repeat -> where the lane keeps what the opener said."""
_CLOSES_OWN_LANE = frozenset({
    "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS",
    "TOOL_CALL_END", "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STATE_DELTA", "CUSTOM", "STEP_STARTED", "STEP_FINISHED",
    "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END",
    "REASONING_END",
})
_CLOSES_ALL_LANES = frozenset({"RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT"})


class Chunks:
    """`transformChunks`: each `*_CHUNK` becomes START/CONTENT/END events, one open stream per subagent lane; any
    other event of the lane ends the stream it left open."""

    def __init__(self) -> None:
        self._lanes: dict[str | None, _Lane] = {}

    def expand(self, event: Event) -> list[Event]:
        kind = event["type"]
        if kind in _CLOSES_OWN_LANE:
            return [*self._close(event.get("subagentRunId")), event]
        if kind in _CLOSES_ALL_LANES:
            return [*(end for owner in list(self._lanes) for end in self._close(owner)), event]
        if kind in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR") and event.get("subagentRunId") is not None:
            return [*self._close(event["subagentRunId"]), event]
        if kind == "TEXT_MESSAGE_CHUNK":
            return self._chunk(event, "text", "text message", ("role", "name"))
        if kind == "TOOL_CALL_CHUNK":
            return self._chunk(event, "tool", "tool call", ("toolCallName", "parentMessageId"))
        if kind == "REASONING_MESSAGE_CHUNK":
            return self._chunk(event, "reasoning", "reasoning message", ())
        return [event]

    def _close(self, owner: str | None) -> list[Event]:
        lane = self._lanes.pop(owner, None)
        if lane is None:
            return []
        end: Event = {"type": _END[lane.kind], _ID_KEY[lane.kind]: lane.id}
        if lane.owner is not None:
            end["subagentRunId"] = lane.owner
        return [end]

    def _chunk(self, event: Event, kind: str, entity: str, repeated: tuple[str, ...]) -> list[Event]:
        chunk, key = event["type"], _ID_KEY[kind]
        entity_id, tag = event.get(key), event.get("subagentRunId")
        owner = self._lane_of(kind, entity_id, tag, chunk, entity)
        lane = self._lanes.get(owner)
        out: list[Event] = []
        if lane is not None and lane.kind == kind and entity_id in (None, lane.id):
            for name in repeated:
                said, established = event.get(name), getattr(lane, _LANE_FIELD[name])
                if said is not None and said != established:
                    raise Rejected("chunk-conflict", f"{chunk} continues {entity} '{lane.id}' with {name} {said!r}, "
                                                     f"but the stream was opened with {established!r}")
        else:
            out += self._close(owner)
            if entity_id is None:
                raise Rejected("chunk-without-id", f"the first {chunk} of a {entity} must carry its {key}")
            if kind == "tool" and event.get("toolCallName") is None:
                raise Rejected("chunk-without-name", f"the first {chunk} of a tool call must carry its toolCallName")
            label = event["toolCallName"] if kind == "tool" else event.get("name")
            lane = _Lane(kind, entity_id, tag, event.get("role", "assistant"), label, event.get("parentMessageId"))
            self._lanes[owner] = lane
            out.append(self._opener(lane, event))
        content = _CONTENT[kind]
        attributed = {"subagentRunId": tag if tag is not None else lane.owner} if (
            tag is not None or lane.owner is not None) else {}
        origin: Event = {k: event[k] for k in ("metadata", "rawEvent") if k in event}
        if "delta" in event or "rawEvent" in event:
            out.append({"type": content, key: lane.id, "delta": event.get("delta", ""), **attributed, **origin})
        elif not out and origin:
            out.append({"type": content, key: lane.id, "delta": "", **attributed, **origin})
        return out

    @staticmethod
    def _opener(lane: _Lane, chunk: Event) -> Event:
        if lane.kind == "text":
            opener: Event = {"type": "TEXT_MESSAGE_START", "messageId": lane.id, "role": lane.role}
            if lane.name is not None:
                opener["name"] = lane.name
        elif lane.kind == "tool":
            opener = {"type": "TOOL_CALL_START", "toolCallId": lane.id, "toolCallName": lane.name}
            if lane.parent is not None:
                opener["parentMessageId"] = lane.parent
        else:
            opener = {"type": "REASONING_MESSAGE_START", "messageId": lane.id, "role": "reasoning"}
        if lane.owner is not None:
            opener["subagentRunId"] = lane.owner
        if "metadata" in chunk:
            opener["metadata"] = chunk["metadata"]
        return opener

    def _lane_of(self, kind: str, entity_id: str | None, tag: str | None, chunk: str, entity: str) -> str | None:
        """Which lane a chunk continues: the one holding its id, else the one its tag names, else the only one open."""
        if entity_id is not None:
            for owner, lane in self._lanes.items():
                if lane.kind == kind and lane.id == entity_id:
                    if tag is not None and tag != owner:
                        raise Rejected("chunk-owner-mismatch", f"{chunk} for {entity} '{entity_id}' says "
                                                                f"subagentRunId '{tag}', but that stream is open "
                                                                f"under {who(owner)}")
                    return owner
            return tag
        if tag is not None:
            return tag
        parent = self._lanes.get(None)
        if parent is not None and parent.kind == kind:
            return None
        candidates = [owner for owner, lane in self._lanes.items() if lane.kind == kind]
        if len(candidates) > 1:
            raise Rejected("chunk-ambiguous", f"{chunk} carries neither a {_ID_KEY[kind]} nor a subagentRunId, but "
                                              f"{len(candidates)} subagents have a {entity} open")
        return candidates[0] if candidates else None
