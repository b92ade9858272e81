"""Asking the client in band (2025-06-18, 2025-11-25): a call in a session whose client declared form elicitation,
whose run ends on an interrupt, goes on in the same call once the client has answered.

```
run ends on interrupts   its result held back by the endpoint (the `Answered.then` this is)
  ─▶ elicitation/create on the call's stream, one per interrupt (form: the interrupt's responseSchema when it is
     one MCP allows, else a yes/no approval for a tool approval, else one string; a link to open, by URL mode to a
     client that declared it: url_elicitation.py)
  ◀─ the client's response, POSTed in the session (202): kept in the store under the request's id, which the
     stream polls, whichever replica holds it, for up to ANSWER_WAIT_S
  ─▶ another run of the route: the same call, its `_meta` the answers (accept: resolved with the content; decline:
     an approval denied, else cancelled; cancel: cancelled), the progress given so far and the text said so far
     (its progress and result go on from them)
  ─▶ its result ends the call, or it asks again
no answer in time        the held result: the question, and how to answer it by a later call
```
A session's call is asked by its run's log, so that its questions are resumable events of its stream
(`stream_questions.py`, which waits for the answers as here); a task's `tasks/result` asks as drawn (`task_input.py`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import orjson

from gateway.core.capabilities import AtEndpoint, Write
from gateway.core.ids import new_id

from .encode import message_event
from .request import CONVERSATION
from .url_elicitation import takes_urls, url_answer, url_request, with_link
from .wire import ANSWERS, PROGRESS, SAID, messages_in

log = logging.getLogger("agent_gateway.mcp")

ANSWER_WAIT_S = 300.0
"""How long a call waits for the client's answer to one question: a person answers, but not forever."""
POLL_S = 0.1
"""How often the waiting stream asks the store for the answer (it may come to another replica)."""
KEEP_ALIVE_S = 10.0
"""A comment on the call's stream this often while it waits, so that no proxy between takes it for dead."""
MAX_ASKED = 8
"""Interrupts asked about after one run; past them the run's result says what else is asked."""

ANSWER = "answer"
"""The one field of a form that asks for a text, or wraps the interrupt's own schema of one value."""
APPROVAL = {"type": "object", "properties": {"approved": {"type": "boolean", "title": "Approve"}},
            "required": ["approved"]}
_PRIMITIVES = frozenset({"string", "number", "integer", "boolean"})
_STRING_KEYS = frozenset({"type", "title", "description", "minLength", "maxLength", "format", "default", "enum",
                          "enumNames", "oneOf"})
_NUMBER_KEYS = frozenset({"type", "title", "description", "minimum", "maximum", "default"})


async def keep_answer(asked: AtEndpoint, session: str, message: dict[str, Any]) -> None:
    """A client's response to an `elicitation/create`, kept for the stream that waits for it; a response to
    nothing asked in this session is dropped (the store holds only what a stream waits for)."""
    id = message.get("id")
    if not isinstance(id, str) or not session:
        return
    key = answer_key(session, id)
    if await asked.session(key) == {}:
        await asked.keep(key, {"answer": message})


class Elicitation:
    """What comes after each run of one call (`Answered.then`): its interrupts asked in band, and their answers
    another run's request."""

    __slots__ = ("_asked", "_call", "_continued", "_form_mode", "_session", "_urls")

    def __init__(self, asked: AtEndpoint, session: str, kept: dict[str, Any], call: dict[str, Any]) -> None:
        self._asked = asked
        self._session = session
        self._call = call
        """The call as the route reads it."""
        self._form_mode = kept.get("version") != "2025-06-18"
        """2025-11-25 names the mode; 2025-06-18 has forms only."""
        self._urls = takes_urls(kept.get("capabilities"), kept.get("version"))
        """The client opens links (URL mode): an interrupt that has one is asked so."""
        self._continued = False

    async def __call__(self, last: bytes, write: Write) -> bytes | None:
        if last.lstrip().startswith(b"{"):  # one JSON body: an error before the run's head
            await write(b"event: message\ndata: " + last.strip() + b"\n\n" if self._continued else last)
            return None
        messages = messages_in(last, "text/event-stream")
        response = next((m for m in messages if m.get("id") == self._call.get("id") and "method" not in m), None)
        result = response.get("result") if response is not None else None
        structured = result.get("structuredContent") if isinstance(result, dict) else None
        interrupts = structured.get("interrupts") if isinstance(structured, dict) else None
        if (response is None or not isinstance(result, dict) or not isinstance(structured, dict)
                or not isinstance(interrupts, list) or not interrupts or result.get("isError")):
            await write(last)
            return None
        for message in messages:
            if message is not response:
                await write(message_event(message))
        answers = []
        for interrupt in interrupts[:MAX_ASKED]:
            answer = await self._ask(interrupt, write) if isinstance(interrupt, dict) else None
            if answer is None:
                await write(message_event(response))
                return None
            answers.append(answer)
        self._continued = True
        content = result.get("content")
        text = content[0].get("text") if isinstance(content, list) and content and isinstance(content[0], dict) \
            else None
        return self._going_on(answers, structured.get("conversation_id"), result.get("_meta"), text)

    async def _ask(self, interrupt: dict[str, Any], write: Write) -> dict[str, Any] | None:
        """The client's answer to one interrupt, as the call's `_meta` carries it; None when none came in time
        (or the store failed)."""
        schema, unwrap = form_for(interrupt, enums_of_2025_11=self._form_mode)
        id = new_id("elicit")
        key = answer_key(self._session, id)
        by_link = url_request(interrupt) if self._urls else None
        params: dict[str, Any] = by_link or {
            "message": with_link(interrupt.get("message"), interrupt.get("url")) or "The agent waits for an answer",
            "requestedSchema": schema}
        if self._form_mode and by_link is None:
            params = {"mode": "form", **params}
        params = self._tied(params)
        try:
            await self._asked.keep(key, {})
            await write(message_event({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params}))
            said = await self._answer(key, write)
        except Exception:  # a store that fails: the call ends with the question, as for a client that cannot elicit
            log.warning("the answer to elicitation %s could not be waited for", id, exc_info=True)
            said = None
        finally:
            try:
                await self._asked.forget(key)
            except Exception:
                log.warning("elicitation %s was not forgotten: the store's TTL will", id, exc_info=True)
        if said is None:
            return None
        if by_link is not None:
            return url_answer(interrupt.get("id"), said["result"] if isinstance(said.get("result"), dict) else {})
        return resume_of(interrupt, said, unwrap)

    def _tied(self, params: dict[str, Any]) -> dict[str, Any]:
        """An `elicitation/create`'s params with what ties them to what asks (nothing: the call's stream does)."""
        return params

    async def _answer(self, key: str, write: Write) -> dict[str, Any] | None:
        deadline = time.monotonic() + ANSWER_WAIT_S
        alive = time.monotonic() + KEEP_ALIVE_S
        while (left := deadline - time.monotonic()) > 0:
            kept = await self._asked.session(key)
            if kept is not None and isinstance(kept.get("answer"), dict):
                return dict(kept["answer"])
            await asyncio.sleep(min(POLL_S, left))
            if time.monotonic() >= alive:
                alive = time.monotonic() + KEEP_ALIVE_S
                await write(b": waiting for the client's answer\n\n")
        return None

    def _going_on(self, answers: list[dict[str, Any]], conversation: Any, meta: Any, text: Any) -> bytes:
        """The call again, its conversation's interrupts answered, its text and progress gone on from."""
        params = self._call["params"]
        meta = meta if isinstance(meta, dict) else {}
        call_meta = {**(params.get("_meta") or {}), ANSWERS: answers}
        if isinstance(meta.get(PROGRESS), int):
            call_meta[PROGRESS] = meta[PROGRESS]
        if isinstance(meta.get(SAID), int) and meta[SAID] > 0 and isinstance(text, str):
            call_meta[SAID] = text[:meta[SAID]]
        arguments = {**params["arguments"], CONVERSATION: conversation}
        return orjson.dumps({**self._call, "params": {**params, "arguments": arguments, "_meta": call_meta}})


