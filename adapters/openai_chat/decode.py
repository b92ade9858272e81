"""An OpenAI-compatible server's reply into canonical events: `chat.completion.chunk`s over SSE, or one
`chat.completion` body (a server that does not stream, or an error object sent before any stream).

- `delta.content` is one text message until a tool call interrupts it (a list of parts: their text);
  `delta.reasoning_content` (DeepSeek, vLLM, LiteLLM) or `delta.reasoning` (OpenRouter, Ollama) is reasoning;
  `delta.refusal` (and `refusal` parts) is the model declining, a message of its own marked as a refusal.
- Only the first choice (`index` 0) is the run's: a server asked for one answer sends no other, and another
  choice's words are left out (counted, as words about another run are).
- `delta.tool_calls` are kept apart by `index`: the first piece of each names its id and function. A model's tool
  calls are the client's to run: the run ends with them pending.
- `usage` (the last chunk with `stream_options.include_usage`) is usage, its details' reasoning and cached tokens
  included; the run ends at `[DONE]`, or at the end of a body that gave a finish reason without it, cut short where
  that reason is `length` or `content_filter`. An `error` object, in a frame or as the body, fails the run.
- A frame that is no chunk (neither `choices` nor `usage`) is kept as `Raw`: a reply of nothing else was not Chat
  Completions at all (see `agent_gateway_upstream_replies_unread_total`).
"""

from __future__ import annotations

from typing import Any

from adapters.openai_common.errors import failure
from adapters.openai_common.usage import read_usage
from gateway.core import events as canonical
from gateway.core.decoding import Events, JsonSSEOrBodyDecoder
from gateway.core.errors import ErrorCode
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME
from gateway.core.steady import SteadyText

_REASONING_KEYS = ("reasoning_content", "reasoning")
_NOT_STEADY = (*_REASONING_KEYS, "refusal")
"""Keys of a delta that, holding a string, make it more than text."""
_STOP_REASONS: dict[str, canonical.StopReason] = {"length": "length", "content_filter": "content_filter"}
"""Finish reasons that say the answer was cut short."""


