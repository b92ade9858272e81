"""Real third-party agents the tests run as upstreams, each from its own venv under `.peers/<name>/`.

Their pins conflict with the gateway's and with each other's, so each peer gets a venv of its own, installed from a
fully pinned requirements file in `tests/peers/` and started as a subprocess (uvicorn on 127.0.0.1, a free port):

    pydantic   pydantic-ai's `AGUIAdapter` and `VercelAIAdapter` (`tests/peers/pydantic_agent.py`)
    agkit      `cloudbase-agent-server` 0.1.1, AG-Kit's send-message dialect (`tests/peers/agkit_agent.py`)
    agkit-agui `cloudbase-agent-server` 0.1.22, AG-UI over `/send-message` (`tests/peers/agkit_agui_agent.py`)
    a2a        `a2a-sdk[http-server,signing]` 1.3.0, the official A2A SDK, JSON-RPC, HTTP+JSON and gRPC
               (grpcio), 1.0 and 0.3 (`tests/peers/a2a_agent.py`); its client too (`tests/peers/a2a_client.py`,
               see `run_a2a_client`), and its card verifier (`tests/peers/a2a_card_check.py`, see `check_a2a_card`)
    langgraph  `langgraph dev` (`langgraph-cli[inmem]` 0.4.40, langgraph-api 0.16.7) serving a scripted graph
               (`tests/peers/langgraph/`); `langgraph-sdk` 0.4.14's client too (`tests/peers/langgraph_client.py`)
    mcp        `mcp` 2.3.0, the official MCP Python SDK: an MCPServer over streamable HTTP (`tests/peers/mcp_server.py`)
    litellm    LiteLLM's proxy 1.108.7, an OpenAI-compatible server answering with mock responses
               (`tests/peers/litellm_proxy.py`, `litellm_config.yaml`)

    python tests/peers_env.py            install the venvs (skipped when a venv matches its requirements file)
    python tests/peers_env.py --relock   re-resolve the top-level pins below and rewrite the requirements files
    python tests/peers_env.py --relock a2a   the same for the peers named only

In a test:

    with pydantic_upstream() as url:     # http://127.0.0.1:<port>; /ag-ui, /vercel, /healthz
        ...
    with agkit_upstream() as url:        # /send-message, /healthz
        ...
    with agkit_agui_upstream() as url:   # /send-message (AG-UI), /healthz
        ...
    with a2a_upstream() as url:          # the card, JSON-RPC at /, HTTP+JSON, the same under /plain; /healthz
    with langgraph_upstream() as url:    # a LangGraph server: /assistants, /threads, /runs; /ok
    with mcp_upstream() as url:          # an MCP server's tools at /mcp; /counts, POST /forget
        run = run_a2a_client(url, "hello")   # a2a-sdk's client, in the peer's venv: run.responses, run.error
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from following import Following

ROOT = Path(__file__).resolve().parent.parent
PEERS_DIR = ROOT / "tests" / "peers"
VENVS_DIR = ROOT / ".peers"
START_TIMEOUT = 60.0  # seconds for a peer to import, bind and answer /healthz
STOP_TIMEOUT = 5.0  # seconds between SIGTERM and SIGKILL
INSTALLS_AT_ONCE = 3
# Variables that would make a peer's interpreter see something other than its own venv, or move its routes
# (cloudbase-agent-server serves under /v1/aibot/bots when TENCENTCLOUD_RUNENV=SCF).
SCRUBBED_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "TENCENTCLOUD_RUNENV")
# `python -m uvicorn`, but on Linux the peer first asks for SIGTERM when its parent dies (PR_SET_PDEATHSIG), so a
# test process killed before its `finally` leaves no server behind. Done in the peer, not in a preexec_fn, which is
# unsafe in a threaded parent.
LAUNCHER = ("import ctypes, runpy, signal, sys\n"
            "if sys.platform == 'linux': ctypes.CDLL(None).prctl(1, signal.SIGTERM)\n"
            "sys.argv[0] = 'uvicorn'\n"
            "runpy.run_module('uvicorn', run_name='__main__', alter_sys=True)\n")


@dataclass(frozen=True)
class Peer:
    name: str
    """The venv's folder under `.peers/` and the suffix of its requirements file."""
    module: str
    """The module in `tests/peers/` whose `app` uvicorn serves."""
    top_level: tuple[str, ...]
    """What `--relock` installs before freezing the whole venv into the requirements file."""

    @property
    def requirements(self) -> Path:
        return PEERS_DIR / f"requirements-{self.name}.txt"

    @property
    def venv(self) -> Path:
        return VENVS_DIR / self.name

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def stamp(self) -> Path:
        return self.venv / ".requirements.sha256"

    def fingerprint(self) -> str:
        return hashlib.sha256(self.requirements.read_bytes()).hexdigest()

    def installed(self) -> bool:
        return self.python.exists() and self.stamp.exists() and self.stamp.read_text().strip() == self.fingerprint()


