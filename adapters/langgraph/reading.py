"""The `messages` frames of a LangGraph run stream read as canonical events: `MessageReader`, which
`LangGraphDecoder` reads a run's messages with (the decoder reads the rest of the run).

An AI message chunk is text, reasoning (with its encrypted content) and `tool_call_chunks`; a whole AI message not
streamed (a node's own) its text and `tool_calls`; a tool message the tool's result. A message's `name` and
`response_metadata.agent_gateway` `{metadata, subagent_run_id}` are its opening's; its `usage_metadata` is usage,
its `response_metadata.finish_reason` whether the model's answer was cut short (`length`, `content_filter`).

Chunks of messages streamed at once (parallel nodes) come interleaved: each message stays open while another's
chunks come, and ends when it says so (its last chunk, the whole message), when a tool answers its call, or with
the run.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.decoding import Events
from gateway.core.ids import new_id

from .messages import encrypted_of, reasoning_of, text_of, tool_content

_STOP_REASONS: dict[str, canonical.StopReason] = {"length": "length", "content_filter": "content_filter",
                                                  "max_tokens": "length"}
"""A model's finish reason (OpenAI's `finish_reason`, Anthropic's `stop_reason`) that says its answer was cut short."""
Open = tuple[bool, bool, list[str]]
"""What of a message is open: its text, its reasoning, its tool calls."""
Tags = tuple[str | None, str | None, Any]
"""What a message says of itself: its author's name, the subagent that wrote it, its metadata."""
_UNTAGGED: Tags = (None, None, None)


