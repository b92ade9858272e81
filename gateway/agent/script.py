"""What the built-in agent does in a run, picked from keywords in the last user message: the same script in
every dialect, as canonical events with the waits between them (see `gateway.agent.server` for the table)."""

from __future__ import annotations

import re
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import Feature
from gateway.core.ids import new_id
from gateway.core.turn import Message, Tool, ToolCall, Turn

from . import conformance_kit

HANG = 3600.0
SLOW_GAP = 0.05

KEYWORDS = ("silent", "hang", "fail", "approve", "interrupt", "weather", "tool", "state", "think", "slow")
"""In priority order."""
KEYWORD_HELP = {
    "silent": "sends nothing for an hour (through the gateway: a 504 once timeouts.first_event passes, 60 s)",
    "hang": "starts, then goes quiet (through the gateway: an in-band error after timeouts.idle, 120 s)",
    "fail": "a little text, then the run's error",
    "approve": "asks approval for a tool call (human in the loop)",
    "interrupt": "asks the user to confirm (human in the loop)",
    "weather": "calls its own tool, get_weather, then answers",
    "tool": "calls the client's first tool (or get_location) and waits for the result",
    "state": "sends state, then a change to it",
    "think": "reasons, then answers",
    "slow": "20 pieces of text, 0.05 s apart",
}
"""What each keyword makes the agent do, for the people trying it."""
KEYWORD_SHOWS: dict[str, Feature] = {"approve": "interrupts", "interrupt": "interrupts", "weather": "server_tools",
                                     "tool": "client_tools", "state": "state", "think": "reasoning"}
"""What a dialect must carry for a keyword's run to show through it (an AG-Kit agent's reasoning is lost)."""

FALLBACK_TOOL = Tool("get_location", "The user's location, from their device.",
                     {"type": "object", "properties": {}})
"""Vercel and agent-respond requests cannot offer tools: like a useChat server, the agent then declares its own."""

AGENT_MODEL = "builtin-agent"
"""The model name the built-in agent's usage reports give: what a route's `pricing` may price."""

Timeline = list[tuple[float, canonical.Event]]
"""Each event with the seconds to wait before sending it."""


class Script:
    """One run: its events, with the waits between them, and the messages it adds to the conversation."""

    __slots__ = ("_wait", "replies", "timeline")

    def __init__(self) -> None:
        self.timeline: Timeline = []
        self.replies: list[Message] = []
        self._wait = 0.0

    def emit(self, *events: canonical.Event) -> None:
        for event in events:
            self.timeline.append((self._wait, event))
            self._wait = 0.0

    def pause(self, seconds: float) -> None:
        self._wait += seconds

    def say(self, text: str, *, deltas: list[str] | None = None, gap: float = 0.0) -> str:
        message_id = new_id("msg")
        self.emit(canonical.TextStart(message_id))
        for index, delta in enumerate(deltas or _words(text)):
            if index:
                self.pause(gap)
            self.emit(canonical.TextDelta(message_id, delta))
        self.emit(canonical.TextEnd(message_id))
        self.replies.append(Message("assistant", text, message_id))
        return message_id

    def call(self, name: str, arguments: dict[str, Any], *, parent: str | None = None,
             result: str | None = None) -> str:
        """A tool call, its arguments in two deltas; with a `result` the agent ran it, else the client must."""
        call_id = new_id("call")
        args = orjson.dumps(arguments).decode()
        half = len(args) // 2
        self.emit(canonical.ToolCallStart(call_id, name, parent_message_id=parent),
                  canonical.ToolCallArgs(call_id, args[:half]), canonical.ToolCallArgs(call_id, args[half:]),
                  canonical.ToolCallEnd(call_id))
        last = self.replies[-1] if self.replies else None
        if parent is not None and last is not None and last.id == parent:
            last.tool_calls.append(ToolCall(call_id, name, args))  # OpenAI style: text and calls share a message
        else:
            self.replies.append(Message("assistant", None, new_id("msg"), [ToolCall(call_id, name, args)]))
        if result is not None:
            self.emit(canonical.ToolResult(call_id, result, message_id=new_id("result")))
            self.replies.append(Message("tool", result, tool_call_id=call_id, name=name))
        return call_id


def script(turn: Turn, history: list[Message]) -> Script:
    """What the agent does for this turn, given the whole conversation it knows (the turn's messages included)."""
    s = Script()
    text = next((m.text for m in reversed(history) if m.role == "user"), "")
    answering = turn.resume or _trailing_results(history)  # the second leg of a round trip: keywords are stale
    asked = turn.resume[0].message_id if turn.resume else \
        None if answering else next((m.id for m in reversed(history) if m.role == "user"), None)
    kit = conformance_kit.scenario(asked)
    keyword = None if answering or kit else _keyword(text)
    if keyword == "silent":
        s.pause(HANG)
    s.emit(canonical.RunStarted(thread_id=turn.conversation_id, run_id=turn.run_id or new_id("run"),
                                parent_run_id=turn.parent_run_id))
    if kit:
        s.emit(conformance_kit.play(s, kit))
    else:
        ending = _act(s, turn, history, text, keyword)
        s.emit(_usage(s, history), ending)
    return s


