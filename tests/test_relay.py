"""`Relay` on its own: a scripted upstream response in, a recording `send` out, with the collaborators a `Call`
gives it (as httpx tests its client with a mock transport). What reaches the client, in which order, and how a
deadline, the client leaving, a client's cancel and the process stopping end the run."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
import pytest

from adapters import registry
from gateway.config import Timeouts
from gateway.conversations.mapper import ConversationMapper
from gateway.conversations.recorder import RunRecorder
from gateway.conversations.store import MemoryStore
from gateway.core.codec import Dialect
from gateway.server.operations.record import AccessRecord
from gateway.server.stream import client as client_module
from gateway.server.stream.client import ClientWriter
from gateway.server.stream.deadlines import CancelReason, Deadlines
from gateway.server.stream.relay import FIRST_FRAME_ALONE_PAST, Relay
from gateway.upstream.http1 import Offer


def frame(event: dict[str, Any]) -> bytes:
    return b"data: " + orjson.dumps(event) + b"\n\n"


START = frame({"type": "RUN_STARTED", "threadId": "upstream-thread", "runId": "upstream-run"})
TEXT = [frame({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
        frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "one "}),
        frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "two"}),
        frame({"type": "TEXT_MESSAGE_END", "messageId": "m1"})]
FINISH = frame({"type": "RUN_FINISHED", "threadId": "upstream-thread", "runId": "upstream-run"})


class ScriptedResponse:
    """An upstream's 2xx answer whose body is `chunks`, one a read; past them it ends, or, with `hang`, waits."""

    def __init__(self, chunks: list[bytes], *, hang: bool = False) -> None:
        self.status = 200
        self.headers = {"content-type": "text/event-stream"}
        self.offer: Any = None
        self.chunks = list(chunks)
        self.hang = hang

    async def read(self) -> bytes:
        await asyncio.sleep(0)
        if self.chunks:
            return self.chunks.pop(0)
        if self.hang:
            await asyncio.Event().wait()
        return b""


class Client:
    """What the client was sent, as the ASGI messages `send` got."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []

    async def send(self, message: dict[str, Any]) -> None:
        self.messages.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"] == "http.response.body")

    @property
    def ended(self) -> bool:
        last = self.messages[-1] if self.messages else {}
        return last.get("type") == "http.response.body" and not last.get("more_body", False)

    def events(self) -> list[dict[str, Any]]:
        """The stream's JSON events (an AI SDK stream's `[DONE]` left out)."""
        lines = self.body.split(b"\n")
        return [orjson.loads(line[6:]) for line in lines if line.startswith(b"data: {")]


class Run:
    """A relay built as `Call` builds one, AG-UI to AG-UI unless told, with the deadlines' timer armed."""

    def __init__(self, timeouts: Timeouts | None = None, client_dialect: str = "ag-ui") -> None:
        self.client = Client()
        self.record = AccessRecord(request_id="req-1", route="r", upstream_dialect="ag-ui")
        self.writer = ClientWriter(self.client.send, "req-1", self.record, lambda: None)  # type: ignore[arg-type]
        self.deadlines = Deadlines(timeouts or Timeouts(), 30.0, self.writer, self.record, time.monotonic())
        self.mapper = ConversationMapper(MemoryStore())
        self.dialect: Dialect = registry.get(client_dialect)
        self.upstream: Dialect = registry.get("ag-ui")

    async def relay(self) -> Relay:
        turn = self.dialect.parse_request(self.dialect.sample_request("hi", "conv-1"))
        exchange = await self.mapper.begin("r", turn, self.dialect, self.upstream)
        self.deadlines.upstream_answered = True  # as `Call` notes it, before it hands the answer to a relay
        return Relay(exchange=exchange, client_dialect=self.dialect, decoder=self.upstream.new_decoder(),
                     encoder=self.dialect.new_encoder(turn), recorder=RunRecorder(exchange.conversation.state),
                     upstream_status=200, mapper=self.mapper, record=self.record, writer=self.writer,
                     deadlines=self.deadlines)

    async def run(self, response: ScriptedResponse, *, then: Any = None) -> asyncio.Task[None]:
        """The relay in a task of its own, as the request's; `then(run)` is called once it is under way."""
        relay = await self.relay()
        task = asyncio.create_task(relay.run(response, True))
        self.deadlines.request_task = task
        self.deadlines.arm()
        if then is not None:
            while not self.record.events:
                await asyncio.sleep(0.01)
            then(self)
        try:
            await asyncio.wait_for(asyncio.shield(task), 5)
        except asyncio.CancelledError:
            pass
        finally:
            self.deadlines.disarm()
        return task


