"""Both official MCP clients behind one function: `mcp` 2.3.0's Python `Client` (`tests/peers/mcp_client.py`, in
the mcp peer's venv) and `@modelcontextprotocol/sdk` 1.32.2's TypeScript `Client` (`tests/clients/mcp-run.mjs`)
take the same plan and print the same lines, so a test runs its plan with each and reads the outcomes one way.
Install first: `.venv/bin/python tests/peers_env.py` and `npm ci --prefix tests/clients`.
"""

from __future__ import annotations

from typing import Any

from node_clients import run_mcp
from peers_env import McpClientRun, run_mcp_client

SDKS = {"python": "mcp 2.3.0 Client", "typescript": "@modelcontextprotocol/sdk 1.32.2 Client"}
"""Each official client, by the name a test parameter gives it, with what it is."""


def run_sdk(sdk: str, url: str, plan: list[dict[str, Any]], *, key: str | None = None,
            timeout: float = 30.0) -> McpClientRun:
    """Run `plan` (the steps `tests/peers/mcp_client.py` documents) in one session of `sdk`'s client at `url`, one
    process for the whole plan; `timeout` bounds each request."""
    if sdk == "python":
        return run_mcp_client(url, plan, key=key, timeout=timeout)
    run = run_mcp(url, plan, key=key, timeout_s=timeout)
    assert run["terminated"] in (True, None), run  # its DELETE was answered
    return McpClientRun(run["opened"], run["steps"], run["error"])