def _usage(s: Script, history: list[Message]) -> canonical.Usage:
    """What the run used, a token a word: the conversation's words in, the reply's words out, so that a newcomer
    sees tokens counted (and priced, and budgeted) per key."""
    said = sum(len(e.delta.split()) for _, e in s.timeline if isinstance(e, canonical.TextDelta))
    heard = sum(len((m.text or "").split()) for m in history)
    return canonical.Usage(input_tokens=heard, output_tokens=said, total_tokens=heard + said, model=AGENT_MODEL)


def _act(s: Script, turn: Turn, history: list[Message], text: str,
         keyword: str | None) -> canonical.RunFinished | canonical.RunError:
    if turn.resume:
        s.say(" ".join(f"Resumed {r.interrupt_id}: {orjson.dumps(r.payload).decode()}." for r in turn.resume))
        return canonical.RunFinished()
    results = _trailing_results(history)
    if results:
        s.say(f"The tool said: {'; '.join(results)}.")
        return canonical.RunFinished()
    if keyword == "silent":
        s.say("Sorry, I was miles away.")
    elif keyword == "hang":
        message_id = new_id("msg")
        s.emit(canonical.TextStart(message_id), canonical.TextDelta(message_id, "Let me think about that"))
        s.pause(HANG)
        s.emit(canonical.TextDelta(message_id, "... done."), canonical.TextEnd(message_id))
        s.replies.append(Message("assistant", "Let me think about that... done.", message_id))
    elif keyword == "fail":
        s.say("Working on it...")
        return canonical.RunError("scripted failure", code="agent_error")
    elif keyword == "approve":
        call_id = s.call("delete_file", {"path": "/tmp/demo"})
        s.emit(canonical.Interrupt(_interrupt_id(), reason="tool_approval", message="Delete /tmp/demo?",
                                   tool_call_id=call_id))
        return canonical.RunFinished(outcome="interrupt")
    elif keyword == "interrupt":
        s.emit(canonical.Interrupt(_interrupt_id(), reason="confirm", message="Continue?",
                                   payload={"options": ["yes", "no"]}))
        return canonical.RunFinished(outcome="interrupt")
    elif keyword == "weather" and any(t.name == "get_weather" for t in turn.tools):
        s.call("get_weather", {"location": _city(text)})  # the client offers its own: the agent asks it
    elif keyword == "weather":
        city = _city(text)
        said = s.say("Let me check the weather.")
        s.call("get_weather", {"city": city}, parent=said, result=f"sunny, 21C in {city}")
        s.say(f"It is sunny, 21C in {city}.")
    elif keyword == "tool":
        tool = turn.tools[0] if turn.tools else FALLBACK_TOOL
        s.call(tool.name, _demo_arguments(tool.parameters))
    elif keyword == "state":
        s.emit(canonical.StateSnapshot({"count": 0}),
               canonical.StateDelta([{"op": "replace", "path": "/count", "value": 1}]))
        s.say("The count is now 1.")
    elif keyword == "think":
        reasoning_id = new_id("reasoning")
        s.emit(canonical.ReasoningStart(reasoning_id))
        for delta in ("The user wants ", "me to think. ", "So I will."):
            s.emit(canonical.ReasoningDelta(reasoning_id, delta))
        s.emit(canonical.ReasoningEnd(reasoning_id))
        s.say(f"After some thought: {text}.")
    elif keyword == "slow":
        deltas = [f"tick {i}. " for i in range(1, 21)]
        s.say("".join(deltas), deltas=deltas, gap=SLOW_GAP)
    else:
        turns = sum(1 for m in history if m.role == "user")
        s.say(f"You said: {text}. (turn {turns})" if turns else "Hello! Ask me anything. (turn 0)")
    return canonical.RunFinished()


def _keyword(text: str) -> str | None:
    lowered = text.lower()
    return next((k for k in KEYWORDS if k in lowered), None)


def _trailing_results(history: list[Message]) -> list[str]:
    """The tool results the agent has not answered yet: the last messages, when they are tool messages."""
    results: list[str] = []
    for message in reversed(history):
        if message.role != "tool":
            break
        results.append(message.error or message.text)
    return results[::-1]


def _city(text: str) -> str:
    found = re.search(r"\b(?:in|for|at)\s+([A-Z][\w-]*(?:\s+[A-Z][\w-]*)*)", text)
    return found.group(1) if found else "Paris"


def _demo_arguments(schema: dict[str, Any] | None) -> dict[str, Any]:
    """Arguments that satisfy the tool's schema as far as a script can: "demo" for each required string."""
    properties = (schema or {}).get("properties")
    required = (schema or {}).get("required")
    if not isinstance(properties, dict) or not isinstance(required, list):
        return {}
    return {name: "demo" for name in required
            if isinstance(name, str) and isinstance(properties.get(name), dict)
            and properties[name].get("type") == "string"}


def _words(text: str) -> list[str]:
    """Text as word deltas, so that clients see it stream; joined they give back the text exactly."""
    return re.findall(r"\S+\s*|\s+", text) or [text]


def _interrupt_id() -> str:
    return new_id("int").replace("_", "-", 1)
