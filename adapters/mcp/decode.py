"""An MCP server's answer to a `tools/call` (SSE of JSON-RPC messages, or one JSON body) as a run's events.

```
notifications/progress {message}   the text so far: what extends the text already shown streams as text;
                                   a message that does not (a status line, "step 2/3") is a named step. Before
                                   any text, a message with a `total` (a progress bar's label, most likely) is
                                   held until the next one (or the result) says which it is: text if that one
                                   extends it, else a step
notifications/message {data}       a log line (the gateway asks for none): kept as a `Raw` event, as is a frame
                                   that is not JSON-RPC
result {content, structuredContent, isError}
                                   content's text: what the progress did not show yet; structuredContent: data
                                   `structured` (not when it only wraps the text, as the SDKs' `{"result": text}`),
                                   but what a gateway's MCP face writes there (toolCalls, data) as those events;
                                   isError: the run's error, with the content's last text (the text
                                   blocks before it: what the agent said first)
{resultType: "input_required"}      (2026-07-28) an interrupt per question, the run interrupted
                                   (`upstream_questions.py`)
error                              the run's error; -32800 after the gateway cancelled: the run cancelled;
                                   -32042 (URL elicitation required): an interrupt per link, the call made again
                                   once answered (`upstream_questions.py`)
elicitation/create (a request)     (2025: the tool waits for the answer on this stream) an interrupt (a form, or a
                                   link to open: `url_elicitation.py`), the run interrupted while the call is held
                                   open (`upstream_questions.py`); sampling, roots: the run's error
```
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import UpstreamRequest, as_text
from gateway.core.decoding import Events, JsonSSEOrBodyDecoder
from gateway.core.errors import ErrorCode
from gateway.core.ids import new_id
from gateway.core.sse import DEFAULT_MAX_FRAME

from .reading import TextSoFar, progress_text
from .upstream_questions import interrupts_of, links_required, pushed
from .wire import MODERN, PROTOCOL_VERSION, REQUEST_CANCELLED, URL_ELICITATION_REQUIRED, notification

STOP_REASONS: dict[str, canonical.StopReason] = {"length": "length", "content_filter": "content_filter"}
STRUCTURED = "structured"
"""The name of the data part a result's `structuredContent` becomes."""
GATEWAYS_KEYS = frozenset({"toolCalls", "data", "conversation_id", "interrupts", "stopReason", "error"})
"""What a gateway's MCP face writes in `structuredContent` (`encode.py`), read back as the events it was."""


