"""Shared helpers: run bytes through a decoder, events through an encoder, and list the recorded fixtures."""

from __future__ import annotations

from pathlib import Path

from adapters import registry
from gateway.core.events import Event
from gateway.core.sse import SSEDecoder
from gateway.core.turn import Turn

ROOT = Path(__file__).parent.parent
FIXTURES = Path(__file__).parent / "fixtures"

# Recorded streams that end in a failure on purpose: the run must decode to a RunError.
FAILING = {
    "agkit_server_8_mid_stream_exception.sse",  # the 0.1.1 server just stops: no error event, no [DONE]
    "pydantic_agui_fail.sse",
    "pydantic_agui_slow_disconnect.sse",  # the client's view of a stream it cut
    "pydantic_vercel_fail.sse",
    "vercel_doc_inkeep_error.sse",  # Inkeep reports failures as data-operation parts
    "a2a_sdk_jsonrpc_fail.sse",  # the task ends FAILED
    "a2a_sdk_v03_jsonrpc_fail.sse",
    "a2a_sdk_jsonrpc_crash.sse",  # the executor raised: an error frame, no final state
    "a2a_sdk_rest_crash.sse",
    "a2a_sdk_v03_jsonrpc_crash.sse",
    "langgraph_dev_fail.sse",  # the graph raised: an `error` frame
    "agui10_failed.sse",  # RUN_ERROR, with the tokens the run used
}


def _recorded() -> dict[str, Path]:
    """Every recorded stream by file name; each sits in the folder of the dialect it is written in (a dialect's
    folder counts once the registry knows it). Subfolders (`a2a/responses/`, `a2a/requests/`) are never streams."""
    return {p.name: p for p in sorted(FIXTURES.glob("*/*")) if p.is_file() and p.parent.name in registry.DIALECTS}


RECORDED = _recorded()


def fixture_dialect(name: str) -> str:
    return RECORDED[name].parent.name


def fixtures() -> list[str]:
    return sorted(RECORDED)


def fixture_path(name: str) -> Path:
    return RECORDED[name]


def read_fixture(name: str) -> bytes:
    return RECORDED[name].read_bytes()


def decode(dialect: str, data: bytes, chunk_size: int | None = None) -> list[Event]:
    decoder = registry.get(dialect).new_decoder()
    events: list[Event] = []
    if chunk_size is None:
        events += decoder.feed(data)
    else:
        for start in range(0, len(data), chunk_size):
            events += decoder.feed(data[start:start + chunk_size])
    events += decoder.close()
    return events


def decode_chunks(dialect: str, chunks: list[bytes]) -> list[Event]:
    decoder = registry.get(dialect).new_decoder()
    events: list[Event] = []
    for chunk in chunks:
        events += decoder.feed(chunk)
    return events + decoder.close()


def encode(dialect: str, events: list[Event], variant: str | None = None, request: Turn | None = None) -> bytes:
    return registry.get(dialect).new_encoder(request or Turn(variant=variant)).encode(events)


def kinds(events: list[Event]) -> list[str]:
    return [type(e).__name__ for e in events]


def sse_payloads(body: bytes) -> list[bytes]:
    """The `data` of every SSE frame in a whole body, a last one without its blank line included."""
    decoder = SSEDecoder()
    return decoder.feed(body) + decoder.flush()
