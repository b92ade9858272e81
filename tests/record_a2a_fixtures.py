"""Re-record `tests/fixtures/a2a/` from the real A2A peer (`a2a-sdk` 1.3.0, `tests/peers/a2a_agent.py`).

    .venv/bin/python tests/record_a2a_fixtures.py          # about 15 s
    .venv/bin/python tests/record_a2a_fixtures.py --ping   # also the 16 s stream that shows the keep-alive ping

Every file is a body exactly as it crossed the wire (httpx `iter_raw`, no decoding), and the script asserts the
status and content type each was answered with. Ids (tasks, artifacts, messages the server makes) and timestamps
differ on each run; the request side uses fixed ids: contextId "ctx-<scenario>", messageId "msg-<scenario>-<n>".

tests/fixtures/a2a/*.sse: response streams (HTTP 200, `text/event-stream; charset=utf-8`, CRLF line ends).
They join the decode/translate matrix of `tests/helpers.py` once the `a2a` dialect is in the registry.

    a2a_sdk_jsonrpc_<scenario>.sse     JSON-RPC 1.0 SendStreamingMessage (`A2A-Version: 1.0`) to POST /, where
                                       <scenario> is a keyword of the agent: echo, history (echo, second turn of
                                       the context), weather, interrupt, interrupt_resume (the answer, same taskId),
                                       approve, auth, fail, crash (ends in an `event: error` frame), message, slow,
                                       hang_cancel (CancelTask sent on another connection after the third frame;
                                       the stream then carries CANCELED)
    a2a_sdk_jsonrpc_hang_ping_cancel.sse   (--ping) hang left 16 s: sse-starlette's `: ping` comment, then cancel
    a2a_sdk_rest_{echo,interrupt,crash}.sse   HTTP+JSON 1.0: POST /message:stream, no JSON-RPC envelope
    a2a_sdk_v03_jsonrpc_<scenario>.sse   0.3 `message/stream` (`A2A-Version: 0.3`) through the compat layer: echo,
                                       interrupt, weather, fail, crash (its error frame has no `event:` line)
    a2a_sdk_v03_rest_echo.sse          0.3 HTTP+JSON: POST /v1/message:stream (0.3 proto JSON: `content`, not `parts`)

tests/fixtures/a2a/responses/: JSON bodies (`application/json`; HTTP+JSON success `application/a2a+json`).

    a2a_sdk_card.json, a2a_sdk_plain_card.json     GET /.well-known/agent-card.json, /plain/.well-known/...
    a2a_sdk_jsonrpc_send.json                      SendMessage (echo): {"result": {"task": {...COMPLETED}}}
    a2a_sdk_jsonrpc_send_interrupt.json            SendMessage stopping at INPUT_REQUIRED
    a2a_sdk_jsonrpc_send_message.json              SendMessage answered with a Message: {"result": {"message"}}
    a2a_sdk_jsonrpc_cancel.json                    CancelTask's answer (the Task, CANCELED) in hang_cancel
    a2a_sdk_jsonrpc_get_task.json                  GetTask after interrupt_resume: history and artifacts
    a2a_sdk_jsonrpc_error_no_version.json          SendStreamingMessage without A2A-Version: -32009, HTTP 200
    a2a_sdk_jsonrpc_error_finished_task.json       a message to the COMPLETED task: -32004, HTTP 200
    a2a_sdk_jsonrpc_error_task_not_found.json      a taskId the server never made: -32001
    a2a_sdk_jsonrpc_error_context_mismatch.json    a taskId with another task's contextId: -32602
    a2a_sdk_jsonrpc_error_streaming_unsupported.json   SendStreamingMessage to /plain/: -32004
    a2a_sdk_jsonrpc_error_cancel_finished.json     CancelTask of a finished task: -32002
    a2a_sdk_jsonrpc_error_unknown_method.json      an unknown method: -32601
    a2a_sdk_rest_send.json                         POST /message:send: {"task": {...}} (`application/a2a+json`)
    a2a_sdk_rest_error_no_version.json             POST /message:stream without A2A-Version: HTTP 400, google.rpc-style
    a2a_sdk_v03_jsonrpc_send.json                  0.3 `message/send`: the 0.3 Task (kind, lowercase states)

tests/fixtures/a2a/requests/: request bodies as the real clients sent them (from their request dumps), the
Python `a2a-sdk` client (`a2a_sdk_py_*`) and `@a2a-js/sdk` 1.3.0 (`a2a_js_*`):

    *_jsonrpc_stream.json, *_jsonrpc_resume.json (taskId + contextId), *_jsonrpc_send.json (--no-stream),
    *_jsonrpc_cancel.json, *_rest_stream.json, *_v03_jsonrpc_stream.json, *_v03_rest_stream.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from node_clients import run_a2a_send
from peers_env import a2a_upstream, run_a2a_client

OUT = Path(__file__).resolve().parent / "fixtures" / "a2a"
SSE = "text/event-stream; charset=utf-8"
V10 = {"A2A-Version": "1.0"}
V03 = {"A2A-Version": "0.3"}


def message(scenario: str, text: str, n: int = 1, *, task_id: str | None = None) -> dict[str, Any]:
    """params.message as a2a-sdk's client sends it (1.0)."""
    out: dict[str, Any] = {"messageId": f"msg-{scenario}-{n}", "contextId": f"ctx-{scenario}"}
    if task_id:
        out["taskId"] = task_id
    return {**out, "role": "ROLE_USER", "parts": [{"text": text}]}