def form_for(interrupt: dict[str, Any], *, enums_of_2025_11: bool = True) -> tuple[dict[str, Any], bool]:
    """The form an interrupt asks with, and whether its answer is the one field `answer` of it: the interrupt's own
    schema when MCP allows it (a flat object of primitives, or one primitive, wrapped; titled and multi-select
    enums from 2025-11-25 on), else a yes/no approval for a tool approval, else one text."""
    schema = interrupt.get("responseSchema")
    if isinstance(schema, dict) and _flat(schema, enums_of_2025_11):
        return schema, False
    if isinstance(schema, dict) and _primitive(schema, enums_of_2025_11):
        return {"type": "object", "properties": {ANSWER: schema}, "required": [ANSWER]}, True
    if interrupt.get("reason") == "tool_approval" or interrupt.get("toolCallId"):
        return APPROVAL, False
    return {"type": "object", "properties": {ANSWER: {"type": "string", "title": "Answer"}},
            "required": [ANSWER]}, True


def _flat(schema: dict[str, Any], enums_of_2025_11: bool) -> bool:
    properties = schema.get("properties")
    return (schema.get("type") == "object" and isinstance(properties, dict) and bool(properties)
            and all(isinstance(p, dict) and (_primitive(p, enums_of_2025_11)
                                             or (enums_of_2025_11 and _multi_select(p))) for p in properties.values()))


def _primitive(schema: dict[str, Any], enums_of_2025_11: bool) -> bool:
    kind = schema.get("type")
    if kind not in _PRIMITIVES or (not enums_of_2025_11 and "oneOf" in schema):
        return False
    allowed = _STRING_KEYS if kind == "string" else _NUMBER_KEYS if kind != "boolean" else \
        frozenset({"type", "title", "description", "default"})
    return set(schema) <= allowed


def _multi_select(schema: dict[str, Any]) -> bool:
    items = schema.get("items")
    return (schema.get("type") == "array" and isinstance(items, dict)
            and (isinstance(items.get("enum"), list) or isinstance(items.get("anyOf"), list)))


def resume_of(interrupt: dict[str, Any], said: dict[str, Any], unwrap: bool) -> dict[str, Any]:
    """An elicitation's result as an answer to the interrupt: accept is resolved with the form's content; decline
    denies an approval and cancels anything else; cancel, or an error, cancels."""
    id = interrupt.get("id")
    result: dict[str, Any] = said["result"] if isinstance(said.get("result"), dict) else {}
    action = result.get("action")
    approval = interrupt.get("reason") == "tool_approval" or bool(interrupt.get("toolCallId"))
    if action == "accept":
        content: dict[str, Any] = result["content"] if isinstance(result.get("content"), dict) else {}
        return {"interruptId": id, "status": "resolved", "payload": content.get(ANSWER) if unwrap else content}
    if action == "decline" and approval:
        return {"interruptId": id, "status": "resolved", "payload": {"approved": False}}
    return {"interruptId": id, "status": "cancelled"}


def answer_key(session: str, request_id: str) -> str:
    """Where a session's answer to one elicitation is kept (a session of its own, in the session's scope)."""
    return f"{session}/elicitation/{request_id}"