PYDANTIC = Peer("pydantic", "pydantic_agent", ("pydantic-ai-slim[ag-ui]==2.68.0", "uvicorn==0.54.0"))
AGKIT = Peer("agkit", "agkit_agent",
             ("cloudbase-agent-server==0.1.1", "cloudbase-agent-core==0.1.1", "uvicorn==0.54.0"))
# 0.1.22 imports ThinkingStartEvent, which ag-ui-protocol 1.0 removed: without the `<1` pin it fails at import.
AGKIT_AGUI = Peer("agkit-agui", "agkit_agui_agent",
                  ("cloudbase-agent-server==0.1.22", "cloudbase-agent-core==0.1.13", "ag-ui-protocol==0.1.22",
                   "uvicorn==0.54.0"))
A2A = Peer("a2a", "a2a_agent", ("a2a-sdk[http-server,signing]==1.3.0", "uvicorn==0.54.0", "grpcio==1.85.3"))
MCP = Peer("mcp", "mcp_server", ("mcp==2.3.0", "uvicorn==0.54.0"))
LITELLM = Peer("litellm", "litellm_proxy", ("litellm[proxy]==1.108.7", "uvicorn==0.54.0"))
LANGGRAPH = Peer("langgraph", "langgraph", ("langgraph-cli[inmem]==0.4.40", "langgraph-api==0.16.7",
                                            "langgraph-sdk==0.4.14"))
LANGGRAPH_LAUNCHER = ("import ctypes, signal, sys\n"
                      "if sys.platform == 'linux': ctypes.CDLL(None).prctl(1, signal.SIGTERM)\n"
                      "sys.argv[0] = 'langgraph'\n"
                      "from langgraph_cli.cli import cli\n"
                      "cli()\n")
"""`langgraph dev`, with the same care for a parent that dies as `LAUNCHER`."""
LANGGRAPH_ENV = {"LANGGRAPH_CLI_NO_ANALYTICS": "1", "LANGSMITH_TRACING": "false", "LANGCHAIN_TRACING_V2": "false",
                 "LANGSMITH_API_KEY": "", "LANGGRAPH_NO_VERSION_CHECK": "1"}
"""No analytics, no tracing: nothing leaves the machine."""
PEERS = (PYDANTIC, AGKIT, AGKIT_AGUI, A2A, LANGGRAPH, LITELLM, MCP)


def _run(*command: str | Path) -> None:
    subprocess.run([str(part) for part in command], check=True, env=_clean_env())


def _clean_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in SCRUBBED_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _pip_install(python: Path, *arguments: str | Path) -> None:
    _run(python, "-m", "pip", "install", "--quiet", "--no-input", *arguments)


