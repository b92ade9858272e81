"""A `tools/call`'s SSE stream that a client which lost its connection resumes (2025-11-25 and 2025-06-18: GET with
`Last-Event-ID`), on any replica: the call is a run the gateway records (`gateway.core.queries`), its feed holding
every event the client is sent, each with the id of its place there.

```
tools/call in a session   the endpoint names a run for it (STREAM in the body): its feed claimed, its record kept
  the stream              id: <run>/0 + retry (priming), then each event as id: <run>/<n>, n its place on the feed
GET + Last-Event-ID       handed to the route the run id names (a query, RESUME): the caller's run of that session
  <run>/<n>               (another session's or principal's: 404); the feed's events after n as they come; once
                          the run has ended, those after n from the record (every event, when they fit
                          RECORDED_BYTES; else its result only)
```
A call whose client elicits is one run across its questions (`stream_questions.py`): each run that goes on after
the answers is a request of the same recorded run, numbered on from the last, so one GET follows them all.
Run ids are `<random>.<route, base64url>`, as task ids are: unguessable, and naming the route the GET goes to.
"""

from __future__ import annotations

import base64
import binascii
import re
import weakref
from collections import deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.capabilities import AgentDescription, Answered
from gateway.core.ids import new_id
from gateway.core.queries import Answer, CallerRuns, RunQuery, RunRecord, StreamedAnswer
from gateway.core.turn import Turn

from .encode import McpEncoder, message_event
from .url_elicitation import url_request, with_link

STREAM = "io.agent-gateway/stream"
"""The key the endpoint adds to a session's `tools/call` it hands a route: the run the call is, and its session
(only the endpoint sets it: a client's own is replaced)."""
RESUME = "io.agent-gateway/resume"
"""The key of the query a GET with `Last-Event-ID` becomes, handed to the route the run names."""
RECORDED_BYTES = 256 * 1024
"""The most of a call's events its record keeps for a client that comes back after the run ended (past it, the
result only): a record is one value in the store, whose values are bounded (a MiB by default)."""
RETRY_MS = 1000
"""How soon a client whose stream broke should come back (the priming event's `retry`)."""
SSE_HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no"}
_EVENT_ID = re.compile(r"(?P<run>[A-Za-z0-9_]{1,64}\.[A-Za-z0-9_-]{1,200})/(?P<seq>[0-9]{1,9})")
INVALID_REQUEST = -32600
MAX_RUNS = 8
"""The runs one call may chain past its questions, as the endpoint lets it (`named_routes.MAX_RUNS`)."""
OLD_FORMS = "2025-06-18"
"""The version whose forms name no mode and take no titled or multi-select enums."""

_LOGS: weakref.WeakValueDictionary[str, CallLog] = weakref.WeakValueDictionary()
"""The logs of this process's streamed calls, by run id: the call's encoder sends what its log numbered."""


# The endpoint's side.

def streamed(message: dict[str, Any], session: str, route: str, asks: str | None = None,
             links: bool = False) -> dict[str, Any]:
    """A session's call as the route reads it: a run of its own, whose stream a client may resume; `asks`, for a
    client that takes elicitation forms, the session's version (the run asks in band: `stream_questions.py`), and
    `links` when it also opens links (URL mode)."""
    run_id = f"{new_id('mcpr')}.{_b64(route)}"
    stream: dict[str, Any] = {"run": run_id, "session": session}
    if asks is not None:
        stream |= {"asks": asks, "links": True} if links else {"asks": asks}
    return {**message, STREAM: stream}


def resumed(last_event_id: str, session: str, routes: Sequence[AgentDescription]) -> Answered:
    """A GET with `Last-Event-ID`, handed to the route its run names; an id of no stream of the gateway's is a 400,
    one of a route the caller may not use a 404 (as one of another session's is, by the route)."""
    matched = _EVENT_ID.fullmatch(last_event_id.strip())
    if matched is None:
        return _refused(400, "Bad Request: Last-Event-ID names no event of this server's streams")
    run_id, seq = matched["run"], int(matched["seq"])
    route = _unb64(run_id.partition(".")[2])
    if route not in [r.name for r in routes]:
        return _refused(404, "Stream not found")
    query = {"jsonrpc": "2.0", "method": "stream/resume", RESUME: {"run": run_id, "after": seq, "session": session}}
    return Answered(run=route, body=orjson.dumps(query))


# The route's side: the call's log, its encoder, and the resumption.

def asked_stream(turn: Turn) -> dict[str, Any] | None:
    """The stream the endpoint named for this call, if any."""
    asked = turn.metadata.get("mcp")
    stream = asked.get("stream") if isinstance(asked, dict) else None
    return stream if isinstance(stream, dict) else None


