"""Validate gateway output with the real JavaScript clients.

The Node scripts in ``tests/clients/`` run ``@ag-ui/client`` 1.0.0 and the Vercel
``ai`` package (7.0.173 plus the strict 6.0.230) over recorded SSE bodies. Every call
batches all streams into a single ``node`` process.

It also drives the real clients against a live HTTP URL: ``run_agui`` (``agui-run.mjs``, one
``HttpAgent`` doing several ``runAgent`` calls), ``run_vercel_chat`` (``vercel-chat.mjs``, the
``AbstractChat`` + ``DefaultChatTransport`` state machine that ``useChat`` wraps), ``run_vercel_resume``
(``vercel-resume.mjs``, that chat dropped on one replica and resumed or stopped through another),
``run_a2a_send`` (``a2a-send.mjs``, ``@a2a-js/sdk`` 1.3.0's ``Client`` sending one message), ``run_openai_js``
(``openai-run.mjs``, the official ``openai`` 7.57.0 SDK through Chat Completions and Responses), ``run_mcp``
(``mcp-run.mjs``, ``@modelcontextprotocol/sdk`` 1.32.2's ``Client`` calling tools) and ``run_mcp_conformance``
(``mcp-conformance.mjs``, the MCP project's conformance suite 0.1.16 against a server). Each call is one
``node`` process; the plan formats and options are documented at the top of the scripts.

Install once with ``npm ci --prefix tests/clients``. When the install is missing the
helpers raise ``RuntimeError`` rather than letting tests skip silently.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from following import Following

CLIENTS_DIR = Path(__file__).resolve().parent / "clients"
TIMEOUT_S = 120.0
DRIVER_TIMEOUT_S = 60.0
_REQUIRED_PACKAGES = ("@ag-ui/client", "@ag-ui/proto", "ai", "ai-strict", "ai5", "ai7-strict", "rxjs")
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


def _require_node() -> str:
    node = _node()
    if node is None:
        msg = f"`node` not found on PATH; install Node >= 20, then {_INSTALL_HINT}"
        raise RuntimeError(msg)
    if not node_clients_available():
        msg = f"JS client validators missing in {CLIENTS_DIR}: {_INSTALL_HINT}"
        raise RuntimeError(msg)
    return node


def _node_json(node: str, script: str, payload: Any, timeout: float) -> Any:
    """Run one node script with `payload` as JSON on stdin; return its stdout parsed as JSON."""
    try:
        proc = subprocess.run(
            [node, script],
            input=json.dumps(payload).encode(),
            cwd=CLIENTS_DIR,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        msg = f"{script} timed out after {timeout:.0f} s"
        raise RuntimeError(msg) from exc
    if proc.returncode != 0:
        stderr = proc.stderr.decode(errors="replace").strip()
        msg = f"{script} exited with {proc.returncode}:\n{stderr}"
        raise RuntimeError(msg)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError as exc:
        stderr = proc.stderr.decode(errors="replace").strip()
        msg = f"{script} printed no JSON ({exc}):\n{proc.stdout[:2000]!r}\n{stderr}"
        raise RuntimeError(msg) from exc


def _run(script: str, streams: dict[str, bytes]) -> dict[str, Any]:
    node = _require_node()
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
    result = cast(dict[str, Any], _node_json(node, script, payload, TIMEOUT_S))
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


class AiVersionResult(TypedDict):
    """Outcome of one UI message stream under one `ai` release's strict schema and state machine."""

    ok: bool
    error: str | None
    in_band_error: str | None
    message: dict[str, Any] | None  # final UIMessage
    types: list[str]
    package: str  # e.g. "ai@5.0.216"


def verify_ai_versions(streams: dict[str, tuple[bytes, str]]) -> dict[str, AiVersionResult]:
    """Run each body through the `ai` release its client version runs (`"5"`, `"6"`, `"7"`: the oldest, strict,
    release of the major; `"7.0.173"`: the newest 7). All streams go to a single node process."""
    node = _require_node()
    if not streams:
        return {}
    payload = [{"name": name, "sse": body.decode(), "sdk": sdk} for name, (body, sdk) in streams.items()]
    return cast(dict[str, AiVersionResult], _node_json(node, "verify-ai-versions.mjs", payload, TIMEOUT_S))


# --------------------------------------------------------------------------- live drivers


