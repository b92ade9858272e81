"""A sixth dialect is one package plus one registry line: the toy JSON-lines dialect in `tests/toy_dialect/`,
registered by its plugin, joins the property tests, the translation matrix and the gateway's end-to-end pairs
(every client dialect in front of every upstream dialect, the built-in agent speaking each) with no other file
touched. Those test files are run as they are, in a pytest of their own, selecting the cases that name the toy.
What the toy alone brings (a second wire format, an endpoint under its path) the gateway serves from the toy's
package too."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import orjson
import pytest
from helpers import ROOT
from servers import Served
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from toy_dialect import DIALECT as TOY

from adapters import registry
from gateway.config import GatewayConfig
from gateway.conversations.store import MemoryStore
from gateway.recordings.capture import RunCapture
from gateway.recordings.judged import judge_run
from gateway.server.app import create_app

SUITES = ["tests/test_properties.py", "tests/test_recorded_translations.py", "tests/test_end_to_end_pairs.py"]


def test_a_toy_dialect_joins_the_matrix_and_the_property_tests_with_no_other_file_touched() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "toy_dialect.plugin", "-k", "toy", "-p", "no:cacheprovider",
         *SUITES], cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])})
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    passed = int(summary.split(" passed")[0].split()[-1])
    # Pairs with every other dialect both ways, the toy's own round trips, and every recorded stream re-encoded
    # into it and judged.
    assert passed >= 70, summary


# -- what the toy alone brings, from its own package (`toy_dialect/capabilities.py`), served over real HTTP


def _sequence_upstream() -> Starlette:
    """A toy agent that answers in the toy's second wire format: JSON text sequences, not JSON lines."""

    async def run(request: Request) -> Response:
        events = [{"type": "start"}, {"type": "text", "id": "m1", "text": "hello "},
                  {"type": "text", "id": "m1", "text": "world"}, {"type": "end"}]
        return Response(b"".join(b"\x1e" + orjson.dumps(event) + b"\n" for event in events),
                        media_type="application/json-seq")

    return Starlette(routes=[Route("/toy", run, methods=["POST"])])


@pytest.fixture
def toy_gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setitem(registry.DIALECTS, TOY.name, TOY)  # the plugin's one line, for this test alone
    with Served(_sequence_upstream()) as upstream:
        config = GatewayConfig.model_validate({"routes": [
            {"name": "toy", "paths": ["/toy"], "client_dialects": ["toy"],
             "upstream": {"url": f"{upstream.url}/toy", "dialect": "toy"}}]})
        with Served(create_app(config, store=MemoryStore())) as gateway:
            yield gateway.url


def test_a_toy_upstream_answering_in_its_second_wire_format_is_read_by_the_decoder_the_toy_brings(
        toy_gateway: str) -> None:
    reply = httpx.post(f"{toy_gateway}/toy", json=TOY.sample_request("hi", "s1"), timeout=10)
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "application/x-ndjson"
    assert [orjson.loads(line) for line in reply.content.splitlines()] == [
        {"type": "start"}, {"type": "text", "id": "m1", "text": "hello "},
        {"type": "text", "id": "m1", "text": "world"}, {"type": "end"}]


def test_the_toy_answers_a_get_under_its_path_with_its_own_code(toy_gateway: str) -> None:
    reply = httpx.get(f"{toy_gateway}/toy/formats", timeout=10)
    assert reply.status_code == 200, reply.text
    assert reply.json() == {"formats": ["application/x-ndjson", "application/json-seq"]}
    assert httpx.post(f"{toy_gateway}/toy/formats", json={}, timeout=10).status_code == 405


def test_a_broken_rule_of_a_toy_reply_is_placed_on_the_read_of_its_line_by_the_framing_the_toy_brings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry.DIALECTS, TOY.name, TOY)
    capture = RunCapture("run", "toy", limit=1 << 20)
    decoder, encoder = capture.tap(TOY.new_decoder(), registry.get("ag-ui").new_encoder(None))
    capture.upstream_answered(200, [("content-type", "application/x-ndjson")])
    capture.client_started(200, [(b"content-type", b"text/event-stream")])
    lines = [orjson.dumps(event) + b"\n" for event in (
        {"type": "start"}, {"type": "text", "id": "m1", "text": "hello"}, {"type": "shout", "text": "!"},
        {"type": "end"})]
    for read in (lines[0] + lines[1], lines[2] + lines[3]):  # two lines a read: a row per read, not per line
        capture.wrote(encoder.encode(decoder.feed(read)))
    capture.wrote(encoder.encode(decoder.close()))
    capture.done()
    found = judge_run(capture, "ag-ui", "toy")
    assert found is not None
    [shout] = [b for b in found if b.side == "upstream"]
    assert (shout.violation.rule, shout.violation.index, shout.row) == ("type", 2, 1)
