"""Conversations outlive a gateway process: two gateway processes share Redis, and SQLite survives a restart.

The gateways here are real `agent-gateway serve` processes; each turn of a conversation goes to a different one,
and the upstream only answers "(turn 2)" if the second gateway knew the first turn.
"""

from __future__ import annotations

import os
import subprocess
import sys
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
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway", "serve", "--config", str(config), "--port", str(port)],
        cwd=config.parent, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
                raise RuntimeError(f"gateway did not start: {process.stderr.read().decode() if process.stderr else ''}")
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr:
            process.stderr.close()


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
