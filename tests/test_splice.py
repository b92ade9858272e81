"""`TextSplice`: a steady text delta from the upstream written to the client as its encoder would write it, in C
(where the compiled build made it) as in the Python it is checked against."""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import orjson
import pytest
from client_bodies import request_body, user_message
from e2e import post
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from adapters import registry
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.core.decoding import JsonSSEDecoder
from gateway.core.encoding import SSEEncoder
from gateway.server.app import create_app
from gateway.server.stream import splice as splice_module
from gateway.server.stream.client import ClientWriter
from gateway.server.stream.splice import MAX_PENDING, PythonTextSplice, RunSplice, canonical, says_steady_frames

try:
    from gateway.server.stream import _splice as native
except ImportError:
    native = None

IMPLEMENTATIONS = [PythonTextSplice] + ([native.TextSplice] if native is not None else [])
BEFORE = b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":'
AFTER = b"}"
PREFIX = b'data: {"type":"text-delta","id":"m1","delta":'
SUFFIX = b"}\n\n"


class Flow:
    write_paused = False


class Transport:
    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)


class Cycle:
    """What a splice reads of uvicorn's httptools response cycle."""

    def __init__(self) -> None:
        self.flow = Flow()
        self.transport = Transport()
        self.disconnected = False
        self.response_complete = False


def armed(implementation: type[Any], cycle: Cycle) -> Any:
    splice = implementation(cycle)
    splice.arm(BEFORE, AFTER, PREFIX, SUFFIX)
    return splice


def piece(string: bytes, end: bytes = b"\n\n") -> bytes:
    return b"data: " + BEFORE + string + AFTER + end


def chunk(body: bytes) -> bytes:
    return b"%x\r\n%b\r\n" % (len(body), body)


@pytest.fixture(params=IMPLEMENTATIONS, ids=lambda implementation: implementation.__module__.rpartition(".")[2])
def implementation(request: pytest.FixtureRequest) -> type[Any]:
    return request.param  # type: ignore[no-any-return]


# -- canonical: what the client's encoder would write

TEXTS = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from("\"\\/\b\f\n\r\t\x00\x1f\x7f\u2028\u2029"))


@settings(max_examples=500)
@given(TEXTS)
def test_a_string_is_canonical_when_it_is_what_orjson_writes(text: str) -> None:
    for written in (orjson.dumps(text), json.dumps(text).encode(), json.dumps(text, ensure_ascii=False).encode()):
        assert canonical(written) == (written == orjson.dumps(text) and text != "")