class CallLog:
    """The call's run as its feed keeps it (`gateway.core.queries.RunLog`): each event the client is sent, with its
    id; its record names the session, and once the call has ended, its last event (the result)."""

    __slots__ = ("__weakref__", "_asks", "_document", "_encoder", "_kept", "_kept_bytes", "_links", "_sent", "pending",
                 "run_id")

    def __init__(self, turn: Turn) -> None:
        self.run_id = turn.run_id or ""
        self._encoder = McpEncoder(turn)
        stream = asked_stream(turn) or {}
        self._asks: str | None = stream.get("asks") if (stream.get("runs") or 1) < MAX_RUNS else None
        """The session's version, when the run's questions are asked in band (else they are in its result: a client
        that does not elicit, or the last run one call may chain)."""
        self._links = stream.get("links") is True
        before = stream.get("before")  # a run that goes on after its client answered: the call's events so far
        self._sent: int = stream.get("sent") or 0
        self._kept: list[bytes] | None = [before.encode()] if isinstance(before, str) else \
            None if self._sent else []
        """Every event so far, for the record, until they pass `RECORDED_BYTES` (then None)."""
        self._kept_bytes = len(before) if isinstance(before, str) else 0
        self.pending: deque[bytes] = deque()
        """What each event of the last batch made, for the call's encoder to send (it encodes the same events
        next, in one batch or one at a time)."""
        self._document: dict[str, Any] = {"stream": self.run_id, "session": stream.get("session")}
        if isinstance(before, str):
            self._document |= {"before": before, "last": self._sent}
        _LOGS[self.run_id] = self

    def feed(self, events: list[canonical.Event]) -> list[bytes]:
        fed: list[bytes] = []
        for event in events:  # one at a time, as the encoder may be given them (a recorded run's is)
            out = self._encoder.encode([event])
            held = b""
            asked = questions(self._encoder.outcome, self._asks, self._links) if self._asks is not None else None
            if asked is not None:
                out, held = asked, out  # its questions in its place, its result held for the endpoint only
            numbered = self.numbered(out)
            self.pending.append(b"".join(numbered) + held)
            fed += numbered
            if held:
                self._document = {**self._document, "last": self._sent}
                self._document.pop("result", None)
                if self._kept is not None and self._fits(fed):
                    self._document["before"] = b"".join(self._kept + fed).decode()
                return fed
        if fed and self._kept is not None and self._fits(fed):
            self._kept += fed
        if fed and self._encoder.outcome is not None:
            self._document = {**self._document, "last": self._sent, "result": fed[-1].decode()}
            if self._kept is not None:
                self._document["before"] = b"".join(self._kept[:-1]).decode()
        return fed

    def _fits(self, fed: list[bytes]) -> bool:
        """Whether the record may keep these events too (else it keeps none from now on)."""
        self._kept_bytes += sum(len(event) for event in fed)
        if self._kept_bytes > RECORDED_BYTES:
            self._kept = None
        return self._kept is not None

    def numbered(self, out: bytes) -> list[bytes]:
        """Each SSE event of `out` with the id of its place on the feed."""
        events = []
        for event in out.split(b"\n\n"):
            if event:
                self._sent += 1
                events.append(b"id: %s/%d\n%s\n\n" % (self.run_id.encode(), self._sent, event))
        return events

    def unfed(self, events: list[canonical.Event]) -> bytes:
        """A batch the run's feed never saw (the gateway's own error as the reply fails), numbered on."""
        return b"".join(self.numbered(self._encoder.encode(events)))

    def document(self) -> dict[str, Any]:
        return self._document


class StreamedCallEncoder(McpEncoder):
    """The call's stream as its client reads it: a priming event first (an id to come back with, and `retry`),
    then what the call's log numbered for each batch; without a log (the feed could not be claimed), the call as
    any other."""

    __slots__ = ("_log", "_primed")

    def __init__(self, request: Turn) -> None:
        super().__init__(request)
        self._log = _LOGS.get(request.run_id or "")
        self._primed = bool((asked_stream(request) or {}).get("continues"))
        """A run that goes on after its client answered writes on a stream already primed."""

    def numbered(self, events: list[canonical.Event]) -> bytes:
        log = self._log
        if log is None:
            return McpEncoder.encode(self, events)
        pending = log.pending
        out = b"".join(pending.popleft() for _ in events) if len(pending) >= len(events) else log.unfed(events)
        if not self._primed:
            self._primed = True
            out = b"id: %s/0\nretry: %d\ndata: \n\n%s" % (log.run_id.encode(), RETRY_MS, out)
        return out


StreamedCallEncoder.encode = StreamedCallEncoder.numbered  # type: ignore[method-assign, assignment]
"""Set after the class is made: an encoder's class gets its `encode` made from its handlers as it is defined."""


