"""Fuzzing every inbound parser through the real HTTP app: whatever a client sends, the gateway answers it.

Bodies are shaped like each dialect's request with random types and values in every field (hypothesis), or are
random bytes. The gateway (served by uvicorn on 127.0.0.1, in front of the fault upstream's plain `ok` run) must
never answer 5xx nor log an error: a bad request gets a 4xx with `{"error": {"code", "message"}}`, and a body that
happens to be valid gets the whole run. Targeted cases follow: invalid UTF-8, content types, an unknown dialect on
an auto-detect path, JSON nested 10,000 deep, huge message counts, tool results and resumes nobody asked for.
"""

from __future__ import annotations

import json
import logging
import string
from collections.abc import Iterator
from typing import Any

import annotated_types
import httpx
import pytest
from e2e import DIALECTS, Reply, request_body, user_message
from faults import FaultUpstream
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from servers import Served

from adapters import registry
from gateway.config import GatewayConfig, Limits
from gateway.conversations.store import MemoryStore
from gateway.core.errors import RequestError
from gateway.core.events import RunFinished
from gateway.server.app import create_app

PAIRS = [(c, u) for c in DIALECTS for u in DIALECTS]
CLIENT_ERRORS = {400, 413, 415, 422}
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LOGGERS = ("agent_gateway", "uvicorn.error", "uvicorn", "asyncio")


class ErrorLog(logging.Handler):
    """Every ERROR the gateway or its server logs: an unhandled exception shows here even when the reply looks
    fine (the response had already started)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def take(self) -> list[str]:
        found = [f"{r.name}: {r.getMessage()} {r.exc_info[1]!r}" if r.exc_info else f"{r.name}: {r.getMessage()}"
                 for r in self.records]
        self.records.clear()
        return found


class Gateway:
    def __init__(self, url: str, errors: ErrorLog) -> None:
        self.url = url
        self.errors = errors
        self.http = httpx.Client(timeout=30)

    def post(self, path: str, content: bytes, content_type: str | None = "application/json") -> httpx.Response:
        headers = {"content-type": content_type} if content_type is not None else {}
        return self.http.post(f"{self.url}{path}", content=content, headers=headers)


ONE_RUN = {"x-fault": "ok?n=2"}
"""The run every upstream plays, also for a dialect that calls paths under its URL (whose query is not sent)."""


@pytest.fixture(scope="module")
def gateway() -> Iterator[Gateway]:
    with FaultUpstream() as upstream:
        routes: list[dict[str, Any]] = [
            {"name": f"{c}-{u}", "paths": [f"/fuzz/{c}/{u}"], "client_dialects": [c],
             "upstream": {"url": upstream.url(u, "ok", n=2), "dialect": u, "headers": ONE_RUN}} for c, u in PAIRS]
        routes += [{"name": f"deep-{c}-{u}", "paths": [f"/deep/{c}/{u}"], "client_dialects": [c],
                    "limits": {"max_json_depth": _deepest_allowed()},
                    "upstream": {"url": upstream.url(u, "ok", n=2), "dialect": u, "headers": ONE_RUN}}
                   for c, u in PAIRS]
        routes.append({"name": "auto", "paths": ["/auto"], "client_dialects": "auto",
                       "upstream": {"url": upstream.url("ag-kit", "ok", n=2), "dialect": "ag-kit"}})
        config = GatewayConfig.model_validate({"routes": routes})
        with Served(create_app(config, store=MemoryStore())) as served:
            errors = ErrorLog()
            loggers = [logging.getLogger(name) for name in LOGGERS]
            for logger in loggers:
                logger.addHandler(errors)
            try:
                gateway = Gateway(served.url, errors)
                yield gateway
                gateway.http.close()
            finally:
                for logger in loggers:
                    logger.removeHandler(errors)


def dumps(value: Any) -> bytes:
    """JSON as any client library may write it: big integers, non-ASCII and all (orjson refuses > 64-bit ints)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode()


def client_dialect_of(path: str, body: Any) -> str:
    if path == "/auto":
        return registry.read_request(body, list(registry.DIALECTS), path)[0].name
    return path.split("/")[2]  # /fuzz/<client>/<upstream>, /deep/<client>/<upstream>