def message_03(scenario: str, text: str) -> dict[str, Any]:
    """params.message as a2a-sdk's 0.3 compat client sends it."""
    return {"kind": "message", "messageId": f"msg-{scenario}-1", "contextId": f"ctx-{scenario}",
            "parts": [{"kind": "text", "text": text}], "role": "user"}


def envelope(method: str, params: dict[str, Any], request_id: int | str = 1) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode()


def send_message(msg: dict[str, Any]) -> dict[str, Any]:
    return {"message": msg, "configuration": {}}


class Recorder:
    def __init__(self, url: str) -> None:
        self.url = url
        self.http = httpx.Client(timeout=30)
        self.written: list[Path] = []

    def write(self, name: str, body: bytes) -> None:
        path = OUT / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
        self.written.append(path)

    def exchange(self, method: str, path: str, content: bytes | None, headers: dict[str, str], *,
                 status: int = 200, content_type: str = "application/json") -> tuple[bytes, httpx.Response]:
        request_headers = {"content-type": "application/json", **headers} if content is not None else headers
        with self.http.stream(method, self.url + path, content=content, headers=request_headers) as response:
            body = b"".join(response.iter_raw())
        assert response.status_code == status, (path, response.status_code, body[:300])
        assert response.headers["content-type"] == content_type, (path, response.headers["content-type"])
        return body, response

    def stream(self, name: str, path: str, content: bytes, headers: dict[str, str]) -> bytes:
        body, _ = self.exchange("POST", path, content, headers, content_type=SSE)
        assert body.endswith(b"\r\n\r\n"), (name, body[-200:])
        self.write(name, body)
        return body

    def json(self, name: str, method: str, path: str, content: bytes | None, headers: dict[str, str], *,
             status: int = 200, content_type: str = "application/json") -> dict[str, Any]:
        body, _ = self.exchange(method, path, content, headers, status=status, content_type=content_type)
        self.write(name, body)
        parsed: dict[str, Any] = json.loads(body)
        return parsed

    def cancel_while_streaming(self, name: str, cancel_name: str, after_frames: int, wait: float = 0.0) -> None:
        """hang: CancelTask on another connection once `after_frames` frames (and `wait` seconds) went by."""
        content = envelope("SendStreamingMessage", send_message(message(name, "hang on")))
        chunks: list[bytes] = []
        headers = {"content-type": "application/json", **V10}
        with self.http.stream("POST", self.url + "/", content=content, headers=headers) as response:
            assert response.headers["content-type"] == SSE
            cancelled = False
            for chunk in response.iter_raw():
                chunks.append(chunk)
                so_far = b"".join(chunks)
                if not cancelled and so_far.count(b"\r\n\r\n") >= after_frames:
                    time.sleep(wait)
                    first = json.loads(so_far.split(b"\r\n", 1)[0].removeprefix(b"data: "))
                    task_id = first["result"]["task"]["id"]
                    with httpx.Client(timeout=30) as other:  # its own connection, as a second client would
                        answer = other.post(self.url + "/", content=envelope("CancelTask", {"id": task_id}, 2),
                                            headers=headers)
                    assert answer.status_code == 200 and "result" in answer.json(), answer.text
                    if cancel_name:
                        self.write(cancel_name, answer.content)
                    cancelled = True
        body = b"".join(chunks)
        assert b"TASK_STATE_CANCELED" in body
        self.write(f"a2a_sdk_jsonrpc_{name}.sse", body)


