"""Responses over a WebSocket (Open Responses' WebSocket transport): at `/v1/responses` a client sends
`{"type": "response.create", ...}` messages, the body of a `POST` without its HTTP fields (`stream`,
`stream_options`, `background`), one at a time; each is answered with the events the SSE stream would carry, one
JSON message each, and a request refused before its response starts with an error envelope
(`{"type": "error", "status", "error": {"code", "message", "param"}}`). A run that fails is `response.failed`
alone: its clients end a turn at the first `error` or terminal event, so the `error` the SSE stream sends before
it would end the turn early, and `response.failed` would land in the next one.

The connection remembers the last `store: false` response it served (the specification's connection-local state):
a request that follows it (`previous_response_id`, only the new input) is put to the route as the whole history,
as a client that resends it is, and no store holds it. A `store: false` response the connection does not hold is
`previous_response_not_found` (another connection's, or one evicted); a stored one is found as over HTTP. A
continuation that fails evicts the response it followed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import orjson

from gateway.core.errors import InvalidRequest, UnknownRun
from gateway.core.turn import Message, Turn

from .items import ERRORS, MCP_CALL
from .request import echo, read_input

_HTTP_ONLY = ("stream", "stream_options", "background")
_TERMINAL = (b"event: response.completed\n", b"event: response.incomplete\n")
_FAILED = (b"event: response.failed\n", b"event: error\n")
_KEPT_ITEMS = frozenset({"message", "function_call", "reasoning", MCP_CALL})
"""The output items the next turn's history holds; the others (approvals, activities, subagents) tell the client
what happened, and the conversation the route keeps remembers what they mean."""


def refusal(status: int, code: str, message: str) -> bytes:
    return orjson.dumps({"type": "error", "status": status, "error": ERRORS.object(message, status, code)})


class ResponsesSession:
    """One connection's runs, one at a time (see the module)."""

    __slots__ = ("_follows", "_kept", "_pending", "_turn")

    def __init__(self) -> None:
        self._kept: tuple[str, list[Message]] | None = None
        """The last `store: false` response of the connection, and the history it leaves."""
        self._turn: Turn | None = None
        """The running request, once read."""
        self._follows: str | None = None
        """The response the running request follows, if it names one: evicted if it fails."""
        self._pending = b""
        """The start of an event whose end is in the reply's next piece."""

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        self._turn, self._pending = None, b""
        follows = message.get("previous_response_id")
        self._follows = follows if isinstance(follows, str) else None
        if message.get("type") != "response.create":
            raise InvalidRequest(f"type: a message is a response.create, not {message.get('type')!r}",
                                 [{"field": "type", "message": "Input should be 'response.create'"}])
        for name in _HTTP_ONLY:
            if name in message:
                raise InvalidRequest(f"{name} is an HTTP field, not sent on a WebSocket: every response streams",
                                     [{"field": name, "message": "not on a WebSocket"}])
        body = {key: value for key, value in message.items() if key != "type"}
        body["stream"] = True
        return body

    def continued(self, turn: Turn) -> Turn:
        if turn.follows is not None and self._kept is not None and self._kept[0] == turn.follows:
            history = self._kept[1]
            _check_answers(history, turn.messages)
            turn = replace(turn, messages=history + turn.messages, history="full", follows=None)
        elif turn.follows is not None and not echo(turn).get("store", True):
            raise UnknownRun(f"Previous response with id '{turn.follows}' not found.")
        self._turn = turn  # one that follows a stored response: the route finds it
        return turn

    def frames(self, body: bytes) -> list[bytes]:
        frames = (self._pending + body).split(b"\n\n")
        self._pending = frames.pop()
        out = []
        for number, frame in enumerate(frames):
            data = frame.rpartition(b"\ndata: ")[2] if frame.startswith(b"event: ") else b""
            if not data:
                continue  # a keep-alive comment, or `data: [DONE]`: nothing a WebSocket client reads
            if frame.startswith(b"event: error\n") and frames[number + 1:number + 2] and \
                    frames[number + 1].startswith(b"event: response.failed\n"):
                continue  # a socket's client ends its turn at the first of the two: `response.failed` says it all
            out.append(data)
            if frame.startswith(_TERMINAL):
                self._ended(orjson.loads(data).get("response") or {})
            elif frame.startswith(_FAILED):
                self._failed()
        return out

    def refused(self, status: int, body: bytes) -> bytes:
        self._failed()
        try:
            error = orjson.loads(body).get("error")
        except (orjson.JSONDecodeError, AttributeError):
            error = None
        if not isinstance(error, dict) or not isinstance(error.get("message"), str):
            return refusal(status, "server_error", body[:300].decode("utf-8", "replace"))
        if not isinstance(error.get("code"), str):
            error["code"] = "server_error" if status >= 500 else "invalid_request"
        return orjson.dumps({"type": "error", "status": status, "error": error})

    def _ended(self, response: dict[str, Any]) -> None:
        turn = self._turn
        if turn is None or echo(turn).get("store", True) or not isinstance(response.get("id"), str):
            return
        items = [i for i in response.get("output") or () if isinstance(i, dict) and i.get("type") in _KEPT_ITEMS]
        try:
            said = read_input(items)[0]
        except InvalidRequest:  # an item the gateway wrote and cannot read back: the next turn cannot follow it
            self._kept = None
            return
        self._kept = (response["id"], turn.messages + said)

    def _failed(self) -> None:
        if self._follows is not None and self._kept is not None and self._kept[0] == self._follows:
            self._kept = None


def _check_answers(history: list[Message], new: list[Message]) -> None:
    """Each tool output in `new` answers a call the history (or `new`) holds."""
    calls = {call.id for m in [*history, *new] for call in m.tool_calls}
    for m in new:
        if m.role == "tool" and m.tool_call_id not in calls:
            raise InvalidRequest(f"No tool call found for function call output with call_id {m.tool_call_id!r}.",
                                 [{"field": "input", "message": "a function_call_output answers no function_call"}])
