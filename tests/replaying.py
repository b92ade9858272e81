"""Helpers for recording conversations through a gateway and replaying them: a two-turn conversation as each
dialect's client holds it, events compared with the ids each run mints taken out, and replays mounted side by
side."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Any

import httpx
import orjson
from e2e import Reply, post, request_body, user_message
from starlette.types import Receive, Scope, Send

from gateway.core.events import Event, Raw, TextDelta
from gateway.core.ids import new_id
from gateway.recordings.replay import ReplayApp

PROMPTS = ("What is the weather in Paris?", "hello")


def assistant_message(dialect: str, text: str) -> dict[str, Any]:
    if dialect == "ag-ui":
        return {"id": new_id("a"), "role": "assistant", "content": text}
    if dialect == "vercel":
        return {"id": new_id("a"), "role": "assistant", "parts": [{"type": "text", "text": text}]}
    return {"role": "assistant", "content": text}


def converse(http: httpx.Client, url: str, client: str, conversation: str,
             prompts: tuple[str, ...] = PROMPTS) -> list[Reply]:
    """A conversation of `prompts`, each turn sent as the client dialect sends it: the whole history for the
    dialects that send it, only the new message for those whose servers keep it. The messages' ids are fixed by
    the conversation's name, so that a second run of it sends the same requests."""
    history: list[dict[str, Any]] = []
    replies: list[Reply] = []
    full = client in ("ag-ui", "vercel", "agent-respond")
    for turn, text in enumerate(prompts):
        message = user_message(client, text)
        if "id" in message:
            message["id"] = f"{conversation}-u{turn}"
        messages = [*history, message] if full else [message]
        body = request_body(client, messages, conversation)
        if client == "ag-ui":
            body["runId"] = f"{conversation}-run{turn}"
        reply = Reply(client, post(http, url, body))
        replies.append(reply)
        if full and client == "agent-respond" and reply.response.status_code == 200:
            history = [*messages, *[{k: v for k, v in m.items() if k in ("role", "content", "tool_calls",
                                                                       "tool_call_id", "name")}
                                    for m in reply.response.json()["messages"]]]
        elif full:
            answer = assistant_message(client, reply.text)
            if "id" in answer:
                answer["id"] = f"{conversation}-a{turn}"
            history = [*messages, answer]
    return replies


_IDS = ("id", "message_id", "tool_call_id", "thread_id", "run_id", "parent_run_id", "parent_message_id")


def normalized(events: list[Event]) -> list[Any]:
    """Events as a client sees them, with each id replaced by the order it first appeared in: the ids a run
    mints anew (the gateway's synthesized message ids, A2A task ids) differ between two runs of the same reply."""
    names: dict[str, str] = {}

    def rename(value: Any) -> Any:
        if isinstance(value, str):
            return names.setdefault(value, f"id{len(names)}")
        return value

    def plain(value: Any) -> Any:
        if is_dataclass(value) and not isinstance(value, type):
            value = asdict(value)
        if isinstance(value, dict):
            return {k: rename(v) if k in _IDS else plain(v) for k, v in value.items()}
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    found = []
    for event in events:
        if isinstance(event, Raw):
            found.append((type(event).__name__, sorted(event.event)))
        else:
            found.append((type(event).__name__, plain(event)))
    return found


def text_of(events: list[Event]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextDelta))


class Replays:
    """Several replays in one server: `/<name>/...` is replay `name`'s `...`."""

    def __init__(self) -> None:
        self.apps: dict[str, ReplayApp] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        name, _, rest = scope["path"].lstrip("/").partition("/")
        app = self.apps.get(name)
        if app is None:
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": orjson.dumps({"error": f"no replay {name}"})})
            return
        await app({**scope, "path": "/" + rest, "root_path": f"/{name}"}, receive, send)