def test_the_upstreams_events_reach_the_client_in_order_and_its_stream_ends() -> None:
    run = Run()
    asyncio.run(run.run(ScriptedResponse([START, TEXT[0] + TEXT[1], TEXT[2], TEXT[3] + FINISH])))
    assert run.client.messages[0]["type"] == "http.response.start" and run.client.messages[0]["status"] == 200
    events = run.client.events()
    assert [e["type"] for e in events] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                           "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT") == "one two"
    assert run.client.ended and run.writer.complete
    assert run.record.outcome == "success" and run.record.events == 6


def test_the_client_sees_its_own_thread_id_not_the_upstreams() -> None:
    run = Run()
    asyncio.run(run.run(ScriptedResponse([START, *TEXT, FINISH])))
    assert run.client.events()[0]["threadId"] == "conv-1"


def test_the_conversation_is_stored_before_the_last_byte_goes() -> None:
    run = Run()
    order: list[str] = []
    send, finish = run.client.send, run.mapper.finish

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            order.append("last byte")
        await send(message)

    async def finishing(*args: Any) -> None:
        order.append("stored")
        await finish(*args)

    run.writer._send = sending  # type: ignore[assignment]
    run.mapper.finish = finishing  # type: ignore[method-assign]
    asyncio.run(run.run(ScriptedResponse([START, *TEXT, FINISH])))
    assert order == ["stored", "last byte"]