class McpDecoder(JsonSSEOrBodyDecoder):
    __slots__ = ("_answered", "_began", "_call", "_called", "_headers", "_held", "_message_id", "_modern",
                 "_shown_parts")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._call: str | int | None = None
        """The JSON-RPC id of the `tools/call` this reads the answer to."""
        self._headers: dict[str, str] = {}
        self._called: dict[str, Any] | None = None
        """The tool and the arguments it was called with: what a question it asks retries."""
        self._modern = False
        """The call is 2026-07-28's: closing its stream cancels it."""
        self._shown_parts: list[str] = []
        """The text shown so far."""
        self._message_id = new_id("msg")
        self._answered = False
        self._began = False
        """The call's response came: there is nothing left to cancel."""
        self._held: str | None = None
        """A progress message before any text, until what follows says whether it was text or a status line."""
        self._steady = TextSoFar()

    def sent(self, request: UpstreamRequest) -> None:
        try:
            body = orjson.loads(request.body)
            self._call = body.get("id")
            params = body.get("params")
        except (orjson.JSONDecodeError, AttributeError):
            self._call, params = None, None
        if isinstance(params, dict) and isinstance(params.get("name"), str):
            self._called = {"name": params["name"], "arguments": params.get("arguments")}
            meta = params.get("_meta")
            self._modern = isinstance(meta, dict) and meta.get(PROTOCOL_VERSION) == MODERN
        self._headers = {k: v for k, v in request.headers.items() if k == "content-type"}

    def cancel_request(self) -> UpstreamRequest | None:
        """`notifications/cancelled` for the call, in its session (the server handles it as a separate POST); none
        for a 2026-07-28 call, which closing its stream cancels."""
        if self._call is None or self._answered or self._modern:
            return None
        body = notification("notifications/cancelled", {"requestId": self._call, "reason": "cancelled"})
        return UpstreamRequest(body, dict(self._headers), streams=False)

    def fail(self, message: str, code: str | None = None) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        self._release_held(out)
        self.repair.fail(message, code, out)
        return out

    def cancel(self) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        self._release_held(out)
        self.repair.push(canonical.RunFinished(outcome="cancelled"), out)
        return out

    def _release_held(self, out: list[canonical.Event]) -> None:
        """A held progress message when the run ends early: shown as the text it most likely was."""
        if self._held is not None and not self.repair.done:
            held, self._held = self._held, None
            self._shown_parts.append(held)
            self.repair.push(canonical.TextDelta(self._message_id, held), out)

    def on_frame(self, frame: dict[str, Any], out: Events) -> None:
        if not self._began:  # the client hears the run began, a held progress message or not
            self._began = True
            out.append(canonical.RunStarted())
        method = frame.get("method")
        if frame.get("jsonrpc") != "2.0":  # not MCP's: kept for a client of the same dialect, counted by others
            out.append(canonical.Raw("mcp", event=frame))
        elif method == "notifications/progress":
            params = frame.get("params")
            if isinstance(params, dict) and isinstance(message := params.get("message"), str) and message:
                self._progress(message, params.get("total") is not None, out)
        elif method is None and ("result" in frame or "error" in frame):  # the call's: the stream's one response
            self._answer(frame, out)
        elif method is not None and "id" in frame and self._modern:  # 2026-07-28 asks by input_required only
            out.append(canonical.RunError(f"the MCP server sent a request ({method!r}) on a 2026-07-28 call's stream, "
                                          "which that protocol forbids", code=ErrorCode.UPSTREAM_BAD_EVENT))
        elif method is not None and "id" in frame:  # a request of the server's: elicitation, sampling, roots
            self._release_held_text(out)
            for event in pushed(frame):
                out.append(event)
        elif method is not None:  # another notification (a log line): no canonical meaning
            out.append(canonical.Raw("mcp", event=frame))

    def on_body(self, body: Any, out: Events) -> None:
        if isinstance(body, dict):
            self._answer(body, out)
        else:
            out.append(canonical.RunError("the MCP server answered with no JSON-RPC response",
                                          code=ErrorCode.UPSTREAM_BAD_EVENT))

    @property
    def _shown(self) -> str:
        """The text shown so far (kept in the pieces it came in until asked for: appending to one string copies
        it)."""
        parts = self._shown_parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0] if parts else ""

    def steady_text(self, frame: Any) -> str | None:
        """A progress notification whose text so far is all shown: the next may be read by what it adds."""
        text = progress_text(frame)
        return text if text is not None and text == self._shown else None

    def on_steady_text(self, text: str, out: Events) -> None:
        """What a progress notification of the same shape added to the text so far."""
        self._text(text, out)

    def _progress(self, message: str, measured: bool, out: Events) -> None:
        if not self._shown and (measured or self._held is not None):
            self._settle(message, out)
            if not self._shown:
                self._held = message
                return
        if message.startswith(self._shown):
            self._text(message[len(self._shown):], out)
        else:
            self._step(message, out)

    def _release_held_text(self, out: Events) -> None:
        """A held progress message when the agent asks something: the text it most likely was."""
        if self._held is not None:
            held, self._held = self._held, None
            self._text(held, out)

    def _settle(self, following: str, out: Events) -> None:
        """The held message, now that `following` came after it: text it extends, else a status line."""
        held, self._held = self._held, None
        if held is None:
            return
        if following.startswith(held):
            self._text(held, out)
        else:
            self._step(held, out)

    @staticmethod
    def _step(message: str, out: Events) -> None:
        out.append(canonical.StepStarted(name=message))
        out.append(canonical.StepFinished(name=message))

    def _text(self, delta: str, out: Events) -> None:
        if delta:
            self._shown_parts.append(delta)
            out.append(canonical.TextDelta(self._message_id, delta))

    def _answer(self, frame: dict[str, Any], out: Events) -> None:
        self._answered = True
        error = frame.get("error")
        if isinstance(error, dict):
            if error.get("code") == REQUEST_CANCELLED:
                out.append(canonical.RunFinished(outcome="cancelled"))
            elif error.get("code") == URL_ELICITATION_REQUIRED:
                self._release_held_text(out)
                for event in links_required(error, self._called):
                    out.append(event)
            else:
                out.append(canonical.RunError(str(error.get("message") or error), code=ErrorCode.UPSTREAM_ERROR))
            return
        result = frame.get("result")
        if not isinstance(result, dict):
            out.append(canonical.RunError("the MCP server's answer has no result", code=ErrorCode.UPSTREAM_BAD_EVENT))
            return
        if result.get("resultType") == "input_required":
            self._release_held_text(out)
            for event in interrupts_of(result, self._called):
                out.append(event)
            return
        texts = _texts_of(result.get("content"))
        failed = result.get("isError") is True
        text = "".join(texts[:-1] if failed else texts)  # a failure's text last, what the agent said before it first
        self._settle(text, out)
        self._final(text, out)
        structured = result.get("structuredContent")
        stop_reason, error_code = None, ErrorCode.UPSTREAM_ERROR
        if isinstance(structured, dict):
            said = structured.get("stopReason")
            stop_reason = STOP_REASONS.get(said) if isinstance(said, str) else None
            failure = structured.get("error")
            if isinstance(failure, dict) and isinstance(failure.get("code"), str):
                error_code = failure["code"]  # a gateway's: the error's own code
            structured = _gateways_parts(structured, out)
        if structured and structured != {"result": text} and as_text(structured) != text:
            out.append(canonical.Data(STRUCTURED, structured))
        if failed:
            out.append(canonical.RunError(texts[-1] if texts else "the tool failed", code=error_code))
        else:
            out.append(canonical.RunFinished(stop_reason=stop_reason))

    def _final(self, text: str, out: Events) -> None:
        """The result's text: what the progress did not show yet."""
        if text.startswith(self._shown):
            self._text(text[len(self._shown):], out)
        elif text:  # the final text is not what the progress showed: it comes as a message of its own
            out.append(canonical.TextEnd(self._message_id))
            self._message_id, self._shown_parts = new_id("msg"), []
            self._text(text, out)

    def on_end(self, out: Events) -> None:
        """The stream ended before the call's response: repair fails the run as cut short."""


def _gateways_parts(structured: dict[str, Any], out: Events) -> dict[str, Any]:
    """What a gateway's MCP face puts in `structuredContent` besides the text (the tools the agent ran, its data
    parts, the conversation's id), as the events they were; the rest of it, for a data part of its own."""
    calls = structured.get("toolCalls")
    for call in calls if isinstance(calls, list) else ():
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            continue
        if isinstance(call.get("name"), str):
            out.append(canonical.ToolCallStart(call["id"], call["name"]))
            out.append(canonical.ToolCallArgs(call["id"], as_text(call.get("arguments", {}))))
            out.append(canonical.ToolCallEnd(call["id"]))
        if "result" in call:
            out.append(canonical.ToolResult(call["id"], call["result"], is_error=call.get("isError") is True))
    data = structured.get("data")
    for part in data if isinstance(data, list) else ():
        if isinstance(part, dict) and isinstance(part.get("name"), str):
            out.append(canonical.Data(part["name"], part.get("data")))
    return {key: value for key, value in structured.items() if key not in GATEWAYS_KEYS}


def _texts_of(content: Any) -> list[str]:
    """The text blocks of a result's content; other blocks (images, resources) are not text."""
    if not isinstance(content, list):
        return []
    return [block["text"] for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)]
