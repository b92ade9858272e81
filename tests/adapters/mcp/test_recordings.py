"""A tool call through the gateway's `/mcp`, made by the official Python client (`mcp` 2.3.0), is a run like any
other: listed in the inspector with its route and dialects, recorded to the route's folder (and downloadable from
the inspector as a recording), judged offline by `check --recording`, and replayed as the agent to the same answer.
Install first: `.venv/bin/python tests/peers_env.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from peers_env import run_mcp_client
from servers import Served

from adapters.mcp.wire import messages_in
from gateway.agent.server import create_agent_app
from gateway.cli import main
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.recordings.exchange import Recorded, parse, read
from gateway.recordings.replay import ReplayApp
from gateway.server.app import create_app

KEY = "the-inspectors-own-key-0123"
AUTH = {"authorization": f"Bearer {KEY}"}
ASKED = "What is the weather in Paris?"


def route(upstream: str, **options: Any) -> dict[str, Any]:
    return {"name": "helper", "paths": ["/helper"], "client_dialects": ["mcp"],
            "upstream": {"url": f"{upstream}/agui", "dialect": "ag-ui"}, **options}


def call(gateway: str) -> dict[str, Any]:
    """The SDK client's session: the tools listed (no run), then one call of `helper`."""
    run = run_mcp_client(f"{gateway}/mcp", [{"list": True}, {"call": "helper", "arguments": {"message": ASKED}}])
    assert run.error is None, run.error
    listed, called = run.steps
    assert [tool["name"] for tool in listed["tools"]] == ["helper"]
    assert called["isError"] is False, called
    return dict(called)


@dataclass
class FirstCall:
    """What the client got the first time, what the inspector showed of it, and the recordings made."""

    called: dict[str, Any]
    runs: list[dict[str, Any]]
    shown: dict[str, Any]
    downloaded: bytes
    folder: Path


@pytest.fixture(scope="module")
def first(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FirstCall]:
    folder = tmp_path_factory.mktemp("mcp-recordings")
    with Served(create_agent_app("ag-ui", test_hooks=False)) as agent:
        config = GatewayConfig.model_validate({
            "routes": [route(agent.url, record={"dir": str(folder)}, inspector_bodies=True)],
            "store": {"url": "memory://"}, "inspector": {"key": KEY, "capture": "always"}})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=10) as http:
            called = call(gateway.url)
            runs = http.get(f"{gateway.url}/_inspector/api/runs", headers=AUTH).json()["runs"]
            shown = http.get(f"{gateway.url}/_inspector/api/runs/{runs[0]['id']}", headers=AUTH).json()
            downloaded = http.get(f"{gateway.url}/_inspector/api/runs/{runs[0]['id']}/recording", headers=AUTH)
            assert downloaded.status_code == 200
            yield FirstCall(called, runs, shown, downloaded.content, folder)


def recordings(folder: Path) -> list[Recorded]:
    return read(sorted(folder.glob("*.jsonl")))


def test_a_tool_call_through_mcp_is_one_run_in_the_inspector(first: FirstCall) -> None:
    [run] = first.runs  # initialize and tools/list are the endpoint's own answers, not runs
    assert (run["route"], run["path"], run["client_dialect"], run["upstream_dialect"]) == ("helper", "/mcp", "mcp",
                                                                                          "ag-ui")
    assert (run["status"], run["outcome"]) == (200, "success")
    assert run["conversation_id"] == first.called["structured"]["conversation_id"]
    request = first.shown["client_request"]["body"]
    assert (request["method"], request["params"]["arguments"]) == ("tools/call", {"message": ASKED})


def test_the_route_records_the_call_with_what_the_client_was_sent(first: FirstCall) -> None:
    [exchange] = recordings(first.folder)
    assert (exchange.client_dialect, exchange.upstream_dialect) == ("mcp", "ag-ui")
    assert orjson.loads(exchange.client_body)["params"]["arguments"] == {"message": ASKED}
    *progress, answer = messages_in(exchange.client_response.body, "text/event-stream")
    assert progress and all(message["method"] == "notifications/progress" for message in progress)
    assert [block["text"] for block in answer["result"]["content"]] == first.called["content"]
    assert exchange.raw["route"] == "helper"


def test_the_inspectors_download_is_the_same_recording(first: FirstCall) -> None:
    [exchange] = recordings(first.folder)
    downloaded = parse(first.downloaded.strip(), "the inspector's recording")
    assert downloaded.client_response.body == exchange.client_response.body
    assert downloaded.upstream_response.body == exchange.upstream_response.body


def test_check_recording_judges_the_mcp_answer_by_mcps_rules(first: FirstCall,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    [path] = sorted(first.folder.glob("*.jsonl"))
    code = main(["check", "--recording", str(path), "--json"])
    report = orjson.loads(capsys.readouterr().out)
    assert code == 0, report
    assert (report["pass"], report["fail"]) == (2, 0), report
    judged = [(result["side"], result["dialect"], result["outcome"]) for result in report["results"]]
    assert judged == [("upstream", "ag-ui", "pass"), ("client", "mcp", "pass")]


def test_the_recording_replays_as_the_agent_to_the_same_answer(first: FirstCall) -> None:
    with Served(ReplayApp(recordings(first.folder), speed=None)) as replay:
        config = GatewayConfig.model_validate({"routes": [route(replay.url)], "store": {"url": "memory://"}})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            again = call(gateway.url)
    assert again["content"] == first.called["content"]
    assert again["structured"]["toolCalls"] == first.called["structured"]["toolCalls"]
    assert [message for _, _, message in again["progress"]][-1] == again["content"][0]