def read_query(body: dict[str, Any]) -> RunQuery | None:
    asked = body.get(RESUME)
    if not isinstance(asked, dict) or not isinstance(asked.get("run"), str):
        return None
    return RunQuery("stream/resume", asked["run"], body, streams=True)


async def answer_query(query: RunQuery, runs: CallerRuns) -> Answer | StreamedAnswer:
    """The rest of the call's stream, for the session that made the call (another's: 404, as for no such run)."""
    asked = query.request[RESUME]
    run_id, after = asked["run"], asked.get("after")
    found = await runs.find(run_id)
    if found is None or found.record.document.get("stream") != run_id or \
            found.record.document.get("session") != asked.get("session") or not isinstance(after, int):
        return Answer(_error_body(INVALID_REQUEST, "Stream not found"), 404)
    return StreamedAnswer(_rest(run_id, after, runs), SSE_HEADERS, b": ping\n\n")


async def _rest(run_id: str, after: int, runs: CallerRuns) -> AsyncIterator[bytes]:
    """The call's events after `after`: those its record holds (of the runs before this one, or of the run that
    ended), then, while it runs or waits for its client's answers, its feed as it goes (on into the run that goes
    on after them), then what the record holds by then; each event once, by its number."""
    sent = after
    found = await runs.find(run_id)
    document = found.record.document if found is not None else {}
    for event in _recorded(document):
        if (number := _number(event)) > sent:
            sent = number
            yield event
    if found is None or "result" in document or (not found.running and found.record.status != "interrupt"):
        return
    async for event in runs.follow(run_id, 0):
        if (number := _number(event)) > sent:
            sent = number
            yield event
            if b'"method":' not in event:  # the call's response: nothing follows it
                return
    found = await runs.find(run_id)
    for event in _recorded(found.record.document if found is not None else {}):
        if (number := _number(event)) > sent:
            sent = number
            yield event


def _recorded(document: dict[str, Any]) -> list[bytes]:
    """The events a call's record holds: those before its result (all of them, or none when they were too many),
    and its result."""
    before, result = document.get("before"), document.get("result")
    events = [event + b"\n\n" for event in before.encode().split(b"\n\n")[:-1]] if isinstance(before, str) else []
    return [*events, result.encode()] if isinstance(result, str) else events


def _number(event: bytes) -> int:
    """An event's place on its call's stream (`id: <run>/<n>` opens it)."""
    return int(event[4:event.index(b"\n")].rpartition(b"/")[2])


def questions(outcome: dict[str, Any] | None, version: str, links: bool = False) -> bytes | None:
    """What a run whose result asks its user says instead, to a client that takes forms: the questions
    (`elicitation/create`: a link to open in URL mode to a client that opens `links`, else a form), which the
    endpoint waits for the answers to (`stream_questions.py`)."""
    structured = outcome.get("structuredContent") if outcome is not None else None
    interrupts = structured.get("interrupts") if isinstance(structured, dict) else None
    if outcome is None or not isinstance(interrupts, list) or not interrupts or outcome.get("isError"):
        return None
    from .elicitation import MAX_ASKED, form_for  # here: that module reaches this one through the request's

    asked = []
    for interrupt in interrupts[:MAX_ASKED]:
        if not isinstance(interrupt, dict):
            return None
        schema, _ = form_for(interrupt, enums_of_2025_11=version != OLD_FORMS)
        by_link = url_request(interrupt) if links else None
        params: dict[str, Any] = by_link or {
            "message": with_link(interrupt.get("message"), interrupt.get("url")) or "The agent waits for an answer",
            "requestedSchema": schema}
        if version != OLD_FORMS and by_link is None:
            params = {"mode": "form", **params}
        asked.append(message_event({"jsonrpc": "2.0", "id": new_id("elicit"), "method": "elicitation/create",
                                    "params": params}))
    return b"".join(asked)


def continues(turn: Turn) -> str | None:
    """The call a run goes on with after its client answered its questions, if it is one."""
    stream = asked_stream(turn)
    return turn.run_id if stream is not None and stream.get("continues") else None


def continued(turn: Turn, record: RunRecord) -> Turn:
    """The run that goes on with a call, given the call's record: its numbering and its events so far carried on."""
    document = record.document
    carried: dict[str, Any] = {"sent": document.get("last") or 0}
    if isinstance(document.get("before"), str):
        carried["before"] = document["before"]
    asked = turn.metadata["mcp"]
    stream = {**asked["stream"], **carried}
    return replace(turn, metadata={**turn.metadata, "mcp": {**asked, "stream": stream}})


def _refused(status: int, message: str) -> Answered:
    return Answered(status, _error_body(INVALID_REQUEST, message), {"content-type": "application/json"})


def _error_body(code: int, message: str) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}})


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def _unb64(text: str) -> str | None:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
