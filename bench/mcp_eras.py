"""What remembering an MCP upstream's era saves a new conversation: its first turn's median time, the era asked
each time (`server/discover` first) against remembered (`adapters/mcp/eras.py`).

    .venv/bin/python bench/mcp_eras.py              # 100 turns each way, interleaved, against each era
    .venv/bin/python bench/mcp_eras.py --calls 300

What it starts (on 127.0.0.1, stopped at the end): the real MCPServer of the tests (`tests/peers/mcp_server.py`, in
the mcp peer's venv: `.venv/bin/python tests/peers_env.py` installs it) and a gateway in this process, with one
AG-UI route to its `oneshot` tool as a server of both eras (`/mcp`: spoken to in 2026-07-28) and one as a server of
the 2025 protocol only (`/legacy/mcp`). Each call is a new conversation; the era is forgotten before every other
call, so the two ways alternate and share whatever else the machine is doing.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for _path in (ROOT, ROOT / "tests"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import httpx  # noqa: E402
from e2e import post, request_body, user_message  # noqa: E402
from peers_env import mcp_upstream  # noqa: E402
from servers import Served  # noqa: E402

from adapters.mcp.eras import KNOWN  # noqa: E402
from gateway.config import GatewayConfig  # noqa: E402
from gateway.conversations.store import MemoryStore  # noqa: E402
from gateway.server.app import create_app  # noqa: E402

ERAS = {"2026-07-28 (dual-era server)": "/mcp", "2025 only": "/legacy/mcp"}
WARM_UP = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100, help="turns each way, against each era")
    args = parser.parse_args(argv)
    with mcp_upstream() as server:
        routes = [{"name": f"era{n}", "paths": [f"/era{n}/in"], "client_dialects": ["ag-ui"],
                   "upstream": {"url": f"{server}{path}", "dialect": "mcp", "agent": "oneshot"}}
                  for n, path in enumerate(ERAS.values())]
        config = GatewayConfig.model_validate({"routes": routes})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=30) as http:
            for n, (era, path) in enumerate(ERAS.items()):
                times: dict[str, list[float]] = {"asked": [], "remembered": []}
                for call in range(args.calls + WARM_UP):
                    for way in times:
                        if way == "asked":
                            KNOWN.forget(f"{server}{path}")
                        body = request_body("ag-ui", [user_message("ag-ui", "hi")], f"{way}-{call}")
                        started = time.perf_counter()
                        answered = post(http, f"{gateway.url}/era{n}/in", body)
                        took = (time.perf_counter() - started) * 1000
                        if answered.status_code != 200 or b"heard: hi" not in answered.content:
                            print(f"{era}: the turn failed: {answered.status_code} {answered.text[:300]}")
                            return 1
                        if call >= WARM_UP:
                            times[way].append(took)
                asked, kept = statistics.median(times["asked"]), statistics.median(times["remembered"])
                print(f"{era}: era asked {asked:.2f} ms, remembered {kept:.2f} ms (medians of {args.calls}): "
                      f"saves {asked - kept:.2f} ms ({(asked - kept) / asked:.0%}) a new conversation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