class AguiFinished(TypedDict):
    """What ``onRunFinishedEvent`` saw."""

    outcome: str  # "success" | "interrupt" | "cancelled"
    result: NotRequired[Any]
    interrupts: NotRequired[list[dict[str, Any]]]  # outcome "interrupt"
    pendingToolCallIds: NotRequired[list[str]]  # outcome "success"


class AguiStep(TypedDict):
    """One ``runAgent`` call of ``run_agui``, and the agent afterwards."""

    types: list[str]  # event types after the client's pipeline (onEvent)
    events: list[dict[str, Any]]
    terminal: bool  # a RUN_FINISHED or RUN_ERROR came (the client itself does not check)
    finished: AguiFinished | None
    runError: dict[str, Any] | None  # the RUN_ERROR event (runAgent resolves on it)
    error: str | None  # runAgent rejected: protocol violation, HTTP error, unanswered interrupt
    timedOut: bool
    warnings: list[str]  # console.warn from the client during the step
    requests: list[dict[str, Any]]  # RunAgentInput bodies POSTed in this step
    newMessages: list[dict[str, Any]]
    toolMessages: list[dict[str, Any]]  # role "tool" messages added by the step's toolResults
    messages: list[dict[str, Any]]  # agent.messages after the step
    state: Any  # agent.state after the step
    pendingInterrupts: list[dict[str, Any]]


class AguiRun(TypedDict):
    steps: list[AguiStep]


class VercelStep(TypedDict):
    """One step of ``run_vercel_chat``, once the chat went idle."""

    status: str  # chat.status: "ready" | "error" (or "streaming"/"submitted" after a timeout)
    error: str | None  # chat.error?.message
    thrown: str | None  # the step's own call rejected
    onError: list[str]
    data: list[dict[str, Any]]  # onData parts
    toolCalls: list[dict[str, Any]]  # onToolCall
    finishes: list[dict[str, Any]]  # onFinish: finishReason, isAbort, isDisconnect, isError, messageId
    answered: list[str]  # toolCallIds / approval ids the step answered
    requests: list[dict[str, Any]]  # POST bodies sent during the step
    timedOut: bool
    messages: list[dict[str, Any]]  # chat.messages (UIMessages) after the step


class VercelChatRun(TypedDict):
    steps: list[VercelStep]
    requests: list[dict[str, Any]]  # every POST body, in order
    loopGuardTripped: bool  # the chat tried to POST more than plan["maxRequests"] (default 10) times


def _drive(script: str, plan: dict[str, Any]) -> dict[str, Any]:
    node = _require_node()
    result = _node_json(node, script, plan, DRIVER_TIMEOUT_S)
    if not isinstance(result, dict) or not isinstance(result.get("steps"), list):
        msg = f"{script} answered {str(result)[:500]}, expected an object with steps"
        raise RuntimeError(msg)
    if len(result["steps"]) != len(plan.get("steps", [])):
        msg = f"{script} reported {len(result['steps'])} steps for a plan of {len(plan.get('steps', []))}"
        raise RuntimeError(msg)
    return result


def run_agui(plan: dict[str, Any]) -> AguiRun:
    """Drive one real ``@ag-ui/client`` ``HttpAgent`` through ``plan["steps"]`` against ``plan["url"]``.

    Plan: ``{url, threadId, headers?, tools?, timeoutMs?, steps: [{messages?, tools?, state?, resume?,
    forwardedProps?, context?, runId?, toolResults?}]}`` (see ``tests/clients/agui-run.mjs``). A resume
    entry without ``interruptId`` answers the agent's pending interrupt at the same index.
    """
    return cast(AguiRun, _drive("agui-run.mjs", plan))


def run_vercel_chat(plan: dict[str, Any]) -> VercelChatRun:
    """Drive the real ``ai`` 7 chat (``AbstractChat`` + ``DefaultChatTransport``) through ``plan["steps"]``.

    Plan: ``{url, chatId, body?, headers?, inkeep?, autoSend?, maxRequests?, timeoutMs?, steps: [{send, body?} |
    {toolOutputs: {name: output}} | {approve: bool, reason?}]}`` (see ``tests/clients/vercel-chat.mjs``).
    """
    return cast(VercelChatRun, _drive("vercel-chat.mjs", plan))


class A2ASend(TypedDict):
    """What ``a2a-send.mjs`` (``@a2a-js/sdk`` 1.3.0's client) saw: the JS twin of ``peers_env.A2AClientRun``."""

    responses: list[dict[str, Any]]  # each StreamResponse.toJSON, and {"cancelTask": Task} after a cancel
    requests: list[dict[str, Any]]  # each HTTP request the client sent: {method, url, headers, body, raw}
    error: str | None  # "<ErrorName>: <message>" when the client failed


