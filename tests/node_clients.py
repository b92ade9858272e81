"""Validate gateway output with the real JavaScript clients.

The Node scripts in ``tests/clients/`` run ``@ag-ui/client`` 1.0.0 and the Vercel
``ai`` package (7.0.173 plus the strict 6.0.230) over recorded SSE bodies. Every call
batches all streams into a single ``node`` process.

Install once with ``npm ci --prefix tests/clients``. When the install is missing the
helpers raise ``RuntimeError`` rather than letting tests skip silently.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any, TypedDict, cast

CLIENTS_DIR = Path(__file__).resolve().parent / "clients"
TIMEOUT_S = 120.0
_REQUIRED_PACKAGES = ("@ag-ui/client", "ai", "ai-strict", "rxjs")
_INSTALL_HINT = "run `npm ci --prefix tests/clients` (Node >= 20) from the repo root"


class AguiResult(TypedDict):
    """Outcome of one AG-UI stream."""

    ok: bool  # no error and no console.warn from the client
    error: str | None
    warnings: list[str]
    types: list[str]  # event types after the client's operator chain
    messages: list[dict[str, Any]]  # the agent's messages after the run (reducer)
    state: Any


class VercelResult(TypedDict):
    """Outcome of one Vercel UI message stream."""

    ok: bool  # ai 7 and strict ai 6 accept schema + state machine (in-band error ok)
    error: str | None  # ai 7.0.173
    strict_error: str | None  # ai 6.0.230 (strict schemas: unknown keys rejected)
    in_band_error: str | None  # errorText of an in-band {"type": "error"} chunk
    done: bool  # body ends with "data: [DONE]\n\n"
    message: dict[str, Any] | None  # final UIMessage
    types: list[str]  # chunk types


def _node() -> str | None:
    return shutil.which("node")


def node_clients_available() -> bool:
    """Return whether ``node`` is on PATH and the client packages are installed."""
    modules = CLIENTS_DIR / "node_modules"
    return _node() is not None and all(
        (modules / pkg / "package.json").is_file() for pkg in _REQUIRED_PACKAGES
    )


def _run(script: str, streams: dict[str, bytes]) -> dict[str, Any]:
    node = _node()
    if node is None:
        msg = f"`node` not found on PATH; install Node >= 20, then {_INSTALL_HINT}"
        raise RuntimeError(msg)
    if not node_clients_available():
        msg = f"JS client validators missing in {CLIENTS_DIR}: {_INSTALL_HINT}"
        raise RuntimeError(msg)
    if not streams:
        return {}
    payload = []
    for name, body in streams.items():
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            msg = f"stream {name!r} is not valid UTF-8: {exc}"
            raise ValueError(msg) from exc
        payload.append({"name": name, "sse": text})
    try:
        proc = subprocess.run(
            [node, script],
            input=json.dumps(payload).encode(),
            cwd=CLIENTS_DIR,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        msg = f"{script} timed out after {TIMEOUT_S:.0f} s"
        raise RuntimeError(msg) from exc
    if proc.returncode != 0:
        stderr = proc.stderr.decode(errors="replace").strip()
        msg = f"{script} exited with {proc.returncode}:\n{stderr}"
        raise RuntimeError(msg)
    result = cast(dict[str, Any], json.loads(proc.stdout))
    if result.keys() != streams.keys():
        msg = f"{script} answered for {sorted(result)}, expected {sorted(streams)}"
        raise RuntimeError(msg)
    return result


def verify_agui(streams: dict[str, bytes]) -> dict[str, AguiResult]:
    """Run each AG-UI SSE body through ``@ag-ui/client``'s own pipeline.

    All streams go to a single node process.
    """
    return cast(dict[str, AguiResult], _run("verify-agui.mjs", streams))


def verify_vercel(streams: dict[str, bytes]) -> dict[str, VercelResult]:
    """Run each UI message stream body through ``ai`` 7.0.173 and strict 6.0.230.

    All streams go to a single node process.
    """
    return cast(dict[str, VercelResult], _run("verify-vercel.mjs", streams))
