"""What the page is sent of a run: its line in the list, and the whole of it.

Where the route does not let the inspector show bodies, what was said is shown as its shape: the keys, the types
and ids of frames and events, each string's length instead of its text. Credentials and the route's own upstream
headers are never in a capture to begin with (`gateway.recordings.exchange.safe_headers`), nor are the values of the
fields a body names for a credential (`safe_body`).
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.depth import MAX_DEPTH_IN_TEXT, nests_deeper
from gateway.core.dropped import approximated
from gateway.inspector.ring import InspectedRun
from gateway.recordings.capture import Row

KEPT_WORDS = frozenset({
    "type", "event", "kind", "role", "method", "jsonrpc", "state", "finishReason", "outcome", "code", "name",
    "toolCallName", "toolName", "reason", "status", "trigger", "protocolVersion", "version", "media_type",
})
"""Keys whose string values say what a frame is, not what anyone said: shown even without bodies."""
MAX_SHOWN_ITEMS = 50
_UNREADABLE = object()


def summary(run: InspectedRun) -> dict[str, Any]:
    record, capture = run.record, run.capture
    dropped = run.losses()
    left_out = sum(count for kind, count in dropped.items() if not approximated(kind))
    frames_in = capture.frames if capture is not None else None
    events_out = capture.events_out if capture is not None else None
    return {
        "id": run.number, "request_id": record.request_id, "started": run.started, "route": record.route,
        "path": record.path, "client_dialect": record.client_dialect, "upstream_dialect": record.upstream_dialect,
        "upstream": record.upstream, "failovers": record.failovers,
        "key_id": record.key_id, "status": record.status, "outcome": record.outcome, "error": record.error,
        "conversation_id": record.conversation_id, "ttfe_ms": record.ttfe_ms, "duration_ms": record.duration_ms,
        "events_in": record.events, "events_out": events_out if events_out is not None else
        max(0, record.events - left_out), "frames_in": frames_in, "dropped": dropped, "in_flight": not run.ended,
        "resumed": record.outcome == "resumed", "stopped": record.outcome == "stopped",
        "reattached": bool(record.upstream_reattached), "captured": capture is not None, "bodies": run.bodies,
        "truncated": bool(capture is not None and capture.truncated), "violations": run.violations,
    }


def detail(run: InspectedRun, after: int = 0) -> dict[str, Any]:
    """The run, with its timeline's rows from `after` on (a live view asks for what it has not shown)."""
    capture = run.capture
    found: dict[str, Any] = {"run": summary(run), "captured": capture is not None}
    if capture is None:
        return found
    bodies = run.bodies
    found.update({
        "version": capture.version, "mapping": capture.mapping, "truncated": capture.truncated,
        "client_request": _request(capture.client_request, bodies),
        "attempts": [_attempt(attempt, bodies) for attempt in capture.attempts],
        "upstream_request": _request(capture.upstream_request, bodies),
        "upstream_response": capture.upstream_head and _head(capture.upstream_head),
        "client_response": capture.client_head and _head(capture.client_head),
        "rows": [_row(row, bodies) for row in capture.rows[after:]], "after": after,
    })
    return found


def _attempt(attempt: dict[str, Any], bodies: bool) -> dict[str, Any]:
    """An upstream that failed the run before its reply, on a route with fallbacks: who, why, what it was asked and
    answered, and when (ms from the request)."""
    return {"upstream": attempt["upstream"], "dialect": attempt["dialect"], "url": attempt["url"],
            "reason": attempt["reason"], "error": attempt["error"],
            "status": attempt["head"]["status"] if attempt["head"] else None,
            "began_ms": round(attempt["began"] * 1000, 3),
            "took_ms": round((attempt["ended"] - attempt["began"]) * 1000, 3),
            "request": _request(attempt["request"], bodies), "response": attempt["head"] and _head(attempt["head"])}


def _head(head: dict[str, Any]) -> dict[str, Any]:
    return {"status": head["status"], "headers": head["headers"],
            "at_ms": round(head["at"] * 1000, 3) if "at" in head else None}


def _request(request: dict[str, Any] | None, bodies: bool) -> dict[str, Any] | None:
    if request is None:
        return None
    shown = {key: value for key, value in request.items() if key not in ("body", "discovery", "streams")}
    shown["body"] = _body(request["body"], bodies)
    if "sent_at" in shown:
        shown["sent_ms"] = round(shown.pop("sent_at") * 1000, 3)
    return shown


def _body(data: bytes, bodies: bool) -> Any:
    """A request body: its JSON (or its shape), else its text (or its length)."""
    value = _readable(data)
    if value is _UNREADABLE:
        return data.decode("utf-8", "replace") if bodies else f"[{len(data)} bytes]"
    return value if bodies else shape(value)


def _readable(data: bytes | str) -> Any:
    """`data`'s JSON, or `_UNREADABLE` when it is not JSON or nests deeper than the page is sent: a client's body is
    captured before its depth is checked, and shown as text then."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return _UNREADABLE
    return _UNREADABLE if nests_deeper(value, data, MAX_DEPTH_IN_TEXT) else value


def _row(row: Row, bodies: bool) -> dict[str, Any]:
    written = row.written_at
    return {
        "at_ms": round(row.at * 1000, 3), "source": row.source, "frame": _frame(row.frame, bodies),
        "written_ms": round(written * 1000, 3) if written is not None else None,
        "took_ms": round((written - row.at) * 1000, 3) if written is not None else None,
        "events": [{"kind": event.kind, "fields": _fields(event.body, bodies), "out": _frame(event.out, bodies),
                    "dropped": [{"kind": kind, "approximated": approximated(kind)} for kind in event.dropped]}
                   for event in row.events],
    }


def _fields(body: bytes, bodies: bool) -> Any:
    value = _readable(body)
    if value is _UNREADABLE:
        return body.decode("utf-8", "replace") if bodies else f"[{len(body)} bytes]"
    return value if bodies else shape(value)


def _frame(data: bytes, bodies: bool) -> str:
    """A frame as text; without bodies, each SSE `data:` line's JSON as its shape."""
    text = data.decode("utf-8", "replace")
    if bodies or not text:
        return text
    lines = []
    for line in text.splitlines():
        field, colon, value = line.partition(":")
        if colon and field == "data":
            data = _readable(value)
            lines.append(f"data: [{len(value.strip())} characters]" if data is _UNREADABLE else
                         "data: " + orjson.dumps(shape(data)).decode())
        elif colon and field in ("event", "id", "retry", ""):
            lines.append(line)
        elif line:
            data = _readable(line)
            lines.append(f"[{len(line)} characters]" if data is _UNREADABLE else orjson.dumps(shape(data)).decode())
        else:
            lines.append("")
    return "\n".join(lines)


def shape(value: Any, key: str = "") -> Any:
    """`value` with what people said taken out: strings become their length, except those that name what a thing
    is (`KEPT_WORDS`) or which thing it is (ids)."""
    if isinstance(value, dict):
        return {k: shape(v, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        shown = [shape(item, key) for item in value[:MAX_SHOWN_ITEMS]]
        if len(value) > MAX_SHOWN_ITEMS:
            shown.append(f"[{len(value) - MAX_SHOWN_ITEMS} more]")
        return shown
    if isinstance(value, str) and not _kept(key):
        return f"[{len(value)} characters]"
    return value


def _kept(key: str) -> bool:
    return key in KEPT_WORDS or key == "id" or key.endswith(("Id", "_id"))
