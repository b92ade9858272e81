"""Runs judged live (`judge:` on a route), over real HTTP: the upstream's reply by its dialect's rules, what the
gateway wrote by the client's; each broken rule counted in `agent_gateway_conformance_violations_total` and the run's
rules logged in one line."""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

import httpx
import orjson
import pytest
from e2e import Reply, judges_settled, post, request_body, user_message
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from adapters import registry
from adapters.ag_ui import proto
from gateway.agent.server import create_agent_app
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.capabilities import JudgedFrames
from gateway.core.conformance import Answer, sse_frame_ends
from gateway.core.events import RunFinished, RunStarted, TextDelta, TextEnd, TextStart
from gateway.core.sse import KEEP_ALIVE
from gateway.core.turn import Message, Turn
from gateway.recordings.capture import RunCapture
from gateway.recordings.judged import judge_run
from gateway.recordings.options import JudgeOptions
from gateway.server.app import create_app
from gateway.server.operations.judging import MAX_PENDING, Judging
from gateway.server.operations.metrics import Metrics
from gateway.server.route import RouteHandler

VIOLATIONS = "agent_gateway_conformance_violations_total"
JUDGED = "agent_gateway_conformance_judged_runs_total"
INSPECTOR_KEY = "inspector-key-for-tests-0123456789"


def _sse(*events: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + orjson.dumps(event) + b"\n\n" for event in events)


