"""Call an MCP server's tools with the official Python SDK's client (`mcp` 2.3.0's `Client`, the handshake era:
`mode="legacy"`) and print what comes back, one JSON line each.

Runs in the mcp peer's venv (`tests/peers/requirements-mcp.txt`):

    .peers/mcp/bin/python tests/peers/mcp_client.py http://127.0.0.1:8000/mcp '<plan>' [--key KEY] [--timeout S]

The plan is a JSON list of steps, run in order in one session:
    {"list": true}                                  tools/list
    {"call": NAME, "arguments": {...}}              tools/call, with a progress callback (a progressToken)
        "progress": false                           without one
        "cancel_after": SECONDS                     cancelled by the client after that long (the SDK then POSTs
                                                    notifications/cancelled)
        "elicit": {"action", "content"?, "after"?}  each `elicitation/create` during the call answered so, after
                                                    `after` seconds (any step's "elicit" makes the client declare
                                                    the elicitation capability; a step without one cancels);
                                                    "fill": {field: value} instead of "content" answers only the
                                                    fields the form asks for

stdout: first {"protocolVersion", "serverInfo", "sessionId"}; then, for each step, {"tools": [{name, description,
inputSchema}]} or {"isError", "content": [text...], "structured", "progress": [[progress, total, message]...]},
or {"cancelled": true, "progress": [...]}, with "elicited": [params...] when it was asked; a step that raised:
{"error": "<ExceptionType>: <message>"}.
Exit status 0; 1 when the session could not be opened, with the error on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import httpx2
from mcp import Client, types
from mcp.client.streamable_http import streamable_http_client


async def run(url: str, plan: list[dict[str, Any]], key: str | None, timeout: float) -> None:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    http = httpx2.AsyncClient(headers=headers, timeout=timeout)
    answering: dict[str, Any] = {}
    """The step being run's "elicit", and what it was asked."""

    async def elicited(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked = params.model_dump(mode="json", by_alias=True, exclude_none=True)
        answering.setdefault("asked", []).append(asked)
        answer = answering.get("elicit") or {"action": "cancel"}
        await anyio.sleep(answer.get("after", 0))
        content = answer.get("content")
        if "fill" in answer:  # as a person fills the form: the fields it asks for
            asks = asked.get("requestedSchema", {}).get("properties", {})
            content = {field: value for field, value in answer["fill"].items() if field in asks}
        return types.ElicitResult(action=answer["action"], content=content)

    eliciting = any("elicit" in step for step in plan)
    async with http, Client(streamable_http_client(url, http_client=http), mode="legacy",
                            read_timeout_seconds=timeout,
                            elicitation_callback=elicited if eliciting else None) as client:
        print(json.dumps({"protocolVersion": client.protocol_version,
                          "serverInfo": client.server_info.model_dump(mode="json") if client.server_info else None}),
              flush=True)
        for step in plan:
            answering.clear()
            answering["elicit"] = step.get("elicit")
            try:
                done = await run_step(client, step)
                if "asked" in answering:
                    done["elicited"] = answering["asked"]
                print(json.dumps(done), flush=True)
            except Exception as exc:
                print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)


async def run_step(client: Client, step: dict[str, Any]) -> dict[str, Any]:
    if step.get("list"):
        listed = await client.list_tools()
        return {"tools": [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed.tools]}
    progress: list[list[Any]] = []

    async def on_progress(at: float, total: float | None, message: str | None) -> None:
        progress.append([at, total, message])

    callback = on_progress if step.get("progress", True) else None
    if "cancel_after" in step:
        with anyio.move_on_after(step["cancel_after"]) as scope:
            await client.call_tool(step["call"], step.get("arguments", {}), progress_callback=callback)
        return {"cancelled": scope.cancelled_caught, "progress": progress}
    result = await client.call_tool(step["call"], step.get("arguments", {}), progress_callback=callback)
    return {"isError": result.is_error, "content": [block.text for block in result.content if block.type == "text"],
            "structured": result.structured_content, "progress": progress}


def command(run: Callable[[str, list[dict[str, Any]], str | None, float], Awaitable[None]]) -> None:
    """The command line of each MCP client script here: a URL, a plan, `--key`, `--timeout`; exit 1 with the error
    on stderr when the session could not be opened."""
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("plan")
    parser.add_argument("--key")
    parser.add_argument("--timeout", type=float, default=30.0)
    options = parser.parse_args()
    try:
        anyio.run(run, options.url, json.loads(options.plan), options.key, options.timeout)
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    command(run)