@contextmanager
def _locked(peer: Peer) -> Iterator[None]:
    """One installer per peer at a time, across processes."""
    VENVS_DIR.mkdir(exist_ok=True)
    with open(VENVS_DIR / f".{peer.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def ensure_peer_envs(peers: tuple[Peer, ...] = PEERS) -> None:
    """Create or update each peer's venv from its requirements file; a venv that matches it is left alone. The
    venvs are installed side by side: pip spends most of its time waiting on downloads and unpacking."""
    with ThreadPoolExecutor(max_workers=INSTALLS_AT_ONCE) as pool:
        for installed in [pool.submit(_ensure_peer_env, peer) for peer in peers]:
            installed.result()


def _ensure_peer_env(peer: Peer) -> None:
    with _locked(peer):
        if peer.installed():
            return
        print(f"peers_env: installing {peer.name} into {peer.venv}", file=sys.stderr, flush=True)
        started = time.monotonic()
        _run(sys.executable, "-m", "venv", "--clear", peer.venv)  # from scratch: no leftovers of older pins
        _pip_install(peer.python, "-r", peer.requirements)
        peer.stamp.write_text(peer.fingerprint() + "\n")
        print(f"peers_env: {peer.name} installed in {time.monotonic() - started:.1f} s", file=sys.stderr)


def relock(peers: tuple[Peer, ...] = PEERS) -> None:
    """Install each peer's top-level pins in a scratch venv and write `pip freeze` as its requirements file."""
    for peer in peers:
        with tempfile.TemporaryDirectory(prefix=f"peer-{peer.name}-") as scratch:
            venv = Path(scratch) / "venv"
            _run(sys.executable, "-m", "venv", venv)
            python = venv / "bin" / "python"
            _pip_install(python, *peer.top_level)
            frozen = subprocess.run([str(python), "-m", "pip", "freeze"], check=True, capture_output=True,
                                    text=True, env=_clean_env()).stdout
        version = f"{sys.version_info.major}.{sys.version_info.minor}"
        header = (f"# `pip freeze` of a venv (Python {version}) holding: {' '.join(peer.top_level)}\n"
                  f"# Regenerate with: python tests/peers_env.py --relock {peer.name}\n")
        peer.requirements.write_text(header + frozen)
        print(f"peers_env: wrote {peer.requirements.relative_to(ROOT)}", file=sys.stderr)


def _require(peer: Peer) -> None:
    if not peer.installed():
        raise RuntimeError(f"the {peer.name} peer venv ({peer.venv}) is missing or out of date with "
                           f"{peer.requirements.relative_to(ROOT)}: run `.venv/bin/python tests/peers_env.py`")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@contextmanager
def _serve(peer: Peer, env: dict[str, str] | None = None) -> Iterator[str]:
    """Run `peer` on 127.0.0.1 (uvicorn picks the port), with `env` added to its environment, yield its base URL
    once /healthz answers, then stop it."""
    _require(peer)
    command = [str(peer.python), "-c", LAUNCHER, "--app-dir", str(PEERS_DIR), f"{peer.module}:app",
               "--host", "127.0.0.1", "--port", "0", "--log-level", "info", "--no-access-log",
               "--timeout-graceful-shutdown", "1"]
    with tempfile.TemporaryDirectory(prefix=f"peer-{peer.name}-") as scratch:
        log_path = Path(scratch) / "server.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       env={**_clean_env(), **(env or {})}, cwd=scratch)
        try:
            yield _wait_until_serving(peer, process, log_path)
        finally:
            _stop(process)


def _wait_until_serving(peer: Peer, process: subprocess.Popen[bytes], log_path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    url: str | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        if url is None:
            found = re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", log_path.read_text(errors="replace"))
            url = found.group(1) if found else None
        if url is not None and _healthy(f"{url}/healthz"):
            return url
        time.sleep(0.05)
    tail = log_path.read_text(errors="replace")[-4000:]
    state = f"exited with {process.returncode}" if process.poll() is not None else f"not up in {START_TIMEOUT} s"
    raise RuntimeError(f"the {peer.name} peer {state}; its log:\n{tail}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def pydantic_upstream() -> Iterator[str]:
    """pydantic-ai 2.68 serving `POST /ag-ui` (AG-UI) and `POST /vercel` (AI SDK UI message stream)."""
    with _serve(PYDANTIC) as url:
        yield url


@contextmanager
def agkit_upstream() -> Iterator[str]:
    """cloudbase-agent-server 0.1.1 serving `POST /send-message` (AG-Kit's simple dialect)."""
    with _serve(AGKIT) as url:
        yield url


@contextmanager
def agkit_agui_upstream() -> Iterator[str]:
    """cloudbase-agent-server 0.1.22 serving `POST /send-message` (AG-UI `RunAgentInput` in, AG-UI events out)."""
    with _serve(AGKIT_AGUI) as url:
        yield url


@contextmanager
def a2a_upstream(grpc: bool = False, signing_key: str | None = None, tampered: bool = False) -> Iterator[str]:
    """a2a-sdk 1.3.0 serving A2A 1.0 (and 0.3 through its compat layer) over JSON-RPC (`POST /`) and HTTP+JSON
    (`POST /message:stream`, ...), its card at `/.well-known/agent-card.json`; a non-streaming twin under `/plain`.
    With `grpc`, gRPC too, on a port of its own, which the card lists first. With `signing_key` (an EC P-256 PEM)
    its cards are signed by the SDK's signer; `tampered` changes them after."""
    env = {"A2A_CARD_SIGNING_KEY": signing_key, "A2A_CARD_TAMPERED": "1" if tampered else "0"} if signing_key else {}
    if grpc:
        env["A2A_PEER_GRPC"] = "1"
    with _serve(A2A, env) as url:
        yield url


@contextmanager
def langgraph_upstream() -> Iterator[str]:
    """`langgraph dev` (in-memory) serving `tests/peers/langgraph/scripted_graph.py` as the graph `agent`, with no
    browser, no reload and no analytics; its base URL once `/ok` answers."""
    _require(LANGGRAPH)
    with socket.socket() as probe:  # `langgraph dev` takes no port 0: a free one, taken just before it starts
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with tempfile.TemporaryDirectory(prefix="peer-langgraph-") as scratch:
        # The server keeps its in-memory state under its working directory, and reads graphs relative to it.
        config = Path(scratch) / "langgraph.json"
        graph = PEERS_DIR / "langgraph" / "scripted_graph.py"
        config.write_text(json.dumps({"dependencies": [str(graph.parent)], "graphs": {"agent": f"{graph}:graph"}}))
        command = [str(LANGGRAPH.python), "-c", LANGGRAPH_LAUNCHER, "dev", "--no-browser", "--no-reload",
                   "--host", "127.0.0.1", "--port", str(port), "--config", str(config),
                   "--server-log-level", "warning"]
        log_path = Path(scratch) / "server.log"
        with open(log_path, "wb") as log:
            process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       env={**_clean_env(), **LANGGRAPH_ENV}, cwd=scratch)
        try:
            url = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + START_TIMEOUT
            while not _healthy(f"{url}/ok"):
                if process.poll() is not None or time.monotonic() > deadline:
                    tail = log_path.read_text(errors="replace")[-4000:]
                    raise RuntimeError(f"the langgraph peer did not start; its log:\n{tail}")
                time.sleep(0.1)
            yield url
        finally:
            _stop(process)


LITELLM_KEY = "sk-mock-0123456789abcdef"


@contextmanager
def litellm_upstream() -> Iterator[str]:
    """LiteLLM's proxy serving `POST /v1/chat/completions` for models `mock-text` and `mock-fail` (key
    `LITELLM_KEY`)."""
    with _serve(LITELLM) as url:
        yield url


@contextmanager
def mcp_upstream() -> Iterator[str]:
    """`mcp` 2.3.0's MCPServer serving its tools (agent, oneshot, status, fail, sleepy) at `/mcp`, over streamable
    HTTP; `/counts`, `POST /forget` (see `tests/peers/mcp_server.py`)."""
    with _serve(MCP) as url:
        yield url


@dataclass
class A2AClientRun:
    """What `tests/peers/a2a_client.py` (a2a-sdk's own client) saw."""

    responses: list[dict[str, Any]] = field(default_factory=list)
    """Each `StreamResponse` in the SDK's JSON form ({"task"|"message"|"statusUpdate"|"artifactUpdate": ...}),
    and {"cancelTask": Task} where `cancel_after` sent CancelTask."""
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Each HTTP request the client sent: {method, url, headers, body (parsed), raw (the body as sent)}."""
    error: str | None = None
    """"<ExceptionType>: <message>" when the client failed (the responses before the failure are kept)."""


def run_a2a_client(url: str, text: str, *, context_id: str | None = None, task_id: str | None = None,
                   message_id: str | None = None, stream: bool = True, binding: str = "jsonrpc",
                   version: str = "1.0", cancel_after: int = 0, timeout: float = 30.0,
                   data: Any = None, key: str | None = None) -> A2AClientRun:
    """Send `text` to the A2A agent at `url` (its base: the card is read from there) with a2a-sdk's client.

    `binding` is "jsonrpc", "http-json" or "grpc", `version` "1.0" or "0.3" (the card's interfaces of that version
    only), `stream=False` sends SendMessage; `cancel_after=N` sends CancelTask after the N-th response; `data` (JSON) is
    sent as a data part, after the text when that is not empty; `key` is sent as `Authorization: Bearer <key>`.
    """
    _require(A2A)
    command = [str(A2A.python), str(PEERS_DIR / "a2a_client.py"), url, text, "--binding", binding,
               "--version", version, "--timeout", str(timeout), "--dump-requests"]
    for option, value in (("--context-id", context_id), ("--task-id", task_id), ("--message-id", message_id),
                          ("--key", key)):
        if value is not None:
            command += [option, value]
    if not stream:
        command.append("--no-stream")
    if data is not None:
        command += ["--data", json.dumps(data)]
    if cancel_after:
        command += ["--cancel-after", str(cancel_after)]
    done = subprocess.run(command, capture_output=True, text=True, env=_clean_env(), timeout=timeout + 30,
                          check=False)
    run = A2AClientRun(responses=[json.loads(line) for line in done.stdout.splitlines() if line.strip()])
    other: list[str] = []
    for line in done.stderr.splitlines():
        if line.startswith("{"):
            run.requests.append(json.loads(line))
        elif line.strip():
            other.append(line)
    if done.returncode != 0:
        run.error = other[-1] if other else f"a2a_client.py exited with {done.returncode} and said nothing"
    return run


def check_a2a_card(url: str, key: str, alg: str, *, version: str = "1.0", card: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """a2a-sdk's own verifier (`tests/peers/a2a_card_check.py`) on the card at `url` (its base), or on `card`,
    with the public `key` (a JWK or a PEM): {"valid": True, "payload": ...} or {"valid": False, "error": ...}."""
    _require(A2A)
    command = [str(A2A.python), str(PEERS_DIR / "a2a_card_check.py"), url, "--key", key, "--alg", alg,
               "--version", version]
    with tempfile.TemporaryDirectory(prefix="a2a-card-") as scratch:
        if card is not None:
            path = Path(scratch) / "card.json"
            path.write_text(json.dumps(card, ensure_ascii=False))
            command += ["--card-file", str(path)]
        done = subprocess.run(command, capture_output=True, text=True, env=_clean_env(), timeout=60, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        raise RuntimeError(f"a2a_card_check.py exited with {done.returncode}: {done.stderr[-2000:]}")
    checked: dict[str, Any] = json.loads(done.stdout)
    return checked


@dataclass
class A2ATasksRun:
    """What `tests/peers/a2a_tasks.py` (a2a-sdk's own client, asking about tasks) got."""

    answers: list[dict[str, Any]] = field(default_factory=list)
    """The answer in the SDK's JSON form; for "subscribe", each `StreamResponse`."""
    error: str | None = None
    """"<ExceptionType>: <message>": the SDK raises A2A's errors as their own types (`TaskNotFoundError`, ...)."""


def a2a_tasks_command(url: str, operation: str, params: dict[str, Any], timeout: float = 30.0,
                      binding: str = "jsonrpc") -> list[str]:
    _require(A2A)
    return [str(A2A.python), str(PEERS_DIR / "a2a_tasks.py"), url, operation, json.dumps(params), "--timeout",
            str(timeout), "--binding", binding]


def follow_a2a_tasks(url: str, operation: str, params: dict[str, Any], timeout: float = 30.0,
                     binding: str = "jsonrpc") -> Following:
    """`run_a2a_tasks`, its answers read as they come (a subscribe's)."""
    return Following(a2a_tasks_command(url, operation, params, timeout, binding), env=_clean_env())


def run_a2a_tasks(url: str, operation: str, params: dict[str, Any], timeout: float = 30.0,
                  binding: str = "jsonrpc") -> A2ATasksRun:
    """Ask the A2A agent at `url` (its base) about its tasks with a2a-sdk's client: `operation` is get, cancel,
    list, subscribe, push-create, push-get, push-list or push-delete, with the request's `params` (JSON form), on
    `binding` ("jsonrpc", "http-json" or "grpc")."""
    done = subprocess.run(a2a_tasks_command(url, operation, params, timeout, binding), capture_output=True, text=True,
                          env=_clean_env(), timeout=timeout + 30, check=False)
    run = A2ATasksRun(answers=[json.loads(line) for line in done.stdout.splitlines() if line.strip()])
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        run.error = lines[-1] if lines else f"a2a_tasks.py exited with {done.returncode} and said nothing"
    return run


@dataclass
class McpClientRun:
    """What `tests/peers/mcp_client.py` (`mcp` 2.3.0's own client) got."""

    opened: dict[str, Any] = field(default_factory=dict)
    """The session: {protocolVersion, serverInfo}."""
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Each step's outcome, in the plan's order (see the script)."""
    error: str | None = None
    """"<ExceptionType>: <message>" when the session could not be opened."""


def run_mcp_client(url: str, plan: list[dict[str, Any]], *, key: str | None = None,
                   timeout: float = 30.0) -> McpClientRun:
    """Run `plan` (tools/list and tools/call steps) against the MCP server at `url` with the SDK's client."""
    _require(MCP)
    command = [str(MCP.python), str(PEERS_DIR / "mcp_client.py"), url, json.dumps(plan), "--timeout", str(timeout)]
    if key is not None:
        command += ["--key", key]
    done = subprocess.run(command, capture_output=True, text=True, env=_clean_env(), timeout=timeout * 4 + 30,
                          check=False)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    run = McpClientRun(opened=lines[0] if lines else {}, steps=lines[1:])
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        run.error = said[-1] if said else f"mcp_client.py exited with {done.returncode} and said nothing"
    return run


@dataclass
class LangGraphClientRun:
    """What `tests/peers/langgraph_client.py` (`langgraph-sdk`'s own client) got."""

    parts: list[dict[str, Any]] = field(default_factory=list)
    """Each `StreamPart` as {event, data}; for a call that is not a stream, its answer."""
    error: str | None = None

    def events(self, name: str) -> list[Any]:
        return [part["data"] for part in self.parts if part.get("event") == name]

    @property
    def text(self) -> str:
        """The text of the AI message chunks of `messages` parts."""
        return "".join(data[0]["content"] for data in self.events("messages")
                       if data[0].get("type") == "AIMessageChunk" and isinstance(data[0].get("content"), str))


def langgraph_client_command(url: str, operation: str, **options: str | int | list[str]) -> list[str]:
    _require(LANGGRAPH)
    command = [str(LANGGRAPH.python), str(PEERS_DIR / "langgraph_client.py"), url, operation]
    for name, value in options.items():
        for one in value if isinstance(value, list) else [value]:
            command += [f"--{name.replace('_', '-')}", str(one)]
    return command


def follow_langgraph_client(url: str, operation: str, **options: str | int | list[str]) -> Following:
    """`run_langgraph_client`, its parts read as they come (a join's)."""
    return Following(langgraph_client_command(url, operation, **options), env=_clean_env())


def run_langgraph_client(url: str, operation: str, *, timeout: float = 30.0, **options: str | int | list[str]
                         ) -> LangGraphClientRun:
    """One call with `langgraph-sdk`'s client to the LangGraph server at `url`: `operation` and options as
    `tests/peers/langgraph_client.py` takes them (`thread`, `text`, `mode` (a list), `resume` (JSON), ...)."""
    done = subprocess.run(langgraph_client_command(url, operation, **options), capture_output=True, text=True,
                          env=_clean_env(), timeout=timeout + 30, check=False)
    run = LangGraphClientRun(parts=[json.loads(line) for line in done.stdout.splitlines() if line.strip()])
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        run.error = lines[-1] if lines else f"langgraph_client.py exited with {done.returncode} and said nothing"
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description="Install the venvs of the third-party agents the tests run.")
    parser.add_argument("--relock", nargs="*", metavar="PEER", choices=[peer.name for peer in PEERS],
                        help="re-resolve the top-level pins and rewrite tests/peers/requirements-*.txt first "
                             "(of the peers named, or of all)")
    chosen = parser.parse_args().relock
    if chosen is not None:
        relock(tuple(peer for peer in PEERS if peer.name in chosen or not chosen))
    ensure_peer_envs()


if __name__ == "__main__":
    main()