@pytest.mark.skipif(native is None, reason="the C splice is not built (scripts/compile)")
@settings(max_examples=2000)
@given(st.one_of(TEXTS.map(orjson.dumps), TEXTS.map(lambda text: json.dumps(text).encode()),
                 st.text().map(lambda text: json.dumps(text, ensure_ascii=False).encode("utf-8", "surrogatepass")),
                 st.binary(max_size=12).map(lambda raw: b'"' + raw + b'"'),
                 st.lists(st.sampled_from([b"\\u00", b"\\u", b"1f", b"0a", b"a", b"\\", b'"', b"\xc3", b"\xa9",
                                           b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80"]))
                 .map(lambda parts: b'"' + b"".join(parts) + b'"')))
def test_canonical_in_c_is_the_reference(string: bytes) -> None:
    assert native.canonical(string) == canonical(string)


# -- the splice

def test_steady_pieces_are_written_as_the_clients_frames_in_one_write_a_read(implementation: type[Any]) -> None:
    cycle = Cycle()
    splice = armed(implementation, cycle)
    before = time.monotonic()
    assert splice.took(piece(b'"one "')) and splice.took(piece(b'"t\\"w\\\\o\\n\xc3\xa9"', b"\r\n\r\n"))
    assert cycle.transport.written == []  # until the read is over: its pieces go in one write
    splice.flush()
    written_by = time.monotonic()
    assert cycle.transport.written == [chunk(PREFIX + b'"one "' + SUFFIX)
                                       + chunk(PREFIX + b'"t\\"w\\\\o\\n\xc3\xa9"' + SUFFIX)]
    splice.flush()
    assert len(cycle.transport.written) == 1
    assert splice.armed and splice.count == 2
    count, text, last_at = splice.taken()
    assert (count, text) == (2, 'one t"w\\o\né') and before <= last_at <= written_by
    assert splice.taken()[:2] == (0, "") and splice.count == 0


@pytest.mark.parametrize("other", [
    piece(b'"\\u00e9"'),  # escaped where the encoder writes the character
    piece(b'"a\\/b"'),
    piece(b'""'),  # written as nothing by some encoders
    piece(b'"\\ud83d\\ude00"'),
    piece(b'"a"').replace(b'"m1"', b'"m2"'),  # another message
    piece(b'"a"')[:-1],  # a frame's first half
    piece(b'"a"') + piece(b'"b"'),  # two frames
    b"event: delta\n" + piece(b'"a"'),
    piece(b'"a"', b"\n"),
    piece(b'"a\nb"'),
], ids=["escaped-non-ascii", "escaped-slash", "empty", "surrogates", "other-message", "half", "two", "named",
        "unended", "raw-newline"])
def test_any_other_piece_is_declined_and_disarms(implementation: type[Any], other: bytes) -> None:
    cycle = Cycle()
    splice = armed(implementation, cycle)
    assert not splice.took(other)
    assert not splice.armed and cycle.transport.written == []
    assert not splice.took(piece(b'"a"'))  # disarmed: nothing is taken until it is armed again
    assert cycle.transport.written == []


def test_what_was_taken_is_written_before_a_declined_piece_goes_on(implementation: type[Any]) -> None:
    cycle = Cycle()
    splice = armed(implementation, cycle)
    assert splice.took(piece(b'"a"')) and not splice.took(piece(b'"\\u00e9"'))
    assert cycle.transport.written == [chunk(PREFIX + b'"a"' + SUFFIX)]


@pytest.mark.parametrize("state", ["write_paused", "disconnected", "response_complete"])
def test_a_client_that_would_make_the_write_wait_or_is_gone_is_not_written_to(implementation: type[Any],
                                                                                state: str) -> None:
    cycle = Cycle()
    setattr(cycle.flow if state == "write_paused" else cycle, state, True)
    splice = armed(implementation, cycle)
    assert not splice.took(piece(b'"a"'))
    assert not splice.armed and cycle.transport.written == []


def test_text_not_yet_caught_up_on_is_bounded(implementation: type[Any]) -> None:
    cycle = Cycle()
    splice = armed(implementation, cycle)
    text = b'"' + b"x" * 60000 + b'"'
    took = 0
    while splice.took(piece(text)):
        took += 1
    assert took == MAX_PENDING // 60000 and len(cycle.transport.written) == 1
    assert splice.taken()[1] == "x" * 60000 * took


def test_a_string_the_encoders_write_otherwise_is_declined(implementation: type[Any]) -> None:
    cycle = Cycle()
    splice = armed(implementation, cycle)
    assert not splice.took(piece(b'"' + b"x" * splice_module.MAX_SPLICED + b'"'))  # past LARGE_TEXT: json_bytes


# -- end to end: what a client gets is what it got without the splice

CLIENTS = ("ag-ui", "vercel", "ag-kit", "openai-chat")
UPSTREAMS = ("ag-ui", "ag-kit", "openai-chat")
TRICKY = ["\"", "\\", "/", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f", "\u2028", "\u2029", "é", "中", "😀",
          "\ufeff", "\uffff", " ", "word", "<script>", "\\u00e9"]


def _texts(count: int, seed: int) -> list[str]:
    chooser = random.Random(seed)
    return ["".join(chooser.choice(TRICKY) for _ in range(chooser.randint(1, 6))) for _ in range(count)]


def _frames(dialect: str, texts: list[str], escaped_every: int) -> list[bytes]:
    """The dialect's stream of `texts`, most written as orjson writes them; every `escaped_every`-th (0: none) as the
    standard library does, escaped otherwise (not spliced)."""

    def _string(text: str, index: int) -> bytes:
        return json.dumps(text).encode() if escaped_every and index % escaped_every == 3 else orjson.dumps(text)

    def data(raw: bytes) -> bytes:
        return b"data: " + raw + b"\n\n"

    if dialect == "ag-ui":
        return [data(b'{"type":"RUN_STARTED","threadId":"t","runId":"r"}'),
                data(b'{"type":"TEXT_MESSAGE_START","messageId":"m1","role":"assistant"}'),
                *[data(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m1","delta":' + _string(text, i) + b"}")
                  for i, text in enumerate(texts)],
                data(b'{"type":"TEXT_MESSAGE_END","messageId":"m1"}'),
                data(b'{"type":"RUN_FINISHED","threadId":"t","runId":"r"}')]
    if dialect == "ag-kit":
        return [*[data(b'{"type":"text","content":' + _string(text, i) + b"}") for i, text in enumerate(texts)],
                data(b"[DONE]")]
    head = b'{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,'
    return [data(head + b'"delta":{"role":"assistant","content":""},"finish_reason":null}]}'),
            *[data(head + b'"delta":{"content":' + _string(text, i) + b'},"finish_reason":null}]}')
              for i, text in enumerate(texts)],
            data(head + b'"delta":{},"finish_reason":"stop"}]}'), data(b"[DONE]")]


class PacedUpstream:
    """An agent of each upstream dialect at `/<dialect>`, whose reply is `texts` one frame a write, a moment
    apart, as a model's tokens come: each is a read of its own at the gateway."""

    def __init__(self, texts: list[str], escaped_every: int = 7) -> None:
        self.texts = texts
        self.escaped_every = escaped_every
        self.requests: list[Any] = []
        self.app = Starlette(routes=[Route("/{dialect}", self.reply, methods=["POST"])])

    async def reply(self, request: Request) -> StreamingResponse:
        self.requests.append(await request.json())
        frames = _frames(request.path_params["dialect"], self.texts, self.escaped_every)

        async def paced() -> AsyncIterator[bytes]:
            for frame in frames:
                yield frame
                await asyncio.sleep(0.002)

        return StreamingResponse(paced(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def paced() -> Iterator[tuple[PacedUpstream, Served]]:
    upstream = PacedUpstream(_texts(100, seed=49))
    with Served(upstream.app) as agent:
        routes = [{"name": f"{client}_from_{dialect}".replace("-", "_"), "paths": [f"/{client}/from/{dialect}"],
                   "client_dialects": [client], "upstream": {"url": f"{agent.url}/{dialect}", "dialect": dialect}}
                  for client in CLIENTS for dialect in UPSTREAMS]
        with Served(create_app(GatewayConfig.model_validate({"routes": routes}), store=MemoryStore())) as gateway:
            yield upstream, gateway


@pytest.fixture
def spliced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many deltas each run's splice wrote, as the runs catch up on them."""
    counts: list[int] = []
    taken = RunSplice.taken

    def counting(self: RunSplice) -> tuple[int, Any, float]:
        found = taken(self)
        counts.append(found[0])
        return found

    monkeypatch.setattr(RunSplice, "taken", counting)
    return counts


_IDS = re.compile(rb'[a-z]+_[0-9a-f]{32}|"created":\d+')


def _ask(gateway: Served, client: str, upstream: str, conversation: str, text: str = "go") -> bytes:
    agent = f"{client}_from_{upstream}".replace("-", "_")
    body = request_body(client, [user_message(client, text)], conversation, agent=agent)
    with httpx.Client(timeout=30) as http:
        reply = post(http, f"{gateway.url}/{client}/from/{upstream}", body)
    assert reply.status_code == 200, reply.text
    return _IDS.sub(b"ID", reply.content.replace(conversation.encode(), b"CONVERSATION"))


def test_only_the_pairs_whose_dialects_say_steady_frames_are_given_a_splice() -> None:
    for upstream in registry.DIALECTS.values():
        decoder = upstream.new_decoder()
        for client in registry.DIALECTS.values():
            encoder = client.new_encoder(client.parse_request(client.sample_request("hi", "conv-1")))
            if isinstance(decoder, JsonSSEDecoder) and isinstance(encoder, SSEEncoder):
                pair = upstream.name in UPSTREAMS and client.name in CLIENTS
                assert says_steady_frames(decoder, encoder) is pair, (client.name, upstream.name)


@pytest.mark.parametrize("upstream", UPSTREAMS)
@pytest.mark.parametrize("client", CLIENTS)
def test_a_client_gets_the_same_bytes_with_its_steady_text_spliced(
        paced: tuple[PacedUpstream, Served], spliced: list[int], monkeypatch: pytest.MonkeyPatch, client: str,
        upstream: str) -> None:
    _, gateway = paced
    with_splice = _ask(gateway, client, upstream, f"on-{client}-{upstream}")
    assert sum(spliced) > 50, "the steady deltas were not spliced"
    monkeypatch.setattr(ClientWriter, "text_splice", lambda writer: None)
    assert _ask(gateway, client, upstream, f"off-{client}-{upstream}") == with_splice


@pytest.mark.parametrize("upstream", ["ag-ui", "openai-chat"])  # AG-Kit's agents keep their own history
def test_spliced_text_is_in_the_conversation_the_next_turn_sends(paced: tuple[PacedUpstream, Served],
                                                                spliced: list[int], upstream: str) -> None:
    agent, gateway = paced
    conversation = f"history-{upstream}"
    _ask(gateway, "ag-kit", upstream, conversation, "first")  # AG-Kit's client sends its new message alone
    assert sum(spliced) > 50
    _ask(gateway, "ag-kit", upstream, conversation, "second")
    assert "".join(agent.texts) in _strings(agent.requests[-1])


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    return [found for item in value for found in _strings(item)] if isinstance(value, list) else []


def test_a_long_spliced_stream_is_not_idle_and_every_event_counts(spliced: list[int]) -> None:
    """The deadlines' timer catches up on what the splice wrote: a stream of spliced deltas is neither cut off as
    silent nor sent keep-alives; and every delta spliced is counted (304 events: the start, the message's start, 300
    deltas, its end, the run's end)."""
    upstream = PacedUpstream(_texts(300, seed=7), escaped_every=0)
    with Served(upstream.app) as agent:
        route = {"name": "idle", "paths": ["/ag-ui/from/ag-ui"], "client_dialects": ["ag-ui"],
                 "upstream": {"url": f"{agent.url}/ag-ui", "dialect": "ag-ui"}, "timeouts": {"idle": 0.25}}
        config = GatewayConfig.model_validate({"routes": [route], "keepalive_seconds": 0.1})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            started = time.monotonic()
            body = _ask(gateway, "ag-ui", "ag-ui", "long")
            took = time.monotonic() - started
            with httpx.Client() as http:
                samples = _samples(http, gateway)
    assert took > 0.5 and sum(spliced) > 200
    ids = (("client_dialect", "ag-ui"), ("route", "idle"), ("upstream_dialect", "ag-ui"))
    assert samples["agent_gateway_events_translated_total", ids] == 304
    assert b"RUN_ERROR" not in body and body.rstrip().endswith(b'"outcome":{"type":"success"}}')
    assert b"\n: " not in body and not body.startswith(b": ")


def test_what_was_spliced_counts_when_the_client_leaves_mid_stream(spliced: list[int]) -> None:
    upstream = PacedUpstream(_texts(300, seed=8), escaped_every=0)
    with Served(upstream.app) as agent:
        route = {"name": "left", "paths": ["/ag-ui/from/ag-ui"], "client_dialects": ["ag-ui"],
                 "upstream": {"url": f"{agent.url}/ag-ui", "dialect": "ag-ui"}}
        with Served(create_app(GatewayConfig.model_validate({"routes": [route]}), store=MemoryStore())) as gateway, \
                httpx.Client(timeout=30) as http:
            body = request_body("ag-ui", [user_message("ag-ui", "go")], "left")
            deltas = 0
            with http.stream("POST", f"{gateway.url}/ag-ui/from/ag-ui", content=orjson.dumps(body),
                             headers={"content-type": "application/json"}) as reply:
                for line in reply.iter_lines():
                    deltas += "TEXT_MESSAGE_CONTENT" in line
                    if deltas == 100:
                        break
            deadline = time.monotonic() + 10
            while _samples(http, gateway)["agent_gateway_streams_in_flight", (("route", "left"),)] and \
                    time.monotonic() < deadline:
                time.sleep(0.05)
            samples = _samples(http, gateway)
    assert sum(spliced) >= 90
    ids = (("client_dialect", "ag-ui"), ("route", "left"), ("upstream_dialect", "ag-ui"))
    assert samples["agent_gateway_events_translated_total", ids] >= 102  # the start, the message's, 100 deltas


def _samples(http: httpx.Client, gateway: Served) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(http.get(f"{gateway.url}/metrics").text)
            for sample in family.samples}
