"""Stopping: a real `agent-gateway serve` process, a real signal, and clients in the middle of their streams."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import orjson
import pytest
from e2e import request_body, user_message
from redis_server import RedisServer
from servers import Served, free_port

from gateway.agent.server import create_agent_app

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def agent() -> Iterator[Served]:
    """The built-in AG-Kit agent, 0.05 s between events: "slow please" is a run of about a second."""
    with Served(create_agent_app("ag-kit", pace=0.05)) as served:
        yield served


@contextmanager
def serving(tmp_path: Path, agent: Served, *, drain: float, workers: int = 1, store: str | None = None,
            resumable: bool = False) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    port = free_port()
    config = tmp_path / f"gateway-{port}.yaml"
    store = store or (f"sqlite:///{tmp_path}/gateway.db" if workers > 1 else "memory://")
    config.write_text(orjson.dumps({"drain_seconds": drain, "store": {"url": store}, "routes": [
        {"paths": ["/agui"], "client_dialects": ["ag-ui"], "resumable": resumable,
         "upstream": {"url": agent.url + "/send-message", "dialect": "ag-kit"}}]}).decode())
    log = (tmp_path / "gateway.log").open("ab")
    process = subprocess.Popen([sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port),
                                "--workers", str(workers), "--log-format", "human"],
                               cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, (tmp_path / "gateway.log").read_text()
            time.sleep(0.05)
        yield url, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        log.close()


class Stream:
    """A client reading one AG-UI stream to its end, in a thread; `started` is set at its first event."""

    def __init__(self, url: str, text: str) -> None:
        self.body = b""
        self.started = threading.Event()
        self.error: BaseException | None = None
        payload = self.payload = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", text)]))
        self.thread = threading.Thread(target=self._read, args=(url, payload), daemon=True)
        self.thread.start()
        assert self.started.wait(10), "the stream did not start"

    def _read(self, url: str, payload: bytes) -> None:
        try:
            with httpx.stream("POST", f"{url}/agui", content=payload, timeout=30,
                              headers={"content-type": "application/json"}) as response:
                for chunk in response.iter_raw():
                    self.body += chunk
                    if b"TEXT_MESSAGE_CONTENT" in self.body:
                        self.started.set()
        except BaseException as exc:
            self.error = exc
        self.started.set()

    def finished(self) -> bytes:
        self.thread.join(30)
        assert self.error is None, f"the stream was cut: {self.error!r}; it had {self.body[-300:]!r}"
        return self.body


def stopped(process: subprocess.Popen[bytes], within: float) -> int:
    try:
        return process.wait(within)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"the gateway was still running {within:g}s after it was told to stop") from None


def test_sigterm_lets_the_streams_in_flight_finish_then_exits_0(tmp_path: Path, agent: Served) -> None:
    with serving(tmp_path, agent, drain=10) as (url, process):
        stream = Stream(url, "slow please")
        process.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        with pytest.raises(httpx.ConnectError):  # no new connection: a balancer's probe fails, it stops sending
            httpx.get(f"{url}/readyz", timeout=2)
        body = stream.finished()
        assert stopped(process, 5) == 0
    log = (tmp_path / "gateway.log").read_text()
    assert b"tick 20." in body and b"RUN_FINISHED" in body
    assert "draining 1 stream: it may run 10s more; another SIGTERM ends it now" in log and "Traceback" not in log


def test_a_stream_still_running_when_the_drain_ends_is_ended_in_band(tmp_path: Path, agent: Served) -> None:
    with serving(tmp_path, agent, drain=0.5) as (url, process):
        stream = Stream(url, "hang on")
        process.send_signal(signal.SIGTERM)
        body = stream.finished()
        assert stopped(process, 5) == 0
    last = orjson.loads(body.rstrip().rsplit(b"data: ", 1)[1])
    assert last["type"] == "RUN_ERROR" and last["code"] == "shutting_down" and "shutting down" in last["message"]
    assert "Traceback" not in (tmp_path / "gateway.log").read_text()


def test_a_second_ctrl_c_ends_the_streams_at_once(tmp_path: Path, agent: Served) -> None:
    with serving(tmp_path, agent, drain=60) as (url, process):
        stream = Stream(url, "hang on")
        process.send_signal(signal.SIGINT)
        time.sleep(0.5)
        assert process.poll() is None  # draining: the stream may run for a minute yet
        process.send_signal(signal.SIGINT)
        body = stream.finished()
        assert stopped(process, 5) == 0
    assert b'"code":"shutting_down"' in body
    log = (tmp_path / "gateway.log").read_text()
    assert "draining 1 stream: it may run 60s more; a second Ctrl-C ends it now" in log and "Traceback" not in log


def test_workers_drain_too(tmp_path: Path, agent: Served) -> None:
    with serving(tmp_path, agent, drain=10, workers=2) as (url, process):
        stream = Stream(url, "slow please")
        process.send_signal(signal.SIGTERM)
        body = stream.finished()
        assert stopped(process, 10) == 0
    log = (tmp_path / "gateway.log").read_text()
    assert b"tick 20." in body and b"RUN_FINISHED" in body and "Traceback" not in log
    drains = [line for line in log.splitlines() if "draining" in line]
    workers = {line.rpartition(" worker=")[2] for line in drains if " worker=" in line}
    assert len(drains) == 2 and len(workers) == 2, drains  # each worker's line says which worker it is
    assert any("draining 1 stream: it may run 10s more" in line for line in drains), drains


def test_a_resumable_run_ended_by_the_drain_is_read_whole_from_another_replica(tmp_path: Path, agent: Served
                                                                               ) -> None:
    with RedisServer() as redis, \
            serving(tmp_path, agent, drain=0.5, store=redis.url, resumable=True) as (stopping, process), \
            serving(tmp_path, agent, drain=0.5, store=redis.url, resumable=True) as (staying, _):
        stream = Stream(stopping, "hang on")
        process.send_signal(signal.SIGTERM)
        body = stream.finished()
        assert stopped(process, 5) == 0
        first_id = body.split(b"id: ", 2)[1].split(b"\n", 1)[0]
        rest = httpx.post(f"{staying}/agui", content=stream.payload, timeout=10,
                          headers={"content-type": "application/json", "last-event-id": first_id.decode()})
    assert rest.status_code == 200 and b'"code":"shutting_down"' in rest.content
    assert body.endswith(rest.content)  # the same reply, from after the first event
