"""`agent-gateway agent --dialect mcp` run as a person runs it, in its own process, for the tests that use it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from helpers import ROOT
from servers import free_port, wait_answering


@contextmanager
def agent_command(pace: float = 0.0) -> Iterator[str]:
    """The command's `/mcp` once it answers; on the way out, that it said where."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "gateway", "agent", "--dialect", "mcp", "--port", str(port),
                                "--pace", str(pace)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_answering(process, f"http://127.0.0.1:{port}/healthz", what="agent")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        _, said = process.communicate(timeout=15)
    assert f"speaking mcp at http://127.0.0.1:{port}/mcp" in said
