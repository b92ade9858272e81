"""How a request's body is read against its deadline: a stalled body is a 408, a cancel from elsewhere stays one."""

from __future__ import annotations

import asyncio

import pytest
from starlette.types import Message

from gateway.config import GatewayConfig
from gateway.core.errors import RequestTimeout
from gateway.server.connections.bodies import BodyBudget
from gateway.server.request.reading import RequestReader


def _reader(patience: float) -> RequestReader:
    config = GatewayConfig.model_validate({"routes": [{
        "name": "r", "paths": ["/r"], "client_dialects": ["ag-ui"], "timeouts": {"request_body": patience},
        "upstream": {"url": "http://127.0.0.1:9/x", "dialect": "ag-ui"}}]})
    return RequestReader(config.routes[0], BodyBudget(1 << 20))


async def _never() -> Message:
    await asyncio.Event().wait()
    raise AssertionError("unreachable")


def test_a_body_that_stalls_past_its_deadline_is_a_request_timeout_and_the_task_can_go_on() -> None:
    async def read() -> int:
        with pytest.raises(RequestTimeout, match="did not arrive in time: 0 bytes"):
            await _reader(0.05).body(_never)
        task = asyncio.current_task()
        assert task is not None
        await asyncio.sleep(0)  # no cancel of the timeout's is left over for the task's next wait
        return task.cancelling()

    assert asyncio.run(asyncio.wait_for(read(), 5)) == 0


def test_a_cancel_from_elsewhere_while_the_body_is_read_stays_a_cancel() -> None:
    async def read() -> None:
        reading = asyncio.ensure_future(_reader(5).body(_never))
        await asyncio.sleep(0.01)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading

    asyncio.run(asyncio.wait_for(read(), 5))


def test_a_body_in_pieces_is_read_whole() -> None:
    pieces = [{"type": "http.request", "body": b'{"a":', "more_body": True},
              {"type": "http.request", "body": b" 1}", "more_body": False}]

    async def receive() -> Message:
        return pieces.pop(0)

    assert asyncio.run(_reader(5).body(receive)) == b'{"a": 1}'
