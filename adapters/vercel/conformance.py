"""The `ai` package's rules for a UI message stream: what `useChat` (its `DefaultChatTransport` feeding
`readUIMessageStream`) rejects in an agent's answer, frame by frame, without Node.

A stream passes when both clients the test suite runs accept it (`tests/clients/verify-vercel.mjs`): ai 7.0.173, and
ai 6.0.230, whose chunk schemas are strict (one key outside the schema rejects the whole stream) and whose state
machine ends every open text and reasoning part at `finish-step`. An in-band `{"type": "error"}` chunk is the agent
reporting a failure the protocol's way, not a violation.

Rules named `convention-...` are what the protocol's documentation or the AI SDK's own server does and no client
checks (the headers, `data: [DONE]`, ending what was started): worth fixing, never why a real client fails.

    judge (here)          the status and headers, then one pass over the frames as the client parses them
      ├── chunk_schema    each chunk against both clients' schemas
      └── message_reader  each chunk the schemas take, through both clients' state machines
"""

from __future__ import annotations

import json
from dataclasses import replace
from enum import Enum
from typing import Any

from gateway.core.conformance import MAX_VIOLATIONS, Answer, Violation, preview, sse_head, sse_json_frames
from gateway.core.sse import SSEDecoder

from .chunk_schema import AI7_TYPES, chunk_problems, forbidden_key
from .chunk_schema import CHUNKS as CHUNKS
from .message_reader import Reader

CONVENTION = "convention-"
"""The prefix of every rule a real client does not enforce."""


class Client(Enum):
    """Where `useChat` is in the stream it reads."""

    READING = "reading"
    ABORTED = "reading on after an abort chunk: parts it leaves open are not unfinished"
    STOPPED = "stopped at an error chunk: nothing after it reaches the message"
    STOPPED_TOLD = "stopped, and the judge has said so of a chunk after the error"


_AFTER_CHUNK = {(Client.READING, "error"): Client.STOPPED, (Client.ABORTED, "error"): Client.STOPPED,
                (Client.READING, "abort"): Client.ABORTED}
"""The client's state after a chunk the schema takes, by its state before and the chunk's type; any other chunk
leaves it where it is. The one other transition, to STOPPED_TOLD, is the judge's (`_Stream.chunk`)."""


def _not_json(constant: str) -> object:
    raise ValueError(f"{constant} is not JSON")


def _adds_to_message(chunk: object) -> bool:
    """Whether a chunk would change the message, unlike the ends an agent sends after an error chunk."""
    return not isinstance(chunk, dict) or chunk.get("type") not in ("error", "finish-step", "finish", "abort")


def judge(answer: Answer) -> list[Violation]:
    found, readable = _head(answer)
    if readable:
        found += _Stream(answer).run(MAX_VIOLATIONS - len(found))
    return found[:MAX_VIOLATIONS]


def _head(answer: Answer) -> tuple[list[Violation], bool]:
    """Status and headers; whether the client reads the body as a stream at all."""
    found: list[Violation] = []
    for violation in sse_head(answer):
        if violation.rule == CONVENTION + "content-type":
            found.append(replace(violation,
                                 message=violation.message + " (useChat parses the body as SSE whatever it says)"))
        elif answer.status in (204, 205) or violation.rule == "status":
            reason = ("there is no body: useChat fails with 'The response body is empty'"
                      if answer.status in (204, 205) else
                      "useChat fails, with the response body as the error's message (AI_APICallError)")
            return [Violation("status", f"HTTP {answer.status}: {reason}", violation.frame)], False
        else:
            found.append(replace(violation,
                                 message=f"HTTP {answer.status}: useChat reads any 2xx, the AI SDK answers 200"))
    ui, data = answer.headers.get("x-vercel-ai-ui-message-stream"), answer.headers.get("x-vercel-ai-data-stream")
    if ui != "v1" and data != "v2":  # v2 is Inkeep's `/api/chat`
        found.append(Violation(CONVENTION + "stream-header", (
            "x-vercel-ai-data-stream: v1 is the ai 4 data stream, which no ai 5+ client reads; a UI message stream "
            "sets x-vercel-ai-ui-message-stream: v1" if data == "v1" else
            f"the protocol asks a custom backend for x-vercel-ai-ui-message-stream: v1, "
            f"{f'got {ui!r}' if ui is not None else 'which is missing'} (useChat does not check it)")))
    return found, True