class MessageReader:
    """The messages of a run, as its `messages` frames (and its `values`, for a stream without them) bring them:
    the AI message being streamed, and what of each message was read already."""

    __slots__ = ("_call_messages", "_calls", "_current", "_open_calls", "_paused", "_reasoning", "_results", "_seen",
                 "_started_calls", "_tagged", "_text", "stop_reason")

    def __init__(self) -> None:
        self._current: str | None = None
        """The AI message being streamed."""
        self._text = False
        self._reasoning = False
        self._open_calls: list[str] = []
        self._calls: dict[tuple[str, Any], str] = {}
        """A streamed call's id, by its message and its chunks' index."""
        self._started_calls: dict[str, str] = {}
        """Each call the run made, by id: its tool's name."""
        self._paused: dict[str, Open] = {}
        """Messages open while another's chunks come (parallel nodes): what of each is open."""
        self._call_messages: dict[str, str] = {}
        """The AI message each tool call is of: a tool's result ends it."""
        self.stop_reason: canonical.StopReason | None = None
        """The last AI message's finish reason, where it says the answer was cut short."""
        self._seen: set[str] = set()
        """AI messages whose content has been read, so that the whole message after its chunks adds nothing."""
        self._results: set[str] = set()
        self._tagged: dict[str, Tags] = {}
        """What a message said of itself in a chunk before its content (the gateway's LangGraph encoder does)."""

    def message(self, value: Any, out: Events) -> None:
        message = value[0] if isinstance(value, list) and value else value
        if not isinstance(message, dict):
            return
        kind = message.get("type")
        if kind in ("tool", "ToolMessageChunk"):
            call_id = message.get("tool_call_id")
            self._end_of(self._call_messages.get(call_id, self._current) if isinstance(call_id, str)
                         else self._current, out)
            self._tool_result(message, out)
        elif kind in ("ai", "AIMessageChunk"):
            self._ai(message, out, chunk=kind == "AIMessageChunk")

    def complete(self, value: Any, out: Events) -> None:
        """`messages` mode (not `messages-tuple`): whole messages, as they end."""
        for message in value if isinstance(value, list) else ():
            self.message(message, out)

    def steady_text(self, value: Any) -> str | None:
        """The text of a `messages` frame that is a token of the AI message being streamed and nothing else."""
        message = value[0] if isinstance(value, list) and value else value
        if isinstance(message, dict) and message.get("type") == "AIMessageChunk":
            return self._token_of(message)
        return None

    def token(self, text: str, out: Events) -> None:
        """Another token of the AI message being streamed."""
        if text:
            assert self._current is not None
            out.append(canonical.TextDelta(self._current, text))

    def _token_of(self, chunk: dict[str, Any]) -> str | None:
        """The text of a chunk of the AI message being streamed that holds nothing else: most of a stream."""
        content = chunk.get("content")
        if self._text and self._current is not None and chunk.get("id") == self._current and \
                type(content) is str and not chunk.get("tool_call_chunks") and chunk.get("usage_metadata") is None \
                and chunk.get("chunk_position") is None and not chunk.get("additional_kwargs") \
                and _finish_reason(chunk) is None:
            return content
        return None

    def _ai(self, message: dict[str, Any], out: Events, *, chunk: bool) -> None:
        if chunk and (token := self._token_of(message)) is not None:
            self.token(token, out)
            return
        given = message.get("id")
        content = message.get("content")
        message_id: str = given if isinstance(given, str) else self._current or new_id("msg")
        reason = _finish_reason(message)
        if reason is not None:
            self.stop_reason = _STOP_REASONS.get(reason)
        if not chunk and message_id in self._seen:  # the whole of a message already streamed
            self._end_of(message_id, out)
            return
        if message_id != self._current:
            self._switch(message_id)
        self._seen.add(message_id)
        tags = _tags_of(message)
        if tags is not None:
            self._tagged[message_id] = tags
        extra = message.get("additional_kwargs")
        reasoning = reasoning_of(content) or (extra.get("reasoning_content", "") if isinstance(extra, dict) else "")
        if isinstance(reasoning, str) and reasoning:
            if not self._reasoning:
                self._reasoning = True
                _, subagent, metadata = self._tagged.get(message_id, _UNTAGGED)
                out.append(canonical.ReasoningStart(f"{message_id}-reasoning", subagent_run_id=subagent,
                                                    metadata=metadata))
            out.append(canonical.ReasoningDelta(f"{message_id}-reasoning", reasoning))
        for value in encrypted_of(content):
            out.append(canonical.EncryptedValue("message", f"{message_id}-reasoning", value))
        text = text_of(content)
        if text:
            if self._reasoning:
                self._reasoning = False
                out.append(canonical.ReasoningEnd(f"{message_id}-reasoning"))
            if not self._text:
                self._text = True
                name, subagent, metadata = self._tagged.pop(message_id, _UNTAGGED)
                out.append(canonical.TextStart(message_id, subagent_run_id=subagent, name=name, metadata=metadata))
            out.append(canonical.TextDelta(message_id, text))
        if chunk:
            self._call_chunks(message_id, message.get("tool_call_chunks"), out)
        else:
            self._whole_calls(message_id, message.get("tool_calls"), out)
        usage = message.get("usage_metadata")
        if isinstance(usage, dict):
            out.append(_usage(usage, message.get("response_metadata")))
        if not chunk or message.get("chunk_position") == "last":
            self._end_message(out)

    def _call_chunks(self, message_id: str, chunks: Any, out: Events) -> None:
        for piece in chunks if isinstance(chunks, list) else ():
            if not isinstance(piece, dict):
                continue
            index = piece.get("index")
            key = (message_id, index if index is not None else piece.get("id"))
            call_id = self._calls.get(key)
            if call_id is None:
                call_id = piece["id"] if isinstance(piece.get("id"), str) else new_id("call")
                self._calls[key] = call_id
                self._call_messages[call_id] = message_id
                self._open_calls.append(call_id)
                name = piece.get("name")
                self._started_calls[call_id] = name if isinstance(name, str) else ""
                out.append(canonical.ToolCallStart(call_id, self._started_calls[call_id], parent_message_id=message_id))
            args = piece.get("args")
            if isinstance(args, str) and args:
                out.append(canonical.ToolCallArgs(call_id, args))

    def _whole_calls(self, message_id: str, calls: Any, out: Events) -> None:
        for call in calls if isinstance(calls, list) else ():
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                continue
            call_id = call["id"] if isinstance(call.get("id"), str) else new_id("call")
            if call_id in self._started_calls:
                continue
            self._started_calls[call_id] = call["name"]
            self._call_messages[call_id] = message_id
            args = call.get("args")
            out.append(canonical.ToolCallStart(call_id, call["name"], parent_message_id=message_id))
            out.append(canonical.ToolCallArgs(call_id, args if isinstance(args,
                                                                          str) else orjson.dumps(args or {}).decode()))
            out.append(canonical.ToolCallEnd(call_id))

    def _tool_result(self, message: dict[str, Any], out: Events) -> None:
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or call_id in self._results:
            return
        self._results.add(call_id)
        message_id = message.get("id")
        _, subagent, metadata = _tags_of(message) or _UNTAGGED
        out.append(canonical.ToolResult(call_id, tool_content(message.get("content")),
                                        message_id=message_id if isinstance(message_id, str) else None,
                                        is_error=message.get("status") == "error", subagent_run_id=subagent,
                                        metadata=metadata))

    def unanswered_call(self, name: Any) -> str | None:
        """The one call of the run to tool `name` that has no result, if there is exactly one."""
        found = [c for c, called in self._started_calls.items() if called == name and c not in self._results]
        return found[0] if len(found) == 1 else None

    def _switch(self, message_id: str) -> None:
        """Chunks of another message than the current one: the current one waits, open, for more of its own."""
        if self._current is not None:
            self._paused[self._current] = (self._text, self._reasoning, self._open_calls)
        self._text, self._reasoning, self._open_calls = self._paused.pop(message_id, (False, False, []))
        self._current = message_id

    def _end_of(self, message_id: str | None, out: Events) -> None:
        """End a message, the current one or one that waits."""
        if message_id is None or message_id == self._current:
            self._end_message(out)
        elif message_id in self._paused:
            current = self._current
            self._switch(message_id)
            self._end_message(out)
            if current is not None:
                self._switch(current)

    def end_all(self, out: Events) -> None:
        """End every message open: the run pauses or ends."""
        self._end_message(out)
        for message_id in list(self._paused):
            self._switch(message_id)
            self._end_message(out)

    def _end_message(self, out: Events) -> None:
        current = self._current
        if current is None:
            return
        if self._reasoning:
            out.append(canonical.ReasoningEnd(f"{current}-reasoning"))
        if self._text:
            out.append(canonical.TextEnd(current))
        for call_id in self._open_calls:
            out.append(canonical.ToolCallEnd(call_id))
        self._open_calls.clear()
        self._text = self._reasoning = False
        self._current = None