def record_streams(r: Recorder, ping: bool) -> None:
    def jsonrpc(scenario: str, text: str, n: int = 1, task_id: str | None = None, context: str | None = None) -> bytes:
        msg = message(context or scenario, text, n, task_id=task_id)
        return r.stream(f"a2a_sdk_jsonrpc_{scenario}.sse", "/", envelope("SendStreamingMessage", send_message(msg)),
                        V10)

    jsonrpc("echo", "hello there")
    jsonrpc("history", "hello there", context="echo", n=2)
    jsonrpc("weather", "what is the weather in Paris?")
    first = jsonrpc("interrupt", "please interrupt")
    task_id = json.loads(first.split(b"\r\n", 1)[0].removeprefix(b"data: "))["result"]["task"]["id"]
    jsonrpc("interrupt_resume", "yes", n=2, task_id=task_id, context="interrupt")
    r.json("responses/a2a_sdk_jsonrpc_get_task.json", "POST", "/", envelope("GetTask", {"id": task_id}), V10)
    r.json("responses/a2a_sdk_jsonrpc_error_finished_task.json", "POST", "/", envelope(
        "SendStreamingMessage", send_message(message("interrupt", "once more", 3, task_id=task_id))), V10)
    r.json("responses/a2a_sdk_jsonrpc_error_context_mismatch.json", "POST", "/", envelope(
        "SendStreamingMessage", send_message(message("elsewhere", "yes", task_id=task_id))), V10)
    r.json("responses/a2a_sdk_jsonrpc_error_cancel_finished.json", "POST", "/",
           envelope("CancelTask", {"id": task_id}), V10)
    jsonrpc("approve", "approve the deletion")
    jsonrpc("auth", "auth first")
    jsonrpc("fail", "this will fail")
    jsonrpc("crash", "crash now")
    jsonrpc("message", "just a message")
    jsonrpc("slow", "be slow")
    r.cancel_while_streaming("hang_cancel", "responses/a2a_sdk_jsonrpc_cancel.json", after_frames=3)
    if ping:
        r.cancel_while_streaming("hang_ping_cancel", "", after_frames=3, wait=16)

    r.stream("a2a_sdk_rest_echo.sse", "/message:stream",
             json.dumps(send_message(message("rest", "hello rest"))).encode(), V10)
    r.stream("a2a_sdk_rest_interrupt.sse", "/message:stream",
             json.dumps(send_message(message("rest-interrupt", "please interrupt"))).encode(), V10)
    r.stream("a2a_sdk_rest_crash.sse", "/message:stream",
             json.dumps(send_message(message("rest-crash", "crash now"))).encode(), V10)

    for scenario, text in (("echo", "hello old"), ("interrupt", "please interrupt"),
                           ("weather", "what is the weather in Paris?"), ("fail", "this will fail"),
                           ("crash", "crash now")):
        params = {"configuration": {"blocking": True}, "message": message_03(f"v03-{scenario}", text)}
        r.stream(f"a2a_sdk_v03_jsonrpc_{scenario}.sse", "/", envelope("message/stream", params), V03)
    rest_03 = {"message": {"messageId": "msg-v03-rest-1", "contextId": "ctx-v03-rest", "role": "ROLE_USER",
                           "content": [{"text": "hello old rest"}]}, "configuration": {"blocking": True}}
    r.stream("a2a_sdk_v03_rest_echo.sse", "/v1/message:stream", json.dumps(rest_03).encode(), V03)