class _Stream:
    """One pass over the frames, in order: each chunk's schema, then both clients' state machines."""

    def __init__(self, answer: Answer) -> None:
        body = answer.body.removeprefix(b"\xef\xbb\xbf")  # the client's TextDecoder drops a byte order mark...
        try:
            body.decode()
        except UnicodeDecodeError:  # ...and reads broken UTF-8 as U+FFFD
            body = body.decode("utf-8", "replace").encode()
        not_json: list[Violation] = []
        self.frames = {index: (data, value) for index, data, value in sse_json_frames(replace(answer, body=body),
                                                                                     not_json)}
        decoder = SSEDecoder(max_frame=len(body) + 1)
        raw = decoder.feed(body)
        self.complete = len(raw)
        """Frames from here on have no blank line after them: the client's SSE parser never hands them on."""
        raw += decoder.flush()
        self.not_json: dict[int, Violation] = {}
        for violation in not_json:
            index = violation.index
            if index is None:
                continue
            try:  # orjson refuses some texts JavaScript's JSON.parse reads, as a lone surrogate escape
                self.frames[index] = raw[index], json.loads(raw[index].decode(), parse_constant=_not_json)
            except (ValueError, RecursionError):
                self.not_json[index] = violation
        self.readers = (Reader(6), Reader(7))
        for reader in self.readers:
            reader.continuing(answer.request)
        self.found: list[Violation] = []
        self.client = Client.READING
        self.error_at = -1
        """The frame of the error chunk the client stopped at."""

    def add(self, rule: str, message: str, data: bytes | None = None, index: int | None = None) -> None:
        self.found.append(Violation(rule, message, preview(data) if data is not None else None, index))

    def run(self, budget: int) -> list[Violation]:
        chunks = 0
        last: tuple[int, str | None, bool] | None = None  # the last frame read: index, preview, whether [DONE]
        for index in sorted(self.frames.keys() | self.not_json.keys()):
            if len(self.found) >= budget:
                return self.found
            bad = self.not_json.get(index)
            data, value = self.frames.get(index, (b"", None))
            if index >= self.complete:
                self.found.append(Violation(CONVENTION + "unterminated-frame", "the stream ends inside this frame "
                                            "(no blank line after it): the client's SSE parser drops it",
                                            bad.frame if bad is not None else preview(data), index))
                continue
            if bad is not None:
                self.found.append(bad)
                chunks, last = chunks + 1, (index, bad.frame, False)
                continue
            done = value == "[DONE]" and data.strip() == b"[DONE]"
            last = (index, preview(data), done)
            if done:
                if data != b"[DONE]":
                    self.add("json", "the client skips only an exact [DONE]; this one it parses as JSON, and fails",
                             data, index)
                continue
            chunks += 1
            self.chunk(index, data, value)
        self.end(chunks, last)
        return self.found

    def chunk(self, index: int, data: bytes, value: object) -> None:
        if forbidden_key(value):
            self.add("json-prototype-key", "the client's JSON parser refuses a __proto__ key, or a constructor "
                     "with a prototype key, anywhere in a chunk", data, index)
            return
        if self.client is Client.STOPPED and _adds_to_message(value):
            self.client = Client.STOPPED_TOLD
            self.add(CONVENTION + "after-error", f"useChat stops reading at the error chunk (frame {self.error_at}): "
                     f"this chunk, and any after it, never reach the message", data, index)
        problems, usable = chunk_problems(value)
        for rule, message in problems:
            self.add(rule, message, data, index)
        if not usable or not isinstance(value, dict):
            return
        if self.client in (Client.READING, Client.ABORTED):  # as the client, which stops at the first error chunk
            self.state(index, data, value)
        after = _AFTER_CHUNK.get((self.client, value["type"]))
        if after is not None:
            self.client = after
            if after is Client.STOPPED:
                self.error_at = index

    def state(self, index: int, data: bytes, chunk: dict[str, Any]) -> None:
        failures = {reader.version: reader.read(chunk, index) for reader in self.readers
                    if reader.version == 7 or chunk["type"] not in AI7_TYPES}
        failed = {version: failure for version, failure in failures.items() if failure is not None}
        if not failed:
            return
        rule, message = failed.get(7) or failed[6]
        only = next(iter(failed)) if len(failed) == 1 else None
        if only is not None and f"ai {only}" not in message:
            message += f" (in ai {only})"
        self.add(rule, message, data, index)

    def end(self, chunks: int, last: tuple[int, str | None, bool] | None) -> None:
        if chunks == 0:
            self.add(CONVENTION + "empty-stream", "no chunk at all: useChat shows nothing and reports no error (a UI "
                     "message stream is SSE, one `data: {json chunk}` event per chunk)")
            return
        if last is None or not last[2]:
            self.found.append(Violation(CONVENTION + "done", "the stream does not end with data: [DONE], as the "
                                        "protocol and the AI SDK's server end it (useChat does not need it)",
                                        last[1] if last else None, last[0] if last else None))
        if self.client is not Client.READING:
            return
        reader = self.readers[1]
        for what, opened, end in (("text part", reader.text, "text-end"),
                                  ("reasoning part", reader.reasoning, "reasoning-end"),
                                  ("tool call", reader.awaiting_input, "tool-input-available")):
            for part_id, index in opened.items():
                self.add(CONVENTION + "unfinished-part", f"{what} {part_id!r} never got its {end}: useChat leaves it "
                         f"streaming", self.frames[index][0], index)