class ChatDecoder(JsonSSEOrBodyDecoder):
    __slots__ = ("_calls", "_finished", "_model", "_reasoning", "_refusing", "_started", "_stop_reason", "_text")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._steady = SteadyText(unread=(b'"obfuscation":',))  # OpenAI's random padding, new in every chunk
        self._started = False
        self._text: str | None = None
        """The message open: the answer's text, or (`_refusing`) the model's refusal."""
        self._refusing = False
        self._reasoning: str | None = None
        self._calls: dict[int, str] = {}
        """Tool calls open by their index in the message: index -> id."""
        self._finished = False
        """A finish reason came: the stream may end without `[DONE]`."""
        self._stop_reason: canonical.StopReason | None = None
        self._model: str | None = None

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        if frame.get("error"):
            out.append(_error(frame["error"]))
            return
        if "choices" not in frame and "usage" not in frame:  # not a chunk: another dialect's, most likely
            out.append(canonical.Raw("openai-chat", event=frame))
            return
        self._start(frame, out)
        usage = frame.get("usage")
        if isinstance(usage, dict):
            out.append(_usage(usage, self._model))
        choice, others = _first_choice(frame.get("choices"))
        self.ignored += others
        if choice is None:
            return
        delta = choice.get("delta")
        if isinstance(delta, dict):
            self._delta(delta, out)
        reason = choice.get("finish_reason")
        if reason:
            self._end(out)
            self._finished = True
            self._stop_reason = _STOP_REASONS.get(reason) if isinstance(reason, str) else None

    def steady_text(self, frame: dict[str, Any]) -> str | None:
        """A chunk of nothing but `delta.content`, with the message's text open and no reasoning."""
        if self._text is None or self._refusing or self._reasoning is not None or frame.get("error") \
                or isinstance(frame.get("usage"), dict):
            return None
        choice, others = _first_choice(frame.get("choices"))
        if choice is None or others or choice.get("finish_reason"):
            return None
        delta = choice.get("delta")
        if not isinstance(delta, dict) or delta.get("tool_calls") \
                or any(isinstance(delta.get(k), str) and delta[k] for k in _NOT_STEADY):
            return None
        content = delta.get("content")
        return content if isinstance(content, str) else None

    def on_steady_text(self, text: str, out: Events) -> None:
        if text:
            assert self._text is not None
            out.append(canonical.TextDelta(self._text, text))

    def steady_message(self) -> str | None:
        return self._text

    def on_done(self, out: Events) -> None:
        self._end(out)
        out.append(canonical.RunFinished(stop_reason=self._stop_reason))

    def on_end(self, out: Events) -> None:
        if self._finished:  # a finish reason came: the stream may end without `[DONE]`
            self._end(out)
            out.append(canonical.RunFinished(stop_reason=self._stop_reason))

    def _start(self, frame: dict[str, Any], out: Events) -> None:
        if not self._started:
            self._started = True
            model = frame.get("model")
            self._model = model if isinstance(model, str) else None
            run_id = frame.get("id")
            out.append(canonical.RunStarted(run_id=run_id if isinstance(run_id, str) else None))

    def _delta(self, delta: dict[str, Any], out: Events) -> None:
        reasoning = next((delta[k] for k in _REASONING_KEYS if isinstance(delta.get(k), str) and delta[k]), None)
        if reasoning is not None:
            if self._reasoning is None:
                self._reasoning = new_id("reasoning")
                out.append(canonical.ReasoningStart(self._reasoning))
            out.append(canonical.ReasoningDelta(self._reasoning, reasoning))
        content, refusal = delta.get("content"), delta.get("refusal")
        if isinstance(content, list):
            content, refused = _parts(content)
            refusal = refusal if isinstance(refusal, str) and refusal else refused
        if isinstance(content, str) and content:
            self._say(content, False, out)
        if isinstance(refusal, str) and refusal:
            self._say(refusal, True, out)
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict):
                self._call(call, out)

    def _say(self, text: str, refusal: bool, out: Events) -> None:
        """Text of the answer, or of a refusal: each a message of its own."""
        self._close_reasoning(out)
        if self._text is not None and self._refusing != refusal:
            out.append(canonical.TextEnd(self._text))
            self._text = None
        if self._text is None:
            self._text, self._refusing = new_id("msg"), refusal
            out.append(canonical.TextStart(self._text, refusal=refusal))
        out.append(canonical.TextDelta(self._text, text))

    def _call(self, call: dict[str, Any], out: Events) -> None:
        index = call.get("index")
        index = index if isinstance(index, int) else len(self._calls)
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        call_id = self._calls.get(index)
        if call_id is None or (isinstance(call.get("id"), str) and call["id"] != call_id):
            self._close_reasoning(out)
            parent = self._text
            if self._text is not None:
                out.append(canonical.TextEnd(self._text))
                self._text = None
            call_id = call["id"] if isinstance(call.get("id"), str) and call["id"] else new_id("call")
            self._calls[index] = call_id
            name = function.get("name")
            out.append(canonical.ToolCallStart(call_id, name if isinstance(name, str) and name else "unknown_tool",
                                               parent_message_id=parent))
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            out.append(canonical.ToolCallArgs(call_id, arguments))

    def _close_reasoning(self, out: Events) -> None:
        if self._reasoning is not None:
            out.append(canonical.ReasoningEnd(self._reasoning))
            self._reasoning = None

    def _end(self, out: Events) -> None:
        """Close what is open: the finish reason, or the end of the stream."""
        self._close_reasoning(out)
        if self._text is not None:
            out.append(canonical.TextEnd(self._text))
            self._text = None
        for call_id in self._calls.values():
            out.append(canonical.ToolCallEnd(call_id))
        self._calls.clear()

    def on_body(self, body: Any, out: Events) -> None:
        """One `chat.completion` body (or an error object): its message as the events of a run."""
        if not isinstance(body, dict):
            out.append(canonical.RunError("upstream returned JSON that is not an object",
                                          code=ErrorCode.UPSTREAM_BAD_EVENT))
            return
        if body.get("error"):
            out.append(_error(body["error"]))
            return
        self._start(body, out)
        choice, others = _first_choice(body.get("choices"))
        self.ignored += others
        choice = choice or {}
        message = choice.get("message")
        if isinstance(message, dict):
            self._delta({**message, "tool_calls": [{**c, "index": i} for i, c in
                                                   enumerate(message.get("tool_calls") or []) if isinstance(c, dict)]},
                        out)
        self._end(out)
        usage = body.get("usage")
        if isinstance(usage, dict):
            out.append(_usage(usage, self._model))
        if not isinstance(message, dict):
            out.append(canonical.RunError("upstream answered with no message", code=ErrorCode.UPSTREAM_BAD_EVENT))
            return
        reason = choice.get("finish_reason")
        out.append(canonical.RunFinished(stop_reason=_STOP_REASONS.get(reason) if isinstance(reason, str) else None))


def _first_choice(choices: Any) -> tuple[dict[str, Any] | None, int]:
    """The run's choice (`index` 0, or none said) among a chunk's, and how many others it holds."""
    if not isinstance(choices, list) or not choices:
        return None, 0
    first = choices[0]
    if len(choices) == 1 and type(first) is dict and first.get("index") in (0, None):
        return first, 0  # most of a stream
    found = [c for c in choices if type(c) is dict and c.get("index") in (0, None)]
    return (found[0] if found else None), len(choices) - min(len(found), 1)


def _parts(content: list[Any]) -> tuple[str, str]:
    """Content as a list of parts: the text of its text parts, and of its refusal parts."""
    text, refusal = [], []
    for part in content:
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("text", "output_text") and isinstance(part.get("text"), str):
            text.append(part["text"])
        elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            refusal.append(part["refusal"])
    return "".join(text), "".join(refusal)


def _usage(usage: dict[str, Any], model: str | None) -> canonical.Usage:
    return read_usage(usage, "chat", model)  # with its details: reasoning and cached tokens


def _error(error: Any) -> canonical.RunError:
    """An OpenAI error object (or a bare message)."""
    if isinstance(error, dict):
        return failure(error)
    return canonical.RunError(str(error), code=ErrorCode.UPSTREAM_ERROR)
