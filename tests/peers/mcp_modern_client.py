"""Call an MCP server's tools with the official Python SDK's client in 2026-07-28 (`mcp` 2.3.0's `Client`,
`mode="auto"`: `server/discover` first, each request standing alone) and print what comes back, one JSON line each.

Runs in the mcp peer's venv (`tests/peers/requirements-mcp.txt`):

    .peers/mcp/bin/python tests/peers/mcp_modern_client.py http://127.0.0.1:8000/mcp '<plan>' [--key KEY]

The plan is a JSON list of steps, run in order with one client:
    {"list": true}                                  tools/list
    {"call": NAME, "arguments": {...}}              tools/call, with a progress callback (a progressToken)
        "elicit": [{"action": ..., "content": {...}}, ...]
                                                    what the elicitation callback answers, one a round (the SDK
                                                    drives the input_required rounds with it); without it the
                                                    client declares no elicitation capability

stdout: first {"protocolVersion", "serverInfo"}; then, for each step, {"tools": [{name, description, inputSchema}]}
or {"isError", "content": [text...], "structured", "progress": [[progress, total, message]...],
"elicited": [{message, requestedSchema}...]}; a step that raised: {"error": "<ExceptionType>: <message>"}.
Exit status 0; 1 when the client could not connect, with the error on stderr.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestParams, ElicitResult
from mcp_client import command
from mcp_client import run_step as one_step


async def run(url: str, plan: list[dict[str, Any]], key: str | None, timeout: float) -> None:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    answers: list[dict[str, Any]] = []
    elicited: list[dict[str, Any]] = []

    async def on_elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        by_link = {"mode": "url", "url": params.url} if getattr(params, "mode", None) == "url" else {}
        elicited.append({"message": params.message, "requestedSchema": getattr(params, "requested_schema", None),
                         **by_link})
        return ElicitResult(**answers.pop(0)) if answers else ElicitResult(action="cancel")

    eliciting = any("elicit" in step for step in plan)
    http = httpx2.AsyncClient(headers=headers, timeout=timeout)
    async with http, Client(streamable_http_client(url, http_client=http), mode="auto", read_timeout_seconds=timeout,
                            elicitation_callback=on_elicit if eliciting else None) as client:
        print(json.dumps({"protocolVersion": client.protocol_version,
                          "serverInfo": client.server_info.model_dump(mode="json") if client.server_info else None}),
              flush=True)
        for step in plan:
            answers[:] = step.get("elicit", [])
            elicited.clear()
            try:
                print(json.dumps(await _step(client, step, elicited)), flush=True)
            except Exception as exc:
                print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)


async def _step(client: Client, step: dict[str, Any], elicited: list[dict[str, Any]]) -> dict[str, Any]:
    """A step as `mcp_client.py` runs it; a call's line also says what the client was asked."""
    done = await one_step(client, step)
    return done if step.get("list") else {**done, "elicited": list(elicited)}


if __name__ == "__main__":
    command(run)