def record_responses(r: Recorder) -> None:
    r.json("responses/a2a_sdk_card.json", "GET", "/.well-known/agent-card.json", None, {})
    r.json("responses/a2a_sdk_plain_card.json", "GET", "/plain/.well-known/agent-card.json", None, {})
    send = envelope("SendMessage", send_message(message("send", "hello")))
    assert "task" in r.json("responses/a2a_sdk_jsonrpc_send.json", "POST", "/", send, V10)["result"]
    send = envelope("SendMessage", send_message(message("send-interrupt", "please interrupt")))
    r.json("responses/a2a_sdk_jsonrpc_send_interrupt.json", "POST", "/", send, V10)
    send = envelope("SendMessage", send_message(message("send-message", "just a message")))
    assert "message" in r.json("responses/a2a_sdk_jsonrpc_send_message.json", "POST", "/", send, V10)["result"]
    stream = envelope("SendStreamingMessage", send_message(message("no-version", "hello")))
    error = r.json("responses/a2a_sdk_jsonrpc_error_no_version.json", "POST", "/", stream, {})["error"]
    assert error["code"] == -32009
    stream = envelope("SendStreamingMessage", send_message(message("not-found", "hello", task_id="no-such-task")))
    error = r.json("responses/a2a_sdk_jsonrpc_error_task_not_found.json", "POST", "/", stream, V10)["error"]
    assert error["code"] == -32001
    stream = envelope("SendStreamingMessage", send_message(message("plain", "hello")))
    error = r.json("responses/a2a_sdk_jsonrpc_error_streaming_unsupported.json", "POST", "/plain/", stream,
                   V10)["error"]
    assert error["code"] == -32004
    unknown = envelope("SendStreamingMessages", send_message(message("unknown", "hello")))
    assert r.json("responses/a2a_sdk_jsonrpc_error_unknown_method.json", "POST", "/", unknown,
                  V10)["error"]["code"] == -32601
    rest = json.dumps(send_message(message("rest-send", "hello rest"))).encode()
    r.json("responses/a2a_sdk_rest_send.json", "POST", "/message:send", rest, V10,
           content_type="application/a2a+json")
    r.json("responses/a2a_sdk_rest_error_no_version.json", "POST", "/message:stream", rest, {}, status=400)
    params = {"configuration": {"blocking": True}, "message": message_03("v03-send", "hello old")}
    r.json("responses/a2a_sdk_v03_jsonrpc_send.json", "POST", "/", envelope("message/send", params), V03)


def record_requests(r: Recorder) -> None:
    """The bodies the two real clients send, from their request dumps."""
    def save(prefix: str, name: str, run: dict[str, Any], index: int = -1) -> None:
        assert run["error"] is None, run["error"]
        posts = [q for q in run["requests"] if q["method"] == "POST"]
        r.write(f"requests/{prefix}_{name}.json", posts[index]["raw"].encode())

    def py(url: str, text: str, **options: Any) -> dict[str, Any]:
        run = run_a2a_client(url, text, **options)
        return {"responses": run.responses, "requests": run.requests, "error": run.error}

    def js(url: str, text: str, **options: Any) -> dict[str, Any]:
        return dict(run_a2a_send(url + "/", text, **options))

    for prefix, client in (("a2a_sdk_py", py), ("a2a_js", js)):
        save(prefix, "jsonrpc_stream", client(r.url, "hello", context_id="ctx-1", message_id="msg-1"))
        asked = client(r.url, "please interrupt", context_id="ctx-2", message_id="msg-2")
        task = asked["responses"][0]["task"]["id"]
        save(prefix, "jsonrpc_resume", client(r.url, "yes", context_id="ctx-2", task_id=task, message_id="msg-3"))
        save(prefix, "jsonrpc_send", client(r.url, "hello", stream=False, message_id="msg-4"))
        save(prefix, "jsonrpc_cancel", client(r.url, "hang on", cancel_after=3, message_id="msg-5"))
        save(prefix, "rest_stream", client(r.url, "hello", binding="http-json", context_id="ctx-6",
                                           message_id="msg-6"))
        save(prefix, "v03_jsonrpc_stream", client(r.url, "hello", version="0.3", context_id="ctx-7",
                                                  message_id="msg-7"))
        save(prefix, "v03_rest_stream", client(r.url, "hello", version="0.3", binding="http-json",
                                               context_id="ctx-8", message_id="msg-8"))


def main() -> None:
    parser = argparse.ArgumentParser(description="Re-record tests/fixtures/a2a from the real a2a-sdk peer.")
    parser.add_argument("--ping", action="store_true", help="also record the 16 s hang stream with a ping")
    args = parser.parse_args()
    with a2a_upstream() as url:
        recorder = Recorder(url)
        record_streams(recorder, args.ping)
        record_responses(recorder)
        record_requests(recorder)
    for path in recorder.written:
        print(f"{path.relative_to(OUT.parent.parent.parent)}  {path.stat().st_size} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