def _finish_reason(message: dict[str, Any]) -> str | None:
    """Why the model stopped writing a message, where it says (its last chunk, the whole message)."""
    said = message.get("response_metadata")
    if type(said) is not dict:
        return None
    reason = said.get("finish_reason", said.get("stop_reason"))
    return reason if isinstance(reason, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _tags_of(message: dict[str, Any]) -> Tags | None:
    name = message.get("name")
    said = message.get("response_metadata")
    ours = said.get("agent_gateway") if isinstance(said, dict) else None
    ours = ours if isinstance(ours, dict) else {}
    subagent, metadata = ours.get("subagent_run_id"), ours.get("metadata")
    tags = (name if isinstance(name, str) and name else None, subagent if isinstance(subagent, str) else None,
            metadata if isinstance(metadata, dict) else None)
    return tags if tags != _UNTAGGED else None


def _usage(usage: dict[str, Any], said: Any) -> canonical.Usage:
    """LangChain's `usage_metadata`, its details (`input_token_details`, `output_token_details`) included."""
    said = said if isinstance(said, dict) else {}
    inputs, outputs = usage.get("input_token_details"), usage.get("output_token_details")
    inputs, outputs = (inputs if isinstance(inputs, dict) else {}), (outputs if isinstance(outputs, dict) else {})
    model, provider = said.get("model_name"), said.get("model_provider")
    return canonical.Usage(input_tokens=_int(usage.get("input_tokens")), output_tokens=_int(usage.get("output_tokens")),
                           total_tokens=_int(usage.get("total_tokens")),
                           model=model if isinstance(model, str) else None,
                           provider=provider if isinstance(provider, str) else None,
                           reasoning_tokens=_int(outputs.get("reasoning")),
                           cached_input_tokens=_int(inputs.get("cache_read")),
                           cache_write_input_tokens=_int(inputs.get("cache_creation")))
