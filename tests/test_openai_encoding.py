"""What the OpenAI encoders write of a long text: the JSON of each long text written once (`json_bytes`, not
orjson, whose result keeps about 16 bytes a character) and whole in every frame that repeats it. And what their
decoders make of another dialect's stream: `Raw`, so that a wrong `upstream.dialect` is seen."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from helpers import fixture_path

from adapters import registry
from gateway.core.conformance import Answer
from gateway.core.encoding import LARGE_TEXT
from gateway.core.events import Event, Raw, RunError, RunFinished, RunStarted, TextDelta, TextEnd, TextStart
from gateway.core.turn import Message, Turn

TEXT = 'a "quoted" line\nand é ' * (LARGE_TEXT // 8)


def run(text: str) -> list[Event]:
    return [RunStarted(thread_id="t", run_id="r"), TextStart("m"), TextDelta("m", text[:10]), TextDelta("m", text[10:]),
            TextEnd("m"), RunFinished()]


def frames(body: bytes) -> list[dict[str, Any]]:
    return [orjson.loads(line[6:]) for line in body.split(b"\n") if line.startswith(b"data: {")]


def test_a_long_text_is_whole_in_every_responses_frame_that_repeats_it() -> None:
    encoder = registry.get("openai-responses").new_encoder(None)
    body = b"".join(encoder.encode([e]) for e in run(TEXT))
    written = frames(body)
    done = {f["type"]: f for f in written if f["type"].endswith(".done") or f["type"] == "response.completed"}
    assert "".join(f["delta"] for f in written if f["type"] == "response.output_text.delta") == TEXT
    assert done["response.output_text.done"]["text"] == done["response.content_part.done"]["part"]["text"] == TEXT
    assert done["response.output_item.done"]["item"]["content"][0]["text"] == TEXT
    assert done["response.completed"]["response"]["output"][0]["content"][0]["text"] == TEXT
    assert b"\\u0000text" not in body  # no placeholder left
    answer = Answer(200, {"content-type": "text/event-stream"}, body)
    assert [v for v in registry.get("openai-responses").judge(answer) if not v.convention] == []


def test_a_long_text_in_one_body_is_whole() -> None:
    asked = Turn(messages=[Message("user", "hi")], metadata={"openai": {"stream": False},
                                                             "openai_responses": {"stream": False}})
    response = orjson.loads(registry.get("openai-responses").new_encoder(asked).encode(run(TEXT)))
    completion = orjson.loads(registry.get("openai-chat").new_encoder(asked).encode(run(TEXT)))
    assert response["output"][0]["content"][0]["text"] == TEXT
    assert completion["choices"][0]["message"]["content"] == TEXT


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses"])
def test_another_dialects_stream_is_raw_to_an_openai_decoder(dialect: str) -> None:
    decoder = registry.get(dialect).new_decoder()
    events = decoder.feed(fixture_path("pydantic_vercel_weather.sse").read_bytes()) + decoder.close()
    read = [e for e in events if not isinstance(e, Raw | RunStarted | RunFinished | RunError)]
    assert read == [] and sum(isinstance(e, Raw) for e in events) == 17