STARTED = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
FINISHED = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
SCRIPTS = {
    "run-finished-with-open-text-messages": _sse(
        STARTED, {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "never ended"}, FINISHED),
    "tool-call-args-without-start": _sse(
        STARTED, {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "after a call never started"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m"}, FINISHED),
}
"""AG-UI replies that each break one rule of `@ag-ui/client`'s, by the rule's id."""
THINKING = b": the agent is thinking\n\n"
UNFINISHED = THINKING + _sse(STARTED) + THINKING + _sse(
    {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"}, {"type": "TOOL_CALL_END", "toolCallId": "c"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}) + THINKING + _sse(
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "and never a RUN_FINISHED"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"})
"""An AG-UI reply with comments between its events (each a frame the gateway reads, none an event a judge numbers):
a tool call's arguments without its start, and no terminal event (a rule about no frame)."""
VERCEL_WITHOUT_DONE = _sse({"type": "start"}, {"type": "text-start", "id": "t"},
                           {"type": "text-delta", "id": "t", "delta": "no [DONE] after"},
                           {"type": "text-end", "id": "t"},
                           {"type": "finish"})
"""A UI message stream `useChat` reads, without the `data: [DONE]` the AI SDK's servers end with: a convention."""


def scripted_agent() -> Starlette:
    """An AG-UI agent that answers `/agui/{rule}` with the script that breaks that rule, `/agui-unfinished` with
    `UNFINISHED`, and `/agui-stalls` with a text message begun, then silence."""

    async def respond(request: Request) -> Response:
        return Response(SCRIPTS[request.path_params["rule"]], media_type="text/event-stream")

    async def stalls(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield _sse(STARTED, {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
                       {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "and then"})
            await asyncio.sleep(30)

        return StreamingResponse(body(), media_type="text/event-stream")

    async def without_done(request: Request) -> Response:
        return Response(VERCEL_WITHOUT_DONE, media_type="text/event-stream",
                        headers={"x-vercel-ai-ui-message-stream": "v1"})

    async def unfinished(request: Request) -> Response:
        return Response(UNFINISHED, media_type="text/event-stream")

    return Starlette(routes=[Route("/agui/{rule}", respond, methods=["POST"]),
                             Route("/agui-unfinished", unfinished, methods=["POST"]),
                             Route("/agui-stalls", stalls, methods=["POST"]),
                             Route("/vercel-without-done", without_done, methods=["POST"])])


def route(name: str, client: str, url: str, upstream: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "paths": [f"/{name}"], "client_dialects": [client],
            "upstream": {"url": url, "dialect": upstream}, **extra}


def metric(http: httpx.Client, gateway: str, name: str, **labels: str) -> float:
    """The sum of a metric's samples with these labels on the gateway's `/metrics` (0 when it has none)."""
    total = 0.0
    for line in http.get(f"{gateway}/metrics").text.splitlines():
        if line.startswith(f"{name}{{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def judged(http: httpx.Client, gateway: str, route_name: str, runs: int) -> None:
    """Until the route's judge has settled `runs` runs (counted, once counted and logged what they broke): it judges
    after the reply's last byte, so a client has its reply before the judge is done."""
    deadline = time.monotonic() + 20
    while metric(http, gateway, JUDGED, route=route_name) < runs:
        assert time.monotonic() < deadline, f"the judge of {route_name} settled fewer than {runs} runs"
        time.sleep(0.02)
    assert metric(http, gateway, JUDGED, route=route_name) == runs


def ask(http: httpx.Client, url: str, client: str, text: str, conversation: str) -> Reply:
    return Reply(client, post(http, url, request_body(client, [user_message(client, text)], conversation)))


@pytest.fixture(scope="module")
def scripted() -> Iterator[str]:
    with Served(scripted_agent()) as served:
        yield served.url


@pytest.mark.parametrize("client", ["ag-ui", "vercel"])
@pytest.mark.parametrize("rule", sorted(SCRIPTS))
def test_an_upstream_that_breaks_a_rule_of_its_dialect_is_flagged_on_the_upstream_side_in_the_metric_and_the_log(
        scripted: str, rule: str, client: str, caplog: pytest.LogCaptureFixture) -> None:
    config = GatewayConfig.model_validate({"routes": [
        route("judged", client, f"{scripted}/agui/{rule}", "ag-ui", judge={"sample": 1})]})
    caplog.set_level(logging.WARNING, "agent_gateway.conformance")
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        reply = ask(http, f"{gateway.url}/judged", client, "hi", "broken")
        assert reply.response.status_code == 200
        judged(http, gateway.url, "judged", 1)
        assert metric(http, gateway.url, VIOLATIONS, route="judged", side="upstream", dialect="ag-ui",
                      rule=rule) == 1
        assert metric(http, gateway.url, VIOLATIONS, side="client") == 0  # the gateway wrote what its client reads
    lines = [r for r in caplog.records if r.name == "agent_gateway.conformance"]
    assert len(lines) == 1  # once per run, every rule in it
    line = lines[0]
    fields = vars(line)  # what the log call passed as `extra`
    assert line.levelno == logging.WARNING
    assert fields["route"] == "judged"
    assert fields["request_id"] == reply.response.headers["x-request-id"]
    assert f"upstream:{rule}" in fields["rules"]
    assert f"upstream ag-ui {rule}" in line.getMessage()


@pytest.mark.parametrize("resumable", [False, True])
@pytest.mark.parametrize("client", ["ag-ui", "vercel", "openai-responses"])
def test_a_clean_upstream_flags_nothing_on_either_side(client: str, resumable: bool,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "agent_gateway.conformance")
    with Served(create_agent_app("ag-ui")) as agent:
        config = GatewayConfig.model_validate({"routes": [
            route("clean", client, agent.url + registry.get("ag-ui").paths[0], "ag-ui", judge={"sample": 1},
                  resumable=resumable)]})
        with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
            for number, text in enumerate(["hello", "what is the weather in Paris?"]):
                reply = ask(http, f"{gateway.url}/clean", client, text, f"clean-{number}")
                assert reply.response.status_code == 200 and reply.finished is not None
            judged(http, gateway.url, "clean", 2)
            assert metric(http, gateway.url, VIOLATIONS) == 0
    assert not [r for r in caplog.records if r.name == "agent_gateway.conformance"]


def test_a_broken_convention_is_counted_and_logged_but_no_warning(scripted: str,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    config = GatewayConfig.model_validate({"routes": [
        route("conventions", "ag-ui", f"{scripted}/vercel-without-done", "vercel", judge={"sample": 1})]})
    caplog.set_level(logging.INFO, "agent_gateway.conformance")
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        assert ask(http, f"{gateway.url}/conventions", "ag-ui", "hi", "conventions").finished is not None
        judged(http, gateway.url, "conventions", 1)
        assert metric(http, gateway.url, VIOLATIONS, side="upstream", dialect="vercel", rule="convention-done") == 1
        assert metric(http, gateway.url, VIOLATIONS) == 1
    [line] = [r for r in caplog.records if r.name == "agent_gateway.conformance"]
    assert line.levelno == logging.INFO and "convention-done" in line.getMessage()


@pytest.mark.parametrize("client", ["ag-ui", "vercel"])
def test_an_upstream_stream_the_gateway_cut_is_not_blamed_on_the_upstream(scripted: str, client: str) -> None:
    config = GatewayConfig.model_validate({"routes": [
        route("cut", client, f"{scripted}/agui-stalls", "ag-ui", judge={"sample": 1}, timeouts={"idle": 0.5})]})
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        reply = ask(http, f"{gateway.url}/cut", client, "hi", "cut")
        assert reply.error is not None and "upstream sent nothing" in reply.error.message
        judged(http, gateway.url, "cut", 1)
        # The text message the upstream never ended was cut by the idle deadline, not left open by the upstream;
        # the gateway's error, in its client's dialect, ends the run as the client expects.
        assert metric(http, gateway.url, VIOLATIONS) == 0


def test_a_run_its_client_left_is_not_judged(scripted: str) -> None:
    config = GatewayConfig.model_validate({"routes": [
        route("left", "ag-ui", f"{scripted}/agui-stalls", "ag-ui", judge={"sample": 1})]})
    app = create_app(config, store=MemoryStore())
    with Served(app) as gateway, httpx.Client(timeout=20) as http:
        body = orjson.dumps(request_body("ag-ui", [user_message("ag-ui", "hi")], "left"))
        with http.stream("POST", f"{gateway.url}/left", content=body,
                         headers={"content-type": "application/json"}) as response:
            assert b"TEXT_MESSAGE_CONTENT" in next(response.iter_bytes())  # then it leaves, mid-message
        deadline = time.monotonic() + 20
        while metric(http, gateway.url, "agent_gateway_requests_total", route="left") < 1:  # reported
            assert time.monotonic() < deadline
            time.sleep(0.02)
        judges_settled(app)
        # Cut short by its client, its stream would break rules it kept: it is not judged at all.
        assert metric(http, gateway.url, JUDGED) == 0 and metric(http, gateway.url, VIOLATIONS) == 0


@pytest.mark.parametrize("judge", [None, {"sample": 0}])
def test_a_route_that_judges_no_run_captures_none(scripted: str, judge: dict[str, Any] | None) -> None:
    rule = "tool-call-args-without-start"
    config = GatewayConfig.model_validate({"routes": [
        route("unjudged", "ag-ui", f"{scripted}/agui/{rule}", "ag-ui", **({"judge": judge} if judge else {}))]})
    app = create_app(config, store=MemoryStore())
    handler = next(iter(app.handlers.values()))[0]
    assert isinstance(handler, RouteHandler)
    assert handler.observer is None  # nothing watches its runs: they run the relay's own objects
    with Served(app) as gateway, httpx.Client(timeout=20) as http:
        assert ask(http, f"{gateway.url}/unjudged", "ag-ui", "hi", "unjudged").response.status_code == 200
        assert metric(http, gateway.url, JUDGED) == 0


def test_judge_sample_is_a_share_between_0_and_1() -> None:
    with pytest.raises(ValueError, match="sample"):
        GatewayConfig.model_validate({"routes": [route("r", "ag-ui", "http://127.0.0.1:1/agui", "ag-ui",
                                                       judge={"sample": 1.5})]})


def test_the_inspector_shows_what_the_judge_found_on_the_runs_line(scripted: str) -> None:
    rule = "run-finished-with-open-text-messages"
    config = GatewayConfig.model_validate({
        "routes": [route("judged", "ag-ui", f"{scripted}/agui/{rule}", "ag-ui", judge={"sample": 1})],
        "inspector": {"key": INSPECTOR_KEY}})
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        reply = ask(http, f"{gateway.url}/judged", "ag-ui", "hi", "inspected")
        judged(http, gateway.url, "judged", 1)
        [run] = http.get(f"{gateway.url}/_inspector/api/runs",
                         headers={"authorization": f"Bearer {INSPECTOR_KEY}"}).json()["runs"]
    assert run["request_id"] == reply.response.headers["x-request-id"]
    [found] = run["violations"]
    assert (found["side"], found["dialect"], found["rule"]) == ("upstream", "ag-ui", rule)
    assert "RUN_FINISHED while text messages are still open" in found["message"] and found["frame"] == 3


@pytest.mark.parametrize("client", ["ag-ui", "vercel"])
def test_a_broken_rule_is_placed_on_the_timeline_row_of_the_upstream_frame_that_broke_it(scripted: str,
                                                                                        client: str) -> None:
    config = GatewayConfig.model_validate({
        "routes": [route("placed", client, f"{scripted}/agui-unfinished", "ag-ui", judge={"sample": 1})],
        "inspector": {"key": INSPECTOR_KEY}})
    inspector = {"authorization": f"Bearer {INSPECTOR_KEY}"}
    with Served(create_app(config, store=MemoryStore())) as gateway, httpx.Client(timeout=20) as http:
        ask(http, f"{gateway.url}/placed", client, "hi", "placed")
        judged(http, gateway.url, "placed", 1)
        [run] = http.get(f"{gateway.url}/_inspector/api/runs", headers=inspector).json()["runs"]
        rows = http.get(f"{gateway.url}/_inspector/api/runs/{run['id']}", headers=inspector).json()["rows"]
    found = {v["rule"]: v for v in run["violations"]}
    assert set(found) == {"tool-call-args-without-start", "no-terminal-event"}
    args = found["tool-call-args-without-start"]
    # The judge's second event is the gateway's fourth read: the comments before it are frames no judge numbers.
    assert (args["side"], args["frame"], args["row"]) == ("upstream", 1, 3)
    assert rows[3]["source"] == "upstream" and rows[3]["frame"].startswith('data: {"type":"TOOL_CALL_ARGS"')
    assert found["no-terminal-event"]["row"] is None  # about the stream's end, no frame: the run's own


def test_a_rule_the_gateways_writing_broke_is_placed_on_the_row_whose_events_were_written_as_that_frame() -> None:
    # A gateway that wrote its AG-UI client another dialect (AG-Kit) stands for one whose writing breaks its client's
    # rules: the run is captured as the relay captures it, each read decoded and written, a keep-alive after each
    # write and an event id before it (as a resumable route writes them), none of them a frame any row made.
    capture = RunCapture("run", "route", limit=1 << 20)
    decoder, encoder = capture.tap(registry.get("ag-ui").new_decoder(), registry.get("ag-kit").new_encoder(None))
    capture.upstream_answered(200, [("content-type", "text/event-stream")])
    capture.client_started(200, [(b"content-type", b"text/event-stream")])
    script = SCRIPTS["run-finished-with-open-text-messages"].replace(b"data: ", THINKING + b"data: ")
    for number, read in enumerate(script.split(b"\n\n")[:-1]):
        if out := encoder.encode(decoder.feed(read + b"\n\n")):
            capture.wrote(b"id: %d\n" % number + out)
        capture.wrote(KEEP_ALIVE)
    assert not encoder.encode(decoder.close())
    capture.done()
    found = judge_run(capture, "ag-ui", "ag-ui")
    assert found is not None
    client = {b.violation.rule: b for b in found if b.side == "client"}
    assert set(client) == {"unknown-event-type", "json", "no-terminal-event"}
    # The client's first frame was written for the gateway's sixth read, its second (`[DONE]`) for the eighth.
    assert [(client[rule].violation.index, client[rule].row) for rule in ("unknown-event-type", "json")] == [
        (0, 5), (1, 7)]
    for broken in (client["unknown-event-type"], client["json"]):
        assert broken.row is not None and broken.violation.frame is not None
        assert broken.violation.frame.encode() in b"".join(e.out for e in capture.rows[broken.row].events)
    assert client["no-terminal-event"].row is None


TRICKY = (b": hello\n\ndata: not json 0\r\n\r\n: c\r\revent: message\ndata: not json 1\n\ndata:\n\n"
          b"data: not\ndata: json 2\n\n\ndata: not json 3")
"""An SSE body of frames none of which is JSON, between comments, ended by every kind of line end, one of two data
lines, one empty, the last without its blank line."""


@pytest.mark.parametrize("dialect", sorted(registry.DIALECTS))
def test_each_judges_frames_are_found_where_it_numbers_them(dialect: str) -> None:
    answer = Answer(200, {"content-type": "text/event-stream"}, TRICKY)
    framing = registry.get(dialect).capability(JudgedFrames)
    ends = (framing.ends if framing is not None else sse_frame_ends)(answer)
    about_frames = [v for v in registry.get(dialect).judge(answer) if v.index is not None and v.frame]
    assert about_frames
    for violation in about_frames:
        assert violation.frame is not None and violation.index is not None
        start = ends[violation.index - 1] if violation.index else 0
        assert violation.frame.split("\n")[0].encode() in TRICKY[start:ends[violation.index]], violation


@pytest.mark.skipif(not proto.available(), reason="no protobuf runtime (agent-gateway[proto])")
def test_a_broken_rule_of_a_protobuf_reply_is_placed_on_the_read_that_completed_its_event() -> None:
    events = [STARTED, {"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"},
              {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"},
              {"type": "TEXT_MESSAGE_END", "messageId": "m"},
              {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"}, FINISHED]
    messages = [proto.encode(event) for event in events]
    capture = RunCapture("run", "route", limit=1 << 20)
    upstream = proto.decoder_for(proto.MEDIA_TYPE, 1 << 20)
    decoder, encoder = capture.tap(upstream, registry.get("ag-ui").new_encoder(None))
    capture.upstream_answered(200, [("content-type", proto.MEDIA_TYPE)])
    capture.client_started(200, [(b"content-type", b"text/event-stream")])
    # The capture cuts a read where an SSE frame would end, which a binary body has anywhere: its rows are not its
    # events.
    for read in (b"".join(messages[:5]), messages[5]):
        capture.wrote(encoder.encode(decoder.feed(read)))
    assert not encoder.encode(decoder.close())
    capture.done()
    found = judge_run(capture, "ag-ui", "ag-ui")
    assert found is not None
    [args] = [b for b in found if b.violation.rule == "tool-call-args-without-start"]
    assert args.side == "upstream" and args.violation.index == 4 and args.row is not None
    assert "ToolCallArgs" in [event.kind for event in capture.rows[args.row].events]
    assert args.row != 4


def test_while_a_routes_judge_is_behind_no_run_is_sampled() -> None:
    judging = Judging("r", JudgeOptions(sample=1), Metrics())
    assert judging.sampled()

    async def behind() -> None:
        waiting = [asyncio.get_running_loop().create_future() for _ in range(MAX_PENDING)]
        judging._pending.update(cast(set[asyncio.Task[None]], set(waiting)))
        assert not judging.sampled()  # nothing is captured for a judge that cannot keep up
        judging._pending.clear()
        assert judging.sampled()

    asyncio.run(behind())


@pytest.mark.parametrize("dialect", sorted(registry.DIALECTS))
def test_judging_a_run_leaves_no_reference_cycle(dialect: str) -> None:
    """A judged run's objects go as it is judged, by their counts: on a route judging every run, a cycle a run
    would wait, with the whole reply, for the cycle collector."""
    codec = registry.get(dialect)
    encoder = codec.new_encoder(Turn(conversation_id="c1", messages=[Message("user", "hi", "u1")]))
    body = encoder.encode([RunStarted(thread_id="t", run_id="r"), TextStart("m1"), TextDelta("m1", "hello"),
                           TextEnd("m1"), RunFinished()])
    answer = Answer(encoder.status_code, encoder.headers, body)
    gc.collect()
    gc.disable()
    try:
        codec.judge(answer)
        assert gc.collect() == 0
    finally:
        gc.enable()
