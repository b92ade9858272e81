"""Resumable routes: which run a request is (so that a retry attaches to it), and a kept reply sent to a client
that comes back.

A retry is matched by its key, scoped to the route and the caller:
- the client's `Idempotency-Key` header, when it sends one;
- else, for a dialect whose clients name their runs (AG-UI), the conversation and run ids;
- else the SHA-256 of the request body: the same request, byte for byte.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable, Coroutine
from typing import Any

from starlette.datastructures import Headers

from gateway.conversations.store import scoped_key
from gateway.core.capabilities import EventIds
from gateway.core.codec import Dialect
from gateway.core.errors import MalformedRequest
from gateway.core.turn import Turn
from gateway.runs.tape import Head, RunReply, TapeLost
from gateway.server.stream.client import ClientWriter

ENTRY_WAIT = 1.0
"""Seconds a follower waits for the next entry before it looks again (and sends a keep-alive when one is due)."""


NOT_KEPT = "the run's reply is no longer kept: start a new run"
LOST = "the run was lost with the replica that ran it: start it again"
BROKEN = "part of the run's reply was lost as Redis failed over: start it again"
_EVENT_ID = re.compile(r"[0-9]{1,15}")


def run_key(route: str, principal: str, client: Dialect, turn: Turn, headers: Headers, body: bytes) -> str:
    if idempotency_key := headers.get("idempotency-key"):
        return scoped_key("resume", route, principal, "idempotency-key", idempotency_key)
    if client.capability(EventIds) is not None and turn.run_id:
        return scoped_key("resume", route, principal, "run", turn.conversation_id or "", turn.run_id)
    return scoped_key("resume", route, principal, "body", hashlib.sha256(body).hexdigest())


def conversation_key(route: str, principal: str, conversation: str) -> str:
    return scoped_key("resume", route, principal, "conversation", conversation)


def last_event_id(headers: Headers) -> int | None:
    """The sequence number of the last event a reconnecting client had (`Last-Event-ID`), if it sent one (an empty
    one is none, as EventSource means it). Anything but ASCII digits is a 400: a client that had part of a reply
    must never be given a second run."""
    value = headers.get("last-event-id", "").strip()
    if not value:
        return None
    if not _EVENT_ID.fullmatch(value):
        raise MalformedRequest("Last-Event-ID must be the id of an event of this stream: up to 15 digits, 0-9")
    return int(value)


async def follow(reply: RunReply, writer: ClientWriter, after: int, keepalive: float, patience: float,
                 lost: Callable[[dict[str, str], TapeLost], bytes] | None = None) -> None:
    """Send a client a run's kept reply: the head, the pieces after `after`, then the rest as the run goes, until
    its end. The head goes out with the first piece, or once the run has been seen alive and quiet: a reply lost
    before then (its replica died) raises `TapeLost`, for the client to be told so rather than sent an empty 200.
    One lost after it ends with `lost` (given the head's headers, for the error in the reply's own wire format, and
    how it was lost), the
    client dialect's in-band error, rather than a bare end a client would
    take for a dropped connection and reconnect to forever. A reply with nothing new for `patience` seconds
    (longer than the run may be silent) is taken as lost. A client that takes nothing for `keepalive` seconds is
    dropped, as the run's own client is: it may come back."""
    start = 0
    head: Head | None = None
    waited = silent = 0.0
    while True:
        try:
            entries = await reply.read(start, ENTRY_WAIT)
            silent = 0.0 if entries else silent + ENTRY_WAIT
            if silent > patience:
                raise TapeLost("nothing new from the run for longer than it may be silent")
        except TapeLost as exc:
            if not writer.started:
                raise
            await writer.end(lost(head.headers, exc) if lost is not None and head is not None else b"")
            return
        if not entries:
            quiet = head is not None and not writer.started  # alive and quiet: the client has its head meanwhile
            if quiet and head is not None and not await _taken(writer, writer.start(head.status, head.headers),
                                                                keepalive):
                return
            waited += ENTRY_WAIT
            if waited >= keepalive and head is not None and head.keep_alive and writer.started:
                if not await _taken(writer, writer.write_keep_alive(head.keep_alive), keepalive):
                    return
                waited = 0.0
            continue
        waited = 0.0
        for seq, data, last in entries:
            if seq == 0:
                head = Head.load(data)
                continue
            if not last and seq <= after:
                continue
            if not writer.started and head is not None and \
                    not await _taken(writer, writer.start(head.status, head.headers), keepalive):
                return
            sending = writer.end(data if seq > after else b"") if last else writer.write(data)
            if not await _taken(writer, sending, keepalive) or last:
                return
        start = max(entries[-1].seq + 1, after + 1)


async def _taken(writer: ClientWriter, sending: Coroutine[Any, Any, None], stall: float) -> bool:
    """Whether the client took a piece within `stall` seconds; if not, it is dropped (it holds a stream slot and
    the run's reply for as long as it is attached)."""
    try:
        async with asyncio.timeout(stall):
            await sending
    except TimeoutError:
        if writer.drop():
            await asyncio.sleep(0)  # the server sees the connection gone before the request ends
        return False
    return True
