"""The calls `langgraph-sdk` and `@langchain/langgraph-sdk` make under a LangGraph server's URL, each read into the
request the dialect reads: a run (`request.parse_request`, its thread from the path, and what it is answered with),
or a query (`queries.read_query`, a `{"langgraph": <operation>, ...}` object)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.core.capabilities import Resource

QUERY = "langgraph"
"""The key naming a query's operation in the request the dialect reads."""


REPLY = "agent_gateway_reply"
"""The key naming what a run's request is answered with: its stream (`stream`), the `Run` at once while the run goes
on (`run`: a background run), or the thread's values at its end (`wait`). The resource sets it, whatever the client
sent under that name."""


def _run(reply: str) -> Any:
    def read(params: Mapping[str, str], body: dict[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
        run = {**body, REPLY: reply}
        if "thread_id" in params:
            run["thread_id"] = params["thread_id"]
        return run
    return read


def _query(operation: str) -> Any:
    def read(params: Mapping[str, str], body: dict[str, Any], headers: Mapping[str, str]) -> dict[str, Any]:
        asked: dict[str, Any] = {"body": body, **params, QUERY: operation}
        last = headers.get("last-event-id")
        if last is not None:
            asked["last_event_id"] = last
        return asked
    return read


RESOURCES = (
    Resource("POST", "/threads/{thread_id}/runs/stream", _run("stream")),
    Resource("POST", "/runs/stream", _run("stream")),
    Resource("POST", "/threads/{thread_id}/runs", _run("run")),
    Resource("POST", "/threads/{thread_id}/runs/wait", _run("wait")),
    Resource("POST", "/runs/wait", _run("wait")),
    Resource("POST", "/threads", _query("create_thread")),
    Resource("POST", "/threads/search", _query("search_threads")),
    Resource("GET", "/threads/{thread_id}", _query("get_thread")),
    Resource("GET", "/threads/{thread_id}/state", _query("state")),
    Resource("GET", "/threads/{thread_id}/history", _query("history")),
    Resource("POST", "/threads/{thread_id}/history", _query("history")),
    Resource("GET", "/threads/{thread_id}/runs", _query("list_runs")),
    Resource("GET", "/threads/{thread_id}/runs/{run_id}", _query("get_run")),
    Resource("GET", "/threads/{thread_id}/runs/{run_id}/stream", _query("join")),
    Resource("GET", "/threads/{thread_id}/runs/{run_id}/join", _query("join_values")),
    Resource("POST", "/threads/{thread_id}/runs/{run_id}/cancel", _query("cancel")),
    Resource("POST", "/assistants/search", _query("assistants")),
    Resource("GET", "/assistants/{assistant_id}", _query("assistant")),
    Resource("GET", "/info", _query("info")),
)
