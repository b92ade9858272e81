"""A run's end, once its terminal event is translated: its outcome recorded, an upstream that may run on told to
stop, the conversation stored, and only then the client's last byte."""

from __future__ import annotations

from collections.abc import Callable

from gateway.conversations.mapper import ConversationMapper, Exchange
from gateway.conversations.recorder import RunRecorder
from gateway.core.capabilities import ClientHistory
from gateway.core.codec import Dialect, Encoder
from gateway.core.errors import ErrorCode
from gateway.core.events import RunError, RunFinished
from gateway.core.turn import Message as TurnMessage
from gateway.runs.watched import WatchedRun
from gateway.server.operations.record import AccessRecord, RequestOutcome
from gateway.server.stream.client import ClientWriter
from gateway.server.stream.deadlines import Deadlines


class RunEnd:
    """Ends one run: what `Relay` does with the run's terminal event."""

    __slots__ = ("_abandon", "_client_dialect", "_deadlines", "_encoder", "_exchange", "_mapper", "_record",
                 "_recorder", "_streams", "_watched", "_writer")

    def __init__(self, *, exchange: Exchange, client_dialect: Dialect, encoder: Encoder, recorder: RunRecorder,
                 mapper: ConversationMapper, record: AccessRecord, writer: ClientWriter, deadlines: Deadlines,
                 watched: WatchedRun | None, abandon: Callable[[], None] | None) -> None:
        self._exchange = exchange
        self._client_dialect = client_dialect
        self._encoder = encoder
        self._streams = encoder.streams
        self._recorder = recorder
        self._mapper = mapper
        self._record = record
        self._writer = writer
        self._deadlines = deadlines
        self._watched = watched
        """The run's feed, when its clients may ask about it: what the run did is kept on it."""
        self._abandon = abandon
        """Tells the upstream to stop a run the gateway ended itself (see `Decoder.cancel_request`)."""

    def close(self) -> None:
        """See `Relay.close`."""
        self._abandon = None

    async def finish(self, out: bytes, terminal: RunFinished | RunError) -> None:
        """The run's last bytes, `out`, sent once the conversation is stored."""
        record = self._record
        if isinstance(terminal, RunError):
            record.failed(terminal.code or ErrorCode.UPSTREAM_ERROR)
            if self._abandon is not None:  # ended here (a deadline, a limit)? the upstream may run on: stop it
                self._abandon()
        else:
            record.outcome = RequestOutcome(terminal.outcome)
        # Stored before the last byte goes out: a client may send its next turn the moment it has it. From here
        # on nothing cancels the request: a client that left meanwhile does not cost the conversation its turn.
        deadlines = self._deadlines
        deadlines.begin_storing()
        await self._store_conversation(out, terminal)
        deadlines.end_storing()
        if self._streams:
            await self._writer.end(out)
        else:
            await self._writer.respond(self._encoder.status_code, self._encoder.headers, out)

    async def _store_conversation(self, body: bytes, terminal: RunFinished | RunError) -> None:
        """What the run added to the conversation; for a client without conversation ids, the whole transcript as
        it will send it back next turn."""
        exchange, recorder = self._exchange, self._recorder
        transcript: list[TurnMessage] | None = None
        client_turn = exchange.client_turn
        if client_turn.conversation_id is None and (not client_turn.chains_runs or client_turn.history == "full"):
            transcript = client_turn.messages + _reply_as_client_sees_it(self._client_dialect, self._encoder, body,
                                                                         recorder)
        await self._mapper.finish(exchange, recorder, transcript)
        if self._watched is not None:  # its clients ask about runs: keep what this one did
            await self._watched.finish("error" if isinstance(terminal, RunError) else terminal.outcome,
                                       tools_left=bool(recorder.pending_tools))
        if exchange.history_lost:  # the turn went on without the store: the operator should see it per request
            self._record.history = "unavailable"
        elif recorder.overflowed:
            self._record.history = "reply_left_out"


def _reply_as_client_sees_it(client: Dialect, encoder: Encoder | None, body: bytes,
                             recorder: RunRecorder) -> list[TurnMessage]:
    """The run's messages as a client without conversation ids will send them back next turn: for a one-body
    reply, exactly the messages it got, if its dialect can read them."""
    kept = client.capability(ClientHistory)
    if kept is None:
        return recorder.close()
    if encoder is not None and kept.from_reply is not None:
        messages = kept.from_reply(body)
        if messages is not None:
            return messages
    return kept.from_run(recorder.close()) if kept.from_run is not None else recorder.close()
