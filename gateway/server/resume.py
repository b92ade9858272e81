"""Resumable routes: which run a request is (so that a retry attaches to it), and a kept reply sent to a client
that comes back.

A retry is matched by its key, scoped to the route and the caller:
- the client's `Idempotency-Key` header, when it sends one;
- else, for a dialect whose clients name their runs (AG-UI), the conversation and run ids;
- else the SHA-256 of the request body: the same request, byte for byte.
"""

from __future__ import annotations

import hashlib

from starlette.datastructures import Headers

from gateway.conversations.store import scoped_key
from gateway.core.codec import Dialect
from gateway.core.turn import Turn
from gateway.runs.tape import Head, RunReply, TapeLost
from gateway.server.client import ClientWriter

ENTRY_WAIT = 1.0
"""Seconds a follower waits for the next entry before it looks again (and sends a keep-alive when one is due)."""


NOT_KEPT = "the run's reply is no longer kept: start a new run"


def run_key(route: str, principal: str, client: Dialect, turn: Turn, headers: Headers, body: bytes) -> str:
    if idempotency_key := headers.get("idempotency-key"):
        return scoped_key("resume", route, principal, "idempotency-key", idempotency_key)
    if client.event_ids and turn.run_id:
        return scoped_key("resume", route, principal, "run", turn.conversation_id or "", turn.run_id)
    return scoped_key("resume", route, principal, "body", hashlib.sha256(body).hexdigest())


def conversation_key(route: str, principal: str, conversation: str) -> str:
    return scoped_key("resume", route, principal, "conversation", conversation)


def last_event_id(headers: Headers) -> int | None:
    """The sequence number of the last event a reconnecting client had (`Last-Event-ID`), if it sent one."""
    value = headers.get("last-event-id", "").strip()
    return int(value) if value.isdigit() and len(value) < 12 else None


async def follow(reply: RunReply, writer: ClientWriter, after: int, keepalive: float, patience: float) -> None:
    """Send a client a run's kept reply: the head, the pieces after `after`, then the rest as the run goes, until
    its end. Raises `TapeLost` if the reply is lost before the head went out; after it, the stream just ends. A
    reply with nothing new for `patience` seconds (longer than the run may be silent) is taken as lost."""
    start = 0
    head: Head | None = None
    waited = silent = 0.0
    while True:
        try:
            entries = await reply.read(start, ENTRY_WAIT)
            silent = 0.0 if entries else silent + ENTRY_WAIT
            if silent > patience:
                raise TapeLost("nothing new from the run for longer than it may be silent")
        except TapeLost:
            if not writer.started:
                raise
            await writer.end(b"")  # no terminator: the client sees a stream cut short, and may come back
            return
        if not entries:
            waited += ENTRY_WAIT
            if waited >= keepalive and head is not None and head.keep_alive and writer.started:
                await writer.write_keep_alive(head.keep_alive)
                waited = 0.0
            continue
        waited = 0.0
        for seq, data, last in entries:
            if seq == 0:
                head = Head.load(data)
                await writer.start(head.status, head.headers)
            elif last:
                await writer.end(data if seq > after else b"")
                return
            elif seq > after:
                await writer.write(data)
        start = max(entries[-1].seq + 1, after + 1)
