"""Conversations outlive a gateway process: two gateway processes share Redis, and SQLite survives a restart.

The gateways here are real `agent-gateway serve` processes; each turn of a conversation goes to a different one,
and the upstream only answers "(turn 2)" if the second gateway knew the first turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from e2e import Reply, post, request_body, user_message
from helpers import ROOT
from redis_server import RedisServer
from servers import Served, free_port

from gateway.agent.server import create_agent_app


@contextmanager
def gateway_process(config: Path) -> Iterator[str]:
    """`agent-gateway serve` on a free port, its log in a file beside the config: a pipe nobody reads fills with
    the access log of a few hundred requests, and the process stops as it writes the next line."""
    port = free_port()
    log_path = config.parent / f"gateway-{port}.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)],
            cwd=config.parent, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gateway did not start: {log_path.read_text(errors='replace')[-4000:]}")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def write_config(tmp_path: Path, store: str, agents: dict[str, str]) -> Path:
    config = tmp_path / "gateway.yaml"
    config.write_text(f"""
store:
  url: {store}
routes:
  - name: kit-to-agui
    paths: [/kit]
    client_dialects: [ag-kit]
    upstream: {{url: "{agents['ag-ui']}/agui", dialect: ag-ui}}
  - name: eval-to-kit
    paths: [/eval]
    client_dialects: [agent-respond]
    upstream: {{url: "{agents['ag-kit']}/send-message", dialect: ag-kit}}
""")
    return config


@pytest.fixture(scope="module")
def agents() -> Iterator[dict[str, str]]:
    with Served(create_agent_app("ag-ui")) as agui, Served(create_agent_app("ag-kit")) as agkit:
        yield {"ag-ui": agui.url, "ag-kit": agkit.url}


def two_turns(first: str, second: str, conversation: str) -> tuple[Reply, Reply]:
    """Turn 1 through one gateway, turn 2 through the other: a delta client, then a client with no ids."""
    with httpx.Client(timeout=20) as http:
        one = Reply("ag-kit", post(http, f"{first}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")],
                                                                      conversation)))
        two = Reply("ag-kit", post(http, f"{second}/kit", request_body("ag-kit", [user_message("ag-kit", "again")],
                                                                       conversation)))
    return one, two


def test_two_gateway_processes_sharing_redis_continue_one_conversation(tmp_path: Path,
                                                                        agents: dict[str, str]) -> None:
    with RedisServer() as redis:
        config = write_config(tmp_path, redis.url, agents)
        with gateway_process(config) as first, gateway_process(config) as second:
            one, two = two_turns(first, second, "shared-redis")
            assert "(turn 1)" in one.text and "(turn 2)" in two.text
            # An eval (no conversation ids at all) moving between replicas too.
            with httpx.Client(timeout=20) as http:
                history = [{"role": "user", "content": "hello"}]
                body = {"messages": history, "metadata": {"test_case_id": "tc-redis", "turn_index": 0}}
                reply = post(http, f"{first}/eval", body).json()["messages"]
                assert "(turn 1)" in reply[-1]["content"]
                history += [*reply, {"role": "user", "content": "and again"}]
                body = {"messages": history, "metadata": {"test_case_id": "tc-redis", "turn_index": 2}}
                assert "(turn 2)" in post(http, f"{second}/eval", body).json()["messages"][-1]["content"]


def test_sqlite_store_survives_a_gateway_restart(tmp_path: Path, agents: dict[str, str]) -> None:
    config = write_config(tmp_path, "sqlite:///conversations.db", agents)
    with gateway_process(config) as first, httpx.Client(timeout=20) as http:
        post(http, f"{first}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "restart"))
    with gateway_process(config) as second, httpx.Client(timeout=20) as http:
        reply = Reply("ag-kit", post(http, f"{second}/kit",
                                     request_body("ag-kit", [user_message("ag-kit", "again")], "restart")))
    assert "(turn 2)" in reply.text
    assert (tmp_path / "conversations.db").exists()


def test_a_redis_pause_holds_a_turn_that_needs_its_history_until_redis_answers(tmp_path: Path,
                                                                              agents: dict[str, str]) -> None:
    """A delta client (AG-Kit) in front of a full-history upstream (AG-UI): the turn waits out a 3 s pause rather
    than reach the upstream as a first turn."""
    with RedisServer() as redis:
        config = write_config(tmp_path, redis.url, agents)
        with gateway_process(config) as first, gateway_process(config) as second, httpx.Client(timeout=20) as http:
            post(http, f"{first}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "paused"))
            redis.freeze()
            thaw = threading.Timer(3.0, redis.thaw)
            thaw.start()
            try:
                two = Reply("ag-kit", post(http, f"{second}/kit",
                                           request_body("ag-kit", [user_message("ag-kit", "again")], "paused")))
            finally:
                thaw.join()
    assert "(turn 2)" in two.text, two.text


def test_a_redis_outage_refuses_a_turn_that_needs_its_history_never_answers_it_as_a_first(
        tmp_path: Path, agents: dict[str, str]) -> None:
    with RedisServer() as redis:
        config = write_config(tmp_path, redis.url, agents)
        with gateway_process(config) as gateway, httpx.Client(timeout=20) as http:
            post(http, f"{gateway}/kit", request_body("ag-kit", [user_message("ag-kit", "hi")], "outage"))
            calls = len(httpx.get(f"{agents['ag-ui']}/_requests").json())
            redis.stop()
            refused = http.post(f"{gateway}/kit", json=request_body("ag-kit", [user_message("ag-kit", "again")],
                                                                    "outage"))
    assert refused.status_code == 503 and refused.headers["retry-after"] == "5", refused.text
    assert refused.json()["error"]["code"] == "store_unavailable", refused.text
    assert "history" in refused.json()["error"]["message"]
    assert len(httpx.get(f"{agents['ag-ui']}/_requests").json()) == calls  # the upstream never heard of it


def test_an_eval_with_its_store_down_gives_a_new_upstream_conversation_the_whole_transcript(
        tmp_path: Path, agents: dict[str, str]) -> None:
    """A client with no conversation ids (agent-respond) in front of a delta upstream (AG-Kit): without the store,
    the upstream conversation is new, so it is sent every message, not only the newest."""
    with RedisServer() as redis:
        config = write_config(tmp_path, redis.url, agents)
        with gateway_process(config) as gateway, httpx.Client(timeout=20) as http:
            history = [{"role": "user", "content": "hello"}]
            body = {"messages": history, "metadata": {"test_case_id": "tc-outage", "turn_index": 0}}
            history += [*post(http, f"{gateway}/eval", body).json()["messages"], {"role": "user", "content": "more"}]
            redis.stop()
            body = {"messages": history, "metadata": {"test_case_id": "tc-outage", "turn_index": 2}}
            reply = post(http, f"{gateway}/eval", body).json()["messages"]
    assert "(turn 2)" in reply[-1]["content"], reply