def refusal(response: httpx.Response) -> tuple[int, str]:
    """A refusal's HTTP status and message: the gateway's error body, or a JSON-RPC error, in an HTTP 200 whose
    data says the status (A2A) or with the status itself (MCP)."""
    payload = response.json()
    if "jsonrpc" in payload and response.status_code == 200:
        return int(payload["error"]["data"][0]["metadata"]["status"]), payload["error"]["message"]
    return response.status_code, payload["error"]["message"]


def check_answer(gateway: Gateway, path: str, response: httpx.Response, body: Any) -> None:
    """Never 5xx, never a logged error; a 4xx explains itself; a 200 carries the upstream's whole run."""
    logged = gateway.errors.take()
    assert not logged, f"the gateway logged errors for this request: {logged}"
    assert response.status_code < 500, f"{response.status_code} for {path}: {response.text[:500]}"
    if response.status_code != 200:
        assert response.status_code in CLIENT_ERRORS, f"{response.status_code}: {response.text[:300]}"
        payload = response.json()
        error = payload["error"]
        if "jsonrpc" in payload:  # a JSON-RPC error with the HTTP status (MCP): the gateway's code in its data
            error = {**error, "code": error["data"]["code"]}
        assert isinstance(error["code"], str) and error["code"]
        assert isinstance(error["message"], str) and error["message"], error
        return
    if response.headers["content-type"].startswith("application/json") and "jsonrpc" in response.json() \
            and "error" in response.json():
        # A refusal told as JSON-RPC errors are (A2A): the gateway's status and code ride in its data.
        error = response.json()["error"]
        status = int(error["data"][0]["metadata"]["status"])
        assert status in CLIENT_ERRORS, f"{status}: {response.text[:300]}"
        assert isinstance(error["code"], int) and isinstance(error["message"], str) and error["message"], error
        return
    client = client_dialect_of(path, body)
    reply = Reply(client, response)
    assert reply.error is None, reply.error
    assert isinstance(reply.finished, RunFinished), f"an unfinished run: {response.content[-300:]!r}"
    assert reply.text == "n=0 n=1 ", reply.text


# -- strategies: each dialect's request, every field sometimes the right shape and sometimes anything

leaf = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=12))
anything = st.recursive(leaf, lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=6), kids,
                                                                                          max_size=3), max_leaves=10)
text = st.text(max_size=24)
ident = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1, max_size=10)