def run_langgraph(api_url: str, plan: list[dict[str, Any]], timeout_s: float = 60.0) -> list[dict[str, Any]]:
    """One conversation through ``@langchain/langgraph-sdk``'s ``Client`` (see ``tests/clients/langgraph-run.mjs``):
    what each step of ``plan`` got, in order."""
    node = _require_node()
    if not (CLIENTS_DIR / "node_modules" / "@langchain" / "langgraph-sdk" / "package.json").is_file():
        msg = f"@langchain/langgraph-sdk missing in {CLIENTS_DIR}: {_INSTALL_HINT}"
        raise RuntimeError(msg)
    proc = subprocess.run([node, "langgraph-run.mjs", api_url, json.dumps(plan)], cwd=CLIENTS_DIR,
                          capture_output=True, text=True, timeout=timeout_s, check=False)
    if proc.returncode != 0:
        msg = f"langgraph-run.mjs failed: {proc.stderr.strip()[-2000:]}"
        raise RuntimeError(msg)
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def run_a2a_send(url: str, text: str, *, context_id: str | None = None, task_id: str | None = None,
                 message_id: str | None = None, stream: bool = True, binding: str = "jsonrpc",
                 version: str = "1.0", cancel_after: int = 0, timeout_s: float = 30.0) -> A2ASend:
    """Send `text` to the A2A agent at `url` with the real ``@a2a-js/sdk`` client (see ``tests/clients/a2a-send.mjs``).

    The SDK resolves the card at ``new URL(".well-known/agent-card.json", url)``: a base URL with a path needs
    its trailing slash, or the card is looked for one level up.
    """
    node = _require_node()
    if not (CLIENTS_DIR / "node_modules" / "@a2a-js" / "sdk" / "package.json").is_file():
        msg = f"@a2a-js/sdk missing in {CLIENTS_DIR}: {_INSTALL_HINT}"
        raise RuntimeError(msg)
    command = [node, "a2a-send.mjs", url, text, "--binding", binding, "--version", version,
               "--timeout-ms", str(int(timeout_s * 1000))]
    for option, value in (("--context-id", context_id), ("--task-id", task_id), ("--message-id", message_id)):
        if value is not None:
            command += [option, value]
    if not stream:
        command.append("--no-stream")
    if cancel_after:
        command += ["--cancel-after", str(cancel_after)]
    try:
        proc = subprocess.run(command, cwd=CLIENTS_DIR, capture_output=True, text=True, timeout=timeout_s + 30,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        msg = f"a2a-send.mjs timed out after {timeout_s + 30:.0f} s"
        raise RuntimeError(msg) from exc
    requests: list[dict[str, Any]] = []
    other: list[str] = []
    for line in proc.stderr.splitlines():
        if line.startswith("{"):
            requests.append(json.loads(line))
        elif line.strip():
            other.append(line)
    error = None
    if proc.returncode != 0:
        error = other[-1] if other else f"a2a-send.mjs exited with {proc.returncode} and said nothing"
    responses = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return A2ASend(responses=responses, requests=requests, error=error)


class A2ATasks(TypedDict):
    """What ``a2a-tasks.mjs`` (``@a2a-js/sdk``'s client, asking about tasks) got."""

    answers: list[dict[str, Any]]  # the answer in its JSON form; for "subscribe", each StreamResponse
    error: str | None  # "<ErrorName>: <message>"; the SDK names A2A's errors by their code


def a2a_tasks_js_command(url: str, operation: str, params: dict[str, Any], timeout_s: float = 30.0) -> list[str]:
    node = _require_node()
    return [node, "a2a-tasks.mjs", url, operation, json.dumps(params), "--timeout-ms", str(int(timeout_s * 1000))]


def follow_a2a_tasks_js(url: str, operation: str, params: dict[str, Any], timeout_s: float = 30.0) -> Following:
    """`run_a2a_tasks_js`, its answers read as they come (a subscribe's)."""
    return Following(a2a_tasks_js_command(url, operation, params, timeout_s), cwd=CLIENTS_DIR)


def run_a2a_tasks_js(url: str, operation: str, params: dict[str, Any], timeout_s: float = 30.0) -> A2ATasks:
    """Ask the A2A agent at `url` about its tasks with the real ``@a2a-js/sdk`` client (see
    ``tests/clients/a2a-tasks.mjs``); `url` needs its trailing slash, as for ``run_a2a_send``."""
    command = a2a_tasks_js_command(url, operation, params, timeout_s)
    try:
        proc = subprocess.run(command, cwd=CLIENTS_DIR, capture_output=True, text=True, timeout=timeout_s + 30,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        msg = f"a2a-tasks.mjs timed out after {timeout_s + 30:.0f} s"
        raise RuntimeError(msg) from exc
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    error = (lines[-1] if lines else f"a2a-tasks.mjs exited with {proc.returncode}") if proc.returncode else None
    return A2ATasks(answers=[json.loads(line) for line in proc.stdout.splitlines() if line.strip()], error=error)


class VercelResumeRequest(TypedDict):
    """One HTTP request ``vercel-resume.mjs`` made."""

    chat: str  # "A" (the first chat), "B" (the reloaded chat) or "app" (the stop button's DELETE)
    method: str
    url: str
    status: int | None  # None: the fetch itself failed (see error)
    error: NotRequired[str]


class VercelResumeRun(TypedDict):
    """Outcome of ``run_vercel_resume``: a real ``ai`` 7 chat dropped on replica A and resumed via replica B."""

    firstMessages: list[dict[str, Any]]  # chat A's UIMessages after the drop (after the finish, for "plain")
    messages: list[dict[str, Any]]  # the reloaded chat's UIMessages after resumeStream() (A's, for "plain")
    resumeStatus: int | None  # status of GET {urlB}/{chatId}/stream (None: not made, or the fetch failed)
    stopStatus: int | None  # status of DELETE {urlB}/{chatId}/stream ("stop" mode)
    framesBeforeDrop: int  # SSE data: frames of A's body the chat got (all of them when there was no drop)
    dropped: bool  # False: A's stream ended before dropAfterChunks frames
    resumeFrames: int  # SSE data: frames of the resumed (GET) body the reloaded chat read
    status: str  # the final chat's status: "ready" | "error" (or "streaming"/"submitted" after a timeout)
    error: str | None  # the final chat's error?.message
    firstStatus: str  # chat A's status after the drop / finish
    firstError: str | None
    onError: list[dict[str, Any]]  # {chat, message} per onError callback
    requests: list[VercelResumeRequest]  # every HTTP request, in order
    finishes: list[dict[str, Any]]  # onFinish: chat, finishReason, isAbort, isDisconnect, isError, messageId
    thrown: str | None  # a chat call rejected (the chat normally reports errors through status/error)
    timedOut: bool


def run_vercel_resume(plan: dict[str, Any]) -> VercelResumeRun:
    """Drop the real ``ai`` 7 chat's connection to one replica and resume (or stop) the run through another.

    Plan: ``{urlA, urlB, mode: "plain" | "resume" | "stop", chatId?, text?, dropAfterChunks?, afterStopMs?,
    headers?, timeoutMs?}`` (see ``tests/clients/vercel-resume.mjs``). "resume" reloads the chat (same id, only
    the user message) and calls ``resumeStream()`` against ``urlB``; "stop" calls ``chat.stop()`` plus
    ``DELETE {urlB}/{chatId}/stream``, then resumes like "resume" after ``afterStopMs``.
    """
    node = _require_node()
    phases = 2 if plan.get("mode") in ("resume", "stop") else 1
    timeout = max(DRIVER_TIMEOUT_S, phases * float(plan.get("timeoutMs", 20000)) / 1000 * 1.5 + 10)
    result = _node_json(node, "vercel-resume.mjs", plan, timeout)
    if not isinstance(result, dict) or not isinstance(result.get("messages"), list) or "requests" not in result:
        msg = f"vercel-resume.mjs answered {str(result)[:500]}, expected an object with messages and requests"
        raise RuntimeError(msg)
    return cast(VercelResumeRun, result)


def run_openai_js(base_url: str, steps: list[str], timeout_s: float = 30.0) -> dict[str, Any]:
    """Run `steps` of ``openai-run.mjs`` with the official ``openai`` npm SDK against `base_url` (the ``/v1`` an
    OpenAI client is given), all in one node process; each step's result under its name (see the script), or
    ``{"thrown": error}`` when the SDK threw where the step expected an answer."""
    node = _require_node()
    if not (CLIENTS_DIR / "node_modules" / "openai" / "package.json").is_file():
        msg = f"openai missing in {CLIENTS_DIR}: {_INSTALL_HINT}"
        raise RuntimeError(msg)
    plan = {"baseURL": base_url, "steps": steps, "timeoutMs": int(timeout_s * 1000)}
    result = _node_json(node, "openai-run.mjs", plan, timeout_s * len(steps) + 30)
    if not isinstance(result, dict) or sorted(result) != sorted(steps):
        msg = f"openai-run.mjs answered {str(result)[:500]}, expected the steps {steps}"
        raise RuntimeError(msg)
    return cast(dict[str, Any], result)


CONFORMANCE_RESULT = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d\d-\d\dT[\d-]+Z$")
"""A result folder the conformance suite writes: `server-<scenario>-<timestamp>`."""


def run_mcp_conformance(url: str, out_dir: Path, *, timeout_s: float = 60.0) -> dict[str, list[dict[str, Any]]]:
    """Run every server scenario of ``@modelcontextprotocol/conformance`` 0.1.16 (``--suite all``: the pending ones
    too) against the MCP server at `url`, through ``mcp-conformance.mjs`` (which runs the suite on Node 20 too);
    each listed scenario's checks (``id``, ``status``, ``errorMessage``, ``details``), an empty list for one that
    wrote none."""
    node = _require_node()
    if not (CLIENTS_DIR / "node_modules" / "@modelcontextprotocol" / "conformance" / "package.json").is_file():
        msg = f"@modelcontextprotocol/conformance missing in {CLIENTS_DIR}: {_INSTALL_HINT}"
        raise RuntimeError(msg)
    listed = subprocess.run([node, "mcp-conformance.mjs", "list", "--server"], cwd=CLIENTS_DIR, capture_output=True,
                            text=True, timeout=30, check=True).stdout
    scenarios = [line.split()[1] for line in listed.splitlines() if line.strip().startswith("- ")]
    command = [node, "mcp-conformance.mjs", "server", "--url", url, "--suite", "all", "-o", str(out_dir)]
    try:  # exit status 1 on any failed check: which failed is the caller's to judge
        subprocess.run(command, cwd=CLIENTS_DIR, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired as exc:
        msg = f"the conformance suite did not finish within {timeout_s:.0f} s"
        raise RuntimeError(msg) from exc
    checks: dict[str, list[dict[str, Any]]] = {scenario: [] for scenario in scenarios}
    for folder in sorted(out_dir.iterdir()):
        if (named := CONFORMANCE_RESULT.match(folder.name)) and (folder / "checks.json").is_file():
            checks[named["scenario"]] = json.loads((folder / "checks.json").read_text())
    return checks


class McpRun(TypedDict):
    """What ``@modelcontextprotocol/sdk``'s client got (see ``tests/clients/mcp-run.mjs``)."""

    opened: dict[str, Any]  # {protocolVersion, serverInfo, sessionId}
    steps: list[dict[str, Any]]  # each step's outcome, in the plan's order
    terminated: bool | None  # the session's DELETE answered
    error: str | None  # the session could not be opened


def run_mcp(url: str, plan: list[dict[str, Any]], *, key: str | None = None, timeout_s: float = 30.0) -> McpRun:
    """Run `plan` (tools/list and tools/call steps, as ``tests/peers/mcp_client.py`` takes them) against the MCP
    server at `url` with ``@modelcontextprotocol/sdk`` 1.32.2's ``Client``, then end the session (DELETE)."""
    node = _require_node()
    if not (CLIENTS_DIR / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        msg = f"@modelcontextprotocol/sdk missing in {CLIENTS_DIR}: {_INSTALL_HINT}"
        raise RuntimeError(msg)
    command = [node, "mcp-run.mjs", url, json.dumps(plan), "--timeout-ms", str(int(timeout_s * 1000))]
    if key is not None:
        command += ["--key", key]
    try:
        proc = subprocess.run(command, cwd=CLIENTS_DIR, capture_output=True, text=True, timeout=timeout_s * 4 + 30,
                              check=False)
    except subprocess.TimeoutExpired as exc:
        msg = f"mcp-run.mjs timed out after {timeout_s * 4 + 30:.0f} s"
        raise RuntimeError(msg) from exc
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    ended = lines.pop() if lines and "terminated" in lines[-1] else None
    said = [line for line in proc.stderr.splitlines() if line.strip()]
    return McpRun(opened=lines[0] if lines else {}, steps=lines[1:],
                  terminated=ended["terminated"] if ended is not None else None,
                  error=(said[-1] if said else f"mcp-run.mjs exited with {proc.returncode}")
                  if proc.returncode != 0 else None)