def test_an_idle_upstream_ends_the_run_with_a_timeout_error_in_the_clients_dialect() -> None:
    run = Run(Timeouts(idle=0.2))
    task = asyncio.run(run.run(ScriptedResponse([START, TEXT[0]], hang=True)))
    assert not task.cancelled()  # the deadline stopped the reading, not the request: the client was told why
    last = run.client.events()[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "upstream_timeout"
    assert last["message"] == "upstream sent nothing for 0.2s"
    assert run.client.ended and run.record.error == "upstream_timeout"
    assert run.deadlines.cancelled_because is None


def test_an_idle_deadline_is_told_in_the_clients_own_dialect() -> None:
    run = Run(Timeouts(idle=0.2), client_dialect="vercel")
    asyncio.run(run.run(ScriptedResponse([START, TEXT[0]], hang=True)))
    errors = [e for e in run.client.events() if e.get("type") == "error"]
    assert errors and errors[-1]["errorText"] == "upstream sent nothing for 0.2s"
    assert run.client.ended


def test_a_client_that_leaves_ends_the_exchange_with_nothing_more_sent() -> None:
    run = Run()

    def leave(run: Run) -> None:
        run.writer.gone = True
        run.deadlines.cancel_request(CancelReason.CLIENT_GONE)

    task = asyncio.run(run.run(ScriptedResponse([START, TEXT[0]], hang=True), then=leave))
    assert task.cancelled()  # the cancel goes through: the request's handler ends the exchange
    assert not run.client.ended and "RUN_ERROR" not in run.client.body.decode()


def test_a_clients_cancel_ends_the_run_as_cancelled_not_in_error() -> None:
    run = Run()
    task = asyncio.run(run.run(ScriptedResponse([START, TEXT[0]], hang=True),
                               then=lambda run: run.deadlines.cancel_request(CancelReason.CANCELLED)))
    assert not task.cancelled()
    assert [e["type"] for e in run.client.events()][-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert run.client.ended and run.record.outcome == "cancelled" and run.record.error is None


def test_shutdown_ends_the_run_in_band_with_its_own_error() -> None:
    run = Run()
    task = asyncio.run(run.run(ScriptedResponse([START, TEXT[0]], hang=True),
                               then=lambda run: run.deadlines.cancel_request(CancelReason.SHUTDOWN)))
    assert not task.cancelled()
    last = run.client.events()[-1]
    assert last["type"] == "RUN_ERROR" and last["code"] == "shutting_down"
    assert run.client.ended


def test_an_upstream_that_ends_its_body_early_ends_the_run_with_an_error() -> None:
    run = Run()
    asyncio.run(run.run(ScriptedResponse([START, TEXT[0], TEXT[1]])))
    last = run.client.events()[-1]
    assert last["type"] == "RUN_ERROR" and run.client.ended


class OfferingResponse(ScriptedResponse):
    """Offers each chunk to the reader's `offer` while it waits, as the upstream's connection does in its read
    callback (`Response.fed`); a chunk it declines is read. `taken` has what the offer took."""

    def __init__(self, chunks: list[bytes]) -> None:
        super().__init__(chunks)
        self.taken: list[bytes] = []

    async def read(self) -> bytes:
        await asyncio.sleep(0)
        while self.chunks and self.offer is not None:
            chunk = self.chunks.pop(0)
            took = self.offer(chunk)
            if took is Offer.DECLINED:
                return chunk
            self.taken.append(chunk)
            if took is Offer.TAKEN_AND_WAKE:
                return b""
        return await super().read()


class DirectWrites:
    """A server's direct writes (`DirectBody`) to the client whose `send` it is given, always ready."""

    def __init__(self, send: Any) -> None:
        self.client: Client = send.__self__

    def ready(self) -> bool:
        return True

    def write(self, body: bytes) -> None:
        self.client.messages.append({"type": "http.response.body", "body": body, "more_body": True})


def test_a_runs_first_event_is_written_from_the_upstreams_callback(monkeypatch: pytest.MonkeyPatch) -> None:
    """From the reply's head on, nothing waits for the run's task to wake: the first event's read is translated
    and written as the connection reads it, as every read after it is."""
    monkeypatch.setattr(client_module, "direct_body", DirectWrites)
    run = Run()
    response = OfferingResponse([START, TEXT[0] + TEXT[1], TEXT[2], TEXT[3] + FINISH])
    asyncio.run(run.run(response))
    assert response.taken == [START, TEXT[0] + TEXT[1], TEXT[2], TEXT[3] + FINISH]
    assert [e["type"] for e in run.client.events()] == ["RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
                                                       "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert run.client.ended and run.record.events == 6 and run.record.ttfe_ms is not None


@pytest.mark.parametrize("direct", [True, False], ids=["in-the-callback", "by-the-task"])
def test_a_first_read_with_much_after_its_first_frame_sends_that_frame_alone(
        direct: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if direct:
        monkeypatch.setattr(client_module, "direct_body", DirectWrites)
    run = Run()
    many = b"".join(frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": f"word {i} "})
                    for i in range(FIRST_FRAME_ALONE_PAST // 40))
    first = START + TEXT[0] + many
    asyncio.run(run.run((OfferingResponse if direct else ScriptedResponse)([first, TEXT[3] + FINISH])))
    bodies = [m["body"] for m in run.client.messages if m["type"] == "http.response.body"]
    assert [e["type"] for e in _events(bodies[0])] == ["RUN_STARTED"]
    assert [e["type"] for e in _events(bodies[1])][:2] == ["TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT"]
    assert len(run.client.events()) == 4 + FIRST_FRAME_ALONE_PAST // 40


def _events(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: {")]


def test_nothing_of_a_read_is_held_while_the_next_is_awaited() -> None:
    """A paced run waits for its next read most of its life: the last read and the client's bytes for it are not
    kept alive meanwhile."""
    held: dict[str, Any] = {}

    def look(run: Run) -> None:
        coroutine: Any = run.deadlines.request_task.get_coro()  # type: ignore[union-attr]
        while coroutine is not None and coroutine.__qualname__ != "Relay._stream":
            coroutine = getattr(coroutine, "cr_await", None)
        held.update(coroutine.cr_frame.f_locals)
        run.deadlines.cancel_request(CancelReason.CANCELLED)

    asyncio.run(Run().run(ScriptedResponse([START, TEXT[0] + TEXT[1]], hang=True), then=look))
    assert held["chunk"] == held["out"] == b""
