"""A2A's spellings in its two versions in use: 1.0 (`TASK_STATE_*`, `ROLE_*`, a part's kind told by its one key,
a stream response's kind by its one key) and 0.3 (lowercase kebab-case states and roles, `kind` on every object,
`final` on the last status update). The rest of the package writes 1.0 and reads both through these helpers."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

V03 = "0.3"
"""The variant name of A2A 0.3 (`message/stream`, `kind`, `final`); 1.0 is the dialect without a variant."""

REST = "rest"
"""The variant name of the HTTP+JSON binding (`POST /message:stream`); JSON-RPC is the dialect without a variant."""

BINDING = "agent_gateway_binding"
"""The key of a request read from an HTTP+JSON call (`rest.py`) that says so (its value `REST`): the dialect reads it
as the JSON-RPC call it stands for, and answers it the HTTP+JSON way (`updates.client_call`'s `binding`)."""

JSONRPC = "jsonrpc"
"""A route's pin to JSON-RPC 1.0, which is otherwise the dialect without a variant (a card may prefer another)."""

GRPC = "grpc"
"""The variant name of the gRPC binding (`SendStreamingMessage` on `lf.a2a.v1.A2AService`)."""

GRPC_SEND = "grpc-send"
"""The gRPC binding for an agent that does not stream: `SendMessage`."""

SEND = "send"
"""The variant name of an agent that does not stream: it is called with `SendMessage` and answers one body."""

TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
PAUSED = frozenset({"input-required", "auth-required"})
"""A task in one of these waits for the client: the stream ends, and the next message with its id continues it."""
STOP_REASON = "stopReason"
"""The key of a status update's (and so its task's) `metadata` that says a completed task's answer was cut short:
A2A has no state for it."""

METHODS = {
    "SendStreamingMessage": (True, None), "SendMessage": (False, None),
    "message/stream": (True, V03), "message/send": (False, V03),
}
"""The JSON-RPC methods that run a task: whether the reply streams, and the version they belong to."""

QUERIES = {
    "GetTask": None, "CancelTask": None, "ListTasks": None, "SubscribeToTask": None,
    "CreateTaskPushNotificationConfig": None, "GetTaskPushNotificationConfig": None,
    "ListTaskPushNotificationConfigs": None, "DeleteTaskPushNotificationConfig": None, "GetExtendedAgentCard": None,
    "tasks/get": V03, "tasks/cancel": V03, "tasks/resubscribe": V03,
}
"""The JSON-RPC methods about tasks already started, and the version they belong to."""

SERVED = (*METHODS, *QUERIES)


def state(value: Any) -> str:
    """A task state in 0.3's spelling (`input-required`), whichever version wrote it (`TASK_STATE_INPUT_REQUIRED`)."""
    if not isinstance(value, str):
        return "unknown"
    name: str = value.removeprefix("TASK_STATE_")
    return name.lower().replace("_", "-")


def state_for(version: str | None, name: str) -> str:
    """A state (0.3 spelling) as `version` writes it."""
    return name if version == V03 else "TASK_STATE_" + name.upper().replace("-", "_")


def role_for(version: str | None, role: str) -> str:
    """`user` or `agent` as `version` writes it."""
    return role if version == V03 else "ROLE_" + role.upper()


def is_user(role: Any) -> bool:
    return role in ("user", "ROLE_USER")


def text_part(version: str | None, text: str) -> dict[str, Any]:
    return {"kind": "text", "text": text} if version == V03 else {"text": text}


def data_part(version: str | None, data: Any, metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    part: dict[str, Any] = {"kind": "data", "data": data} if version == V03 else {"data": data}
    if metadata:
        part["metadata"] = metadata
    return part


def part_kind(part: dict[str, Any]) -> str:
    """`text`, `data`, `file` (0.3's file parts and 1.0's `raw`/`url` ones) or `unknown`."""
    kind = part.get("kind")
    if isinstance(kind, str):
        return kind
    if "text" in part:
        return "text"
    if "data" in part:
        return "data"
    if "file" in part or "raw" in part or "url" in part:
        return "file"
    return "unknown"


def response_kind(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """What a stream response (1.0: `{"statusUpdate": {...}}`) or result (0.3: `{"kind": "status-update", ...}`)
    holds, in 0.3's names (`task`, `message`, `status-update`, `artifact-update`), and the object itself."""
    kind = result.get("kind")
    if isinstance(kind, str):
        return kind, result
    for key, name in (("statusUpdate", "status-update"), ("artifactUpdate", "artifact-update"), ("task", "task"),
                      ("message", "message")):
        value = result.get(key)
        if isinstance(value, dict):
            return name, value
    return "unknown", result


def wrap(version: str | None, kind: str, value: dict[str, Any]) -> dict[str, Any]:
    """A stream response of `kind` (0.3's name) as `version` writes it."""
    if version == V03:
        return {"kind": kind, **value}
    key = {"status-update": "statusUpdate", "artifact-update": "artifactUpdate"}.get(kind, kind)
    return {key: value}


def text_of(parts: Any) -> str:
    """The text of a message's parts, joined."""
    if not isinstance(parts, list):
        return ""
    return "".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))


def now() -> str:
    """A status timestamp: ISO 8601 in UTC, to the millisecond."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def message_v10(message: dict[str, Any]) -> dict[str, Any]:
    """A client's message in 1.0's spelling, whichever version wrote it: the task's history keeps it so."""
    out = {k: v for k, v in message.items() if k not in ("kind", "role", "parts")}
    out["role"] = role_for(None, "user" if is_user(message.get("role")) else "agent")
    out["parts"] = [part_v10(p) for p in message.get("parts") or () if isinstance(p, dict)]
    return out


def part_v10(part: dict[str, Any]) -> dict[str, Any]:
    """A part in 1.0's spelling: its kind told by its one key (`text`, `data`, `raw`, `url`)."""
    kind = part_kind(part)
    file = part.get("file")
    if kind != "file" or not isinstance(file, dict):
        return {k: v for k, v in part.items() if k != "kind"}
    out: dict[str, Any] = {"raw": file["bytes"]} if "bytes" in file else {"url": file.get("uri")}
    if file.get("mimeType"):
        out["mediaType"] = file["mimeType"]
    if file.get("name"):
        out["filename"] = file["name"]
    return out


def task_v03(task: dict[str, Any]) -> dict[str, Any]:
    """A task kept in 1.0's spelling, for a 0.3 client: `kind` on each object, lowercase states and roles, 0.3's
    file parts."""
    out = {**task, "kind": "task"}
    status = task.get("status")
    if isinstance(status, dict):
        out["status"] = {**status, "state": state(status.get("state"))}
        if isinstance(status.get("message"), dict):
            out["status"]["message"] = message_v03(status["message"])
    if isinstance(task.get("history"), list):
        out["history"] = [message_v03(m) for m in task["history"] if isinstance(m, dict)]
    if isinstance(task.get("artifacts"), list):
        out["artifacts"] = [{**a, "parts": [part_v03(p) for p in a.get("parts") or () if isinstance(p, dict)]}
                            for a in task["artifacts"] if isinstance(a, dict)]
    return out


def message_v03(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "kind": "message", "role": "user" if is_user(message.get("role")) else "agent",
            "parts": [part_v03(p) for p in message.get("parts") or () if isinstance(p, dict)]}


def part_v03(part: dict[str, Any]) -> dict[str, Any]:
    kind = part_kind(part)
    if kind == "text":
        return {**part, "kind": "text"}
    if kind == "data":
        return {**part, "kind": "data"}
    if kind == "file" and "file" not in part:
        file = {"bytes": part["raw"]} if "raw" in part else {"uri": part.get("url")}
        if part.get("mediaType"):
            file["mimeType"] = part["mediaType"]
        if part.get("filename"):
            file["name"] = part["filename"]
        return {"kind": "file", "file": file}
    return part