def shaped(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly the right shape, sometimes any JSON value at all."""
    return st.one_of(valid, valid, anything)


def _function() -> st.SearchStrategy[Any]:
    return shaped(st.fixed_dictionaries({"name": shaped(ident), "arguments": shaped(text)}))


tool_call = st.fixed_dictionaries({"id": shaped(ident), "function": _function()},
                                  optional={"type": shaped(st.just("function"))})
schema = shaped(st.fixed_dictionaries({"type": shaped(st.just("object"))},
                                      optional={"properties": shaped(st.dictionaries(ident, anything, max_size=2)),
                                                "required": shaped(st.lists(ident, max_size=2))}))

agui_part = st.fixed_dictionaries({"type": shaped(st.sampled_from(["text", "image", "binary", "audio"]))},
                                  optional={"text": shaped(text), "mimeType": shaped(text), "data": shaped(text),
                                            "source": shaped(st.fixed_dictionaries({
                                                "type": shaped(st.sampled_from(["data", "url"])),
                                                "value": shaped(text)}))})
agui_message = st.fixed_dictionaries(
    {"id": shaped(ident),
     "role": shaped(st.sampled_from(["user", "assistant", "system", "developer", "tool", "reasoning", "activity"]))},
    optional={"content": shaped(text | st.lists(agui_part, max_size=2)), "toolCalls": shaped(st.lists(tool_call,
                                                                                                       max_size=2)),
              "toolCallId": shaped(ident), "name": shaped(text), "error": shaped(text),
              "activityType": shaped(text)})
agui_body = st.fixed_dictionaries(
    {"threadId": shaped(ident), "runId": shaped(ident), "messages": shaped(st.lists(agui_message, max_size=4))},
    optional={"state": anything, "forwardedProps": anything, "parentRunId": shaped(ident),
              "protocolVersion": shaped(st.just("1.0")),
              "tools": shaped(st.lists(st.fixed_dictionaries({"name": shaped(ident)}, optional={
                  "description": shaped(text), "parameters": schema}), max_size=2)),
              "context": shaped(st.lists(st.fixed_dictionaries({"description": shaped(text),
                                                                "value": shaped(text)}), max_size=2)),
              "resume": shaped(st.lists(st.fixed_dictionaries(
                  {"interruptId": shaped(ident), "status": shaped(st.sampled_from(["resolved", "cancelled"]))},
                  optional={"payload": anything}), max_size=2))})

agkit_message = st.fixed_dictionaries(
    {"role": shaped(st.sampled_from(["user", "system", "tool", "assistant"]))},
    optional={"content": shaped(text), "toolCallId": shaped(ident), "tool_call_id": shaped(ident),
              "toolCalls": shaped(st.lists(tool_call, max_size=2)), "id": shaped(ident)})
agkit_body = st.fixed_dictionaries(
    {"conversationId": shaped(ident)},
    optional={"messages": shaped(st.lists(agkit_message, max_size=4)),
              "tools": shaped(st.lists(st.fixed_dictionaries({"name": shaped(ident)}, optional={
                  "description": shaped(text), "parameters": shaped(schema.map(json.dumps)) | schema}),
                  max_size=2)),
              "resume": shaped(st.fixed_dictionaries({"interruptId": shaped(ident)},
                                                     optional={"payload": shaped(anything.map(json.dumps))}))})

vercel_part = st.fixed_dictionaries(
    {"type": shaped(st.sampled_from(["text", "reasoning", "file", "tool-get_weather", "dynamic-tool", "step-start",
                                     "data-thing", "source-url"]))},
    optional={"text": shaped(text), "url": shaped(text), "mediaType": shaped(text), "toolCallId": shaped(ident),
              "toolName": shaped(ident), "input": anything, "output": anything, "errorText": shaped(text),
              "state": shaped(st.sampled_from(["input-streaming", "input-available", "approval-requested",
                                               "approval-responded", "output-available", "output-error",
                                               "output-denied"])),
              "approval": shaped(st.fixed_dictionaries({"id": shaped(ident)}, optional={
                  "approved": shaped(st.booleans()), "reason": shaped(text)}))})
vercel_message = st.fixed_dictionaries(
    {"role": shaped(st.sampled_from(["user", "assistant", "system", "tool", "function"]))},
    optional={"id": shaped(ident), "parts": shaped(st.lists(vercel_part, max_size=3)), "content": anything})
vercel_body = st.fixed_dictionaries(
    {"messages": shaped(st.lists(vercel_message, max_size=4))},
    optional={"id": shaped(ident), "trigger": shaped(st.sampled_from(["submit-message", "regenerate-message"])),
              "messageId": shaped(ident), "conversationId": shaped(ident), "extra": anything})

respond_message = st.fixed_dictionaries(
    {"role": shaped(st.sampled_from(["system", "user", "assistant", "tool"]))},
    optional={"content": shaped(text | st.none()), "tool_calls": shaped(st.lists(tool_call, max_size=2) | st.none()),
              "tool_call_id": shaped(ident | st.none()), "name": shaped(text | st.none())})
respond_body = st.fixed_dictionaries(
    {"messages": shaped(st.lists(respond_message, max_size=4))},
    optional={"metadata": shaped(st.fixed_dictionaries({}, optional={"test_case_id": shaped(ident),
                                                                     "turn_index": shaped(st.integers(0, 50))}))})

BODIES: dict[str, st.SearchStrategy[Any]] = {"ag-ui": agui_body, "ag-kit": agkit_body, "vercel": vercel_body,
                                             "agent-respond": respond_body}


def bodies(dialect: str) -> st.SearchStrategy[Any]:
    """Garbage shaped like the dialect's requests; for a dialect without a shape here, its sample request with
    any of its values replaced."""
    if dialect in BODIES:
        return BODIES[dialect]
    sample = registry.get(dialect).sample_request("hi", "fuzz")
    return st.fixed_dictionaries({key: shaped(st.just(value)) for key, value in sample.items()})


# -- structured fuzz


@pytest.mark.parametrize("client", DIALECTS)
@FUZZ
@given(data=st.data())
def test_dialect_shaped_garbage_gets_a_4xx_or_a_whole_run(gateway: Gateway, client: str, data: st.DataObject) -> None:
    body = data.draw(bodies(client), label="body")
    upstream = data.draw(st.sampled_from(DIALECTS), label="upstream")
    path = f"/fuzz/{client}/{upstream}"
    check_answer(gateway, path, gateway.post(path, dumps(body)), body)


@FUZZ
@given(body=st.one_of(*BODIES.values(), st.dictionaries(st.text(max_size=10), anything, max_size=4)))
def test_auto_detect_path_answers_any_shaped_body(gateway: Gateway, body: dict[str, Any]) -> None:
    response = gateway.post("/auto", dumps(body))
    if response.status_code == 400 and response.json()["error"]["code"] == "unknown_dialect":
        with pytest.raises(RequestError):
            registry.read_request(body, list(registry.DIALECTS), "/auto")
    check_answer(gateway, "/auto", response, body)


@FUZZ
@given(raw=st.binary(max_size=400), client=st.sampled_from(DIALECTS))
def test_random_bytes_get_a_4xx(gateway: Gateway, raw: bytes, client: str) -> None:
    path = f"/fuzz/{client}/ag-kit"
    check_answer(gateway, path, gateway.post(path, raw), None)


@FUZZ
@given(data=st.data())
def test_valid_bodies_cut_or_corrupted_get_a_4xx_or_a_whole_run(gateway: Gateway, data: st.DataObject) -> None:
    client = data.draw(st.sampled_from(DIALECTS), label="client")
    raw = bytearray(dumps(request_body(client, [user_message(client, "hello there")], "fuzz")))
    for _ in range(data.draw(st.integers(1, 4), label="edits")):
        at = data.draw(st.integers(0, len(raw)), label="at")
        edit = data.draw(st.sampled_from(["cut", "insert", "flip", "delete"]), label="edit")
        if edit == "cut":
            del raw[at:]
        elif edit == "insert":
            raw[at:at] = data.draw(st.binary(min_size=1, max_size=4), label="bytes")
        elif at < len(raw):
            if edit == "flip":
                raw[at] ^= 1 << data.draw(st.integers(0, 7), label="bit")
            else:
                del raw[at]
    path = f"/fuzz/{client}/ag-ui"
    response = gateway.post(path, bytes(raw))
    try:
        body = json.loads(raw)
    except ValueError:
        body = None
    check_answer(gateway, path, response, body)


@FUZZ
@given(content_type=st.from_regex(r"[a-z]{1,10}/[a-z+.-]{1,16}(; ?charset=[a-z0-9-]{1,8})?", fullmatch=True))
def test_any_content_type_is_json_or_a_415(gateway: Gateway, content_type: str) -> None:
    body = request_body("ag-ui", [user_message("ag-ui", "hi")], "content-types")
    response = gateway.post("/fuzz/ag-ui/ag-kit", dumps(body), content_type)
    media = content_type.split(";")[0]
    if media == "application/json" or media.endswith("+json"):
        check_answer(gateway, "/fuzz/ag-ui/ag-kit", response, body)
    else:
        assert response.status_code == 415, response.text
        assert media in response.json()["error"]["message"]


# -- targeted cases


def test_invalid_utf8_is_a_400(gateway: Gateway) -> None:
    raw = b'{"threadId": "t\xff\xfe", "runId": "r", "messages": []}'
    response = gateway.post("/fuzz/ag-ui/ag-kit", raw)
    assert response.status_code == 400 and response.json()["error"]["code"] == "malformed_request"
    check_answer(gateway, "/fuzz/ag-ui/ag-kit", response, None)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data",
                                          "text/html; charset=utf-8"])
def test_wrong_content_type_is_a_415(gateway: Gateway, content_type: str) -> None:
    body = dumps(request_body("ag-ui", [user_message("ag-ui", "hi")]))
    response = gateway.post("/fuzz/ag-ui/ag-kit", body, content_type)
    assert response.status_code == 415
    assert response.json()["error"]["code"] == "unsupported_media_type"


@pytest.mark.parametrize("client", DIALECTS)
def test_missing_content_type_is_a_415(gateway: Gateway, client: str) -> None:
    """A browser posts without a preflight only what is not JSON: a body with no Content-Type is refused."""
    body = request_body(client, [user_message(client, "hi")], f"no-content-type-{client}")
    response = gateway.post(f"/fuzz/{client}/ag-kit", dumps(body), content_type=None)
    assert "content-type" not in response.request.headers
    check_answer(gateway, f"/fuzz/{client}/ag-kit", response, body)
    status, message = refusal(response)
    assert status == 415 and "got none" in message


@pytest.mark.parametrize("body", [{"hello": "world"}, {}, {"messages": "not a list"}, {"messages": [1, 2]}])
def test_unknown_dialect_on_an_auto_detect_path_is_a_400(gateway: Gateway, body: dict[str, Any]) -> None:
    response = gateway.post("/auto", dumps(body))
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "unknown_dialect" and "AG-UI request (RunAgentInput) needs threadId" in error["message"]
    check_answer(gateway, "/auto", response, body)


@pytest.mark.parametrize("depth", [10_000, 2_000])
@pytest.mark.parametrize("client", DIALECTS)
def test_json_nested_deeper_than_the_parser_goes_is_a_400(gateway: Gateway, client: str, depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    raw = b'{"threadId": "t", "runId": "r", "conversationId": "c", "messages": ' + nested + b"}"
    response = gateway.post(f"/fuzz/{client}/ag-kit", raw)
    assert refusal(response)[0] == 400, response.text[:300]
    check_answer(gateway, f"/fuzz/{client}/ag-kit", response, None)
    assert gateway.http.get(f"{gateway.url}/healthz").text == "ok"


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value}
    return value


# Fields a client may fill with any JSON, and the upstream each reaches: there the gateway writes them out again.
ANY_JSON_FIELDS = [
    pytest.param("ag-ui", "ag-ui", lambda v: {"state": v}, id="ag-ui state to an ag-ui upstream"),
    pytest.param("ag-ui", "ag-ui", lambda v: {"forwardedProps": v}, id="ag-ui forwardedProps to an ag-ui upstream"),
    pytest.param("vercel", "ag-ui", lambda v: {"extra": v}, id="vercel body extras to an ag-ui upstream"),
    pytest.param("ag-ui", "ag-ui", lambda v: {"tools": [{"name": "t", "parameters": v}]},
                 id="ag-ui tool schema to an ag-ui upstream"),
    pytest.param("ag-ui", "ag-kit", lambda v: {"resume": [{"interruptId": "i", "status": "resolved", "payload": v}]},
                 id="ag-ui resume payload to an ag-kit upstream"),
]


@pytest.mark.parametrize(("client", "upstream", "field"), ANY_JSON_FIELDS)
def test_free_form_json_past_the_route_depth_limit_is_a_400(gateway: Gateway, client: str, upstream: str,
                                                            field: Any) -> None:
    body = {**request_body(client, [user_message(client, "deep")], f"deep-{client}-{upstream}"), **field(_nested(300))}
    response = gateway.post(f"/fuzz/{client}/{upstream}", dumps(body))
    assert response.status_code == 400 and "nested deeper than" in response.json()["error"]["message"]
    check_answer(gateway, f"/fuzz/{client}/{upstream}", response, body)


def _deepest_allowed() -> int:
    """The largest `limits.max_json_depth` a configuration may set."""
    bounds = [m.le for m in Limits.model_fields["max_json_depth"].metadata if isinstance(m, annotated_types.Le)]
    return bounds[0] if bounds and isinstance(bounds[0], int) else 1000


@pytest.mark.parametrize(("client", "upstream", "field"), ANY_JSON_FIELDS)
def test_free_form_json_as_deep_as_the_config_allows_is_passed_on_never_a_500(gateway: Gateway, client: str,
                                                                            upstream: str, field: Any) -> None:
    """A route raised to the deepest `max_json_depth` its config takes accepts a body that deep, and must then be
    able to write it out again for the upstream (orjson writes no deeper than 254 levels)."""
    depth = min(_deepest_allowed(), 1000) - 5  # what the field's own wrapping adds stays within the limit
    body = {**request_body(client, [user_message(client, "deep")], f"deep-{client}-{upstream}"),
            **field(_nested(depth))}
    response = gateway.post(f"/deep/{client}/{upstream}", dumps(body))
    check_answer(gateway, f"/deep/{client}/{upstream}", response, body)
    assert response.status_code == 200


def test_integer_past_64_bits_in_a_typed_field_is_a_422(gateway: Gateway) -> None:
    """orjson reads such a number as a float, which pydantic would make an int no encoder can write back."""
    raw = b'{"messages": [{"role": "user", "content": "hi"}], "metadata": {"test_case_id": "big", "turn_index": 1e20}}'
    response = gateway.post("/fuzz/agent-respond/agent-respond", raw)
    assert response.status_code == 422 and "metadata.turn_index" in response.json()["error"]["message"]
    check_answer(gateway, "/fuzz/agent-respond/agent-respond", response, json.loads(raw))


@pytest.mark.parametrize("client", DIALECTS)
def test_a_huge_message_count_is_answered_or_refused_in_time(gateway: Gateway, client: str) -> None:
    messages = [user_message(client, "m") for _ in range(30_000)]
    body = request_body(client, messages, f"huge-count-{client}")
    raw = dumps(body)
    assert len(raw) < 4 * 1024 * 1024  # under the default body limit: the parser has to deal with it
    response = gateway.http.post(f"{gateway.url}/fuzz/{client}/ag-ui", content=raw,
                                 headers={"content-type": "application/json"}, timeout=20)
    check_answer(gateway, f"/fuzz/{client}/ag-ui", response, body)
    assert response.elapsed.total_seconds() < 10
    assert gateway.http.get(f"{gateway.url}/healthz").text == "ok"


@pytest.mark.parametrize(("client", "upstream"), [("ag-ui", "ag-kit"), ("ag-kit", "ag-ui"), ("vercel", "ag-ui"),
                                                  ("agent-respond", "ag-kit")])
def test_a_tool_result_for_a_call_nobody_made_is_answered(gateway: Gateway, client: str, upstream: str) -> None:
    if client == "ag-ui":
        messages = [user_message(client, "hi"), {"id": "t1", "role": "tool", "toolCallId": "nobody", "content": "x"}]
    elif client == "ag-kit":
        messages = [{"role": "tool", "toolCallId": "nobody", "content": "x"}]
    elif client == "vercel":
        messages = [user_message(client, "hi"), {"id": "a1", "role": "assistant", "parts": [
            {"type": "tool-ghost", "toolCallId": "nobody", "state": "output-available", "input": {}, "output": "x"}]}]
    else:
        messages = [user_message(client, "hi"), {"role": "tool", "tool_call_id": "nobody", "content": "x"}]
    body = request_body(client, messages, f"ghost-tool-{client}")
    response = gateway.post(f"/fuzz/{client}/{upstream}", dumps(body))
    check_answer(gateway, f"/fuzz/{client}/{upstream}", response, body)


@pytest.mark.parametrize(("client", "upstream"), [("ag-ui", "ag-kit"), ("ag-ui", "ag-ui"), ("ag-kit", "ag-ui"),
                                                  ("ag-kit", "ag-kit"), ("vercel", "ag-kit")])
def test_a_resume_for_an_unknown_interrupt_is_answered(gateway: Gateway, client: str, upstream: str) -> None:
    if client == "ag-ui":
        extra: dict[str, Any] = {"resume": [{"interruptId": "int-unknown", "status": "resolved", "payload": {"a": 1}}]}
        messages = [user_message(client, "hi")]
    elif client == "ag-kit":
        extra, messages = {"resume": {"interruptId": "int-unknown", "payload": "{\"a\": 1}"}}, []
    else:
        extra = {}
        messages = [user_message(client, "hi"), {"id": "a1", "role": "assistant", "parts": [
            {"type": "tool-delete_file", "toolCallId": "call-unknown", "state": "approval-responded", "input": {},
             "approval": {"id": "int-unknown", "approved": True}}]}]
    body = request_body(client, messages, f"ghost-resume-{client}-{upstream}", **extra)
    response = gateway.post(f"/fuzz/{client}/{upstream}", dumps(body))
    check_answer(gateway, f"/fuzz/{client}/{upstream}", response, body)
