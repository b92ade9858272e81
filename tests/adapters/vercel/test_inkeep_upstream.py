"""The Inkeep look-alike upstream (`tests/inkeep_upstream.py`) itself, over real HTTP: conversations kept by id,
409 on a repeated message id, 400 on parts Inkeep's schema refuses, and streams the real `ai` client accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from helpers import sse_payloads
from inkeep_upstream import create_inkeep_app
from node_clients import run_vercel_chat, verify_vercel
from servers import Served


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with Served(create_inkeep_app(keep_alive=True)) as server:
        yield server.url


def user(text: str, message_id: str | None = None, **extra: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "user", "parts": [{"type": "text", "text": text}], **extra}
    if message_id is not None:
        message["id"] = message_id
    return message


def chat(url: str, body: dict[str, Any], path: str = "/run/api/chat") -> httpx.Response:
    return httpx.post(url + path, json=body, timeout=10)


def chunks(response: httpx.Response) -> list[dict[str, Any]]:
    payloads = sse_payloads(response.content)
    assert payloads[-1] == b"[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def text_of(parsed: list[dict[str, Any]]) -> str:
    return "".join(c["delta"] for c in parsed if c["type"] == "text-delta")


def test_two_turns_share_one_conversation(url: str) -> None:
    first = chat(url, {"conversationId": "conv-turns", "messages": [user("hello", "m-turn-1")]})
    # Inkeep reads only the last user message, so a full history resent by a client does not count twice.
    second = chat(url, {"conversationId": "conv-turns", "messages": [
        user("hello", "m-turn-1"), {"role": "assistant", "parts": [{"type": "text", "text": "..."}]},
        user("again", "m-turn-2")]}, path="/api/chat")
    assert first.status_code == second.status_code == 200
    assert {k: first.headers[k] for k in ("content-type", "cache-control", "x-vercel-ai-data-stream",
                                          "x-accel-buffering")} == {
        "content-type": "text/event-stream", "cache-control": "no-cache", "x-vercel-ai-data-stream": "v2",
        "x-accel-buffering": "no"}
    assert first.content.startswith(b": keep-alive\n\n")
    assert text_of(chunks(first)) == "You said: hello. This is user turn 1."
    assert text_of(chunks(second)) == "You said: again. This is user turn 2."
    history = httpx.get(f"{url}/conversations/conv-turns").json()
    assert history == [{"role": "user", "text": "hello"},
                       {"role": "assistant", "text": "You said: hello. This is user turn 1."},
                       {"role": "user", "text": "again"},
                       {"role": "assistant", "text": "You said: again. This is user turn 2."}]
    assert [b["messages"][-1]["id"] for b in httpx.get(f"{url}/captured").json()
            if b.get("conversationId") == "conv-turns"] == ["m-turn-1", "m-turn-2"]
    # No conversationId: a brand-new conversation every time.
    assert text_of(chunks(chat(url, {"messages": [{"role": "user", "content": "hi"}]}))).endswith("user turn 1.")


def test_repeated_message_id_is_409(url: str) -> None:
    assert chat(url, {"conversationId": "conv-409", "messages": [user("one", "m-dup")]}).status_code == 200
    again = chat(url, {"conversationId": "conv-409", "messages": [user("one", "m-dup")]})
    assert again.status_code == 409
    assert again.json()["detail"] == "Message with id 'm-dup' already exists in this project"
    # body.messageId is the fallback id; ids are unique per project, not per conversation.
    assert chat(url, {"conversationId": "conv-409b", "messageId": "m-dup", "messages": [
        {"role": "user", "content": "two"}]}).status_code == 409
    assert [e["role"] for e in httpx.get(f"{url}/conversations/conv-409").json()] == ["user", "assistant"]


@pytest.mark.parametrize("part", [
    {"type": "reasoning", "text": "thinking"},
    {"type": "dynamic-tool", "toolName": "x", "toolCallId": "c1", "state": "output-available", "input": {},
     "output": 1},
    {"type": "source-url", "sourceId": "s1", "url": "https://example.com"},
    {"type": "source-document", "sourceId": "s2", "mediaType": "text/plain", "title": "t"},
])
def test_parts_outside_inkeeps_schema_are_400(url: str, part: dict[str, Any]) -> None:
    response = chat(url, {"conversationId": "conv-400", "messages": [
        user("hi", "m-400-a"), {"role": "assistant", "parts": [part]}, user("again", "m-400-b")]})
    assert response.status_code == 400 and response.json()["success"] is False
    assert response.json()["error"]["name"] == "ZodError"
    assert httpx.get(f"{url}/conversations/conv-400").status_code == 404  # nothing stored, no run


def test_other_400s(url: str) -> None:
    assert chat(url, {"messages": [{"role": "assistant", "content": "no user"}]}).status_code == 400
    assert chat(url, {"messages": [{"role": "robot", "content": "hi"}]}).status_code == 400
    assert chat(url, {"conversationId": None, "messages": [user("hi")]}).status_code == 400
    assert chat(url, {"messages": [user("hi", "bad id!")]}).status_code == 400
    # Parts Inkeep does accept, and unknown body keys, are fine.
    ok = chat(url, {"id": "chat-1", "trigger": "submit-message", "messages": [
        {"role": "user", "content": "hi", "parts": [{"type": "step-start"}, {"type": "data-x", "data": {}},
                                                    {"type": "tool-foo", "toolCallId": "c", "state": "x"}]}]})
    assert ok.status_code == 200


def test_streams_are_valid_for_the_real_ai_client(url: str) -> None:
    bodies = {name: chat(url, {"conversationId": f"conv-valid-{name}", "messages": [user(text)]}).content
              for name, text in (("text", "hello"), ("weather", "What is the weather?"), ("fail", "please fail"))}
    results = verify_vercel(bodies)
    for name, result in results.items():
        assert result["ok"], (name, result)
        assert result["done"] and result["in_band_error"] is None
        assert not {"finish", "start-step", "finish-step", "error"} & set(result["types"])
        assert result["types"][:2] == ["start", "data-operation"]

    weather = chunks(httpx.Response(200, content=bodies["weather"]))
    assert len({c["id"] for c in weather if c["type"].startswith("text-")}) == 1  # ONE text id, two segments
    assert [c["type"] for c in weather].count("text-start") == 2
    assert {"data-summary", "data-artifact", "tool-input-delta"} <= {c["type"] for c in weather}
    assert "".join(c["inputTextDelta"] for c in weather if c["type"] == "tool-input-delta") == '{"city":"Paris"}'
    assert weather[-1]["data"]["type"] == "completion"
    parts = [p["type"] for p in results["weather"]["message"]["parts"]]  # type: ignore[index]
    assert "tool-get_weather" in parts and parts.count("text") == 2

    failed = chunks(httpx.Response(200, content=bodies["fail"]))
    assert failed[-1]["type"] == "data-operation"
    assert {k: failed[-1]["data"][k] for k in ("type", "message", "severity", "code", "agent")} == {
        "type": "error", "message": "scripted upstream failure", "severity": "error", "code": "agent_failed",
        "agent": "qa"}


def test_real_chat_keeps_one_conversation(url: str) -> None:
    run = run_vercel_chat({"url": url + "/run/api/chat", "chatId": "conv-chat", "inkeep": True,
                           "steps": [{"send": "hello"}, {"send": "again"}]})
    assert [step["status"] for step in run["steps"]] == ["ready", "ready"]
    last = run["steps"][1]["messages"][-1]
    assert [p["text"] for p in last["parts"] if p["type"] == "text"] == ["You said: again. This is user turn 2."]
    assert [p["data"]["type"] for p in last["parts"] if p["type"] == "data-operation"] == [
        "agent_initializing", "completion"]


def test_stream_false_and_approval_fast_path(url: str) -> None:
    plain = chat(url, {"conversationId": "conv-plain", "stream": False, "messages": [user("hi")]}).json()
    assert plain["object"] == "chat.completion"
    assert plain["choices"][0]["message"]["content"] == "You said: hi. This is user turn 1."
    approval = {"role": "assistant", "parts": [{"type": "tool-delete", "toolCallId": "call-1",
                                                "state": "approval-responded",
                                                "approval": {"id": "a1", "approved": True}}]}
    answered = chat(url, {"conversationId": "conv-plain", "messages": [approval]})
    assert answered.status_code == 200 and answered.json()["results"][0]["approved"] is True
    assert chat(url, {"messages": [approval]}).status_code == 400
    assert len(httpx.get(f"{url}/conversations/conv-plain").json()) == 2  # no run started


def test_an_upstream_that_answers_as_the_ai_sdk_again_is_sent_useChat_again() -> None:
    """Inkeep is learned from a reply's headers; a later reply with the AI SDK's own header unlearns it, so the
    next conversations get their whole history again rather than Inkeep's last message alone."""
    from e2e import post, request_body
    from helpers import encode
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from gateway.config import GatewayConfig
    from gateway.core.events import RunFinished, RunStarted, TextDelta, TextEnd, TextStart
    from gateway.server.app import create_app

    bodies: list[dict[str, Any]] = []
    run = encode("vercel", [RunStarted(), TextStart("m"), TextDelta("m", "ok"), TextEnd("m"), RunFinished()])

    async def chat(request: Request) -> Response:
        body = await request.json()
        bodies.append(body)
        inkeep = "inkeep" in str(body["messages"][-1])
        header = {"x-vercel-ai-data-stream": "v2"} if inkeep else {"x-vercel-ai-ui-message-stream": "v1"}
        return Response(run, media_type="text/event-stream", headers=header)

    with Served(Starlette(routes=[Route("/api/chat", chat, methods=["POST"])])) as upstream:
        config = GatewayConfig.model_validate({"store": {"url": "memory://"}, "routes": [
            {"paths": ["/in"], "client_dialects": ["ag-ui"], "upstream": {"url": upstream.url + "/api/chat",
                                                                          "dialect": "vercel"}}]})
        with Served(create_app(config)) as gateway, httpx.Client(timeout=10) as http:
            def say(thread: str, *texts: str) -> None:
                messages = []
                for index, text in enumerate(texts):
                    if index:
                        messages.append({"id": f"a{index}", "role": "assistant", "content": "ok"})
                    messages.append({"id": f"u{index}", "role": "user", "content": text})
                post(http, f"{gateway.url}/in", request_body("ag-ui", messages, thread))

            say("one", "hello inkeep")  # answered as Inkeep: learned
            say("two", "first")  # sent as to Inkeep, answered as the AI SDK: unlearned
            say("two", "first", "second")
    assert len(bodies[-1]["messages"]) == 3, bodies[-1]  # the whole history, as useChat sends it
