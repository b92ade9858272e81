"""The MCP encoder on its own: what a client that sent a `progressToken` is sent while the agent writes."""

from __future__ import annotations

import itertools

import orjson

from adapters import registry
from gateway.core import events as canonical
from gateway.core.turn import Message, Turn


def _notifications(body: bytes) -> list[dict]:
    return [orjson.loads(line[len(b"data: "):]) for line in body.split(b"\n") if line.startswith(b"data: ")]


def _encoder_asked_for_progress():  # type: ignore[no-untyped-def]
    turn = Turn(messages=[Message(role="user", content="hi")], metadata={"mcp": {"id": 7, "progressToken": "p"}})
    return registry.get("mcp").new_encoder(turn)


def test_progress_of_one_character_deltas_costs_bytes_in_proportion_to_the_answer_not_its_square() -> None:
    encoder = _encoder_asked_for_progress()
    answer = "x" * 5_000
    pieces = [encoder.encode([canonical.RunStarted(), canonical.TextStart("m")])]
    pieces += [encoder.encode([canonical.TextDelta("m", character)]) for character in answer]
    pieces.append(encoder.encode([canonical.TextEnd("m"), canonical.RunFinished()]))
    body = b"".join(pieces)
    sent = _notifications(body)
    progress = [n["params"] for n in sent if n.get("method") == "notifications/progress"]
    assert len(body) < 15 * len(answer)  # one notification a delta: 12.5 MB
    assert progress[-1]["message"] == answer  # the message's end shows what was held back
    assert [p["progress"] for p in progress] == list(range(1, len(progress) + 1))
    assert all(later["message"].startswith(earlier["message"]) for earlier, later in itertools.pairwise(progress))
    assert sent[-1]["id"] == 7 and sent[-1]["result"]["content"][0]["text"] == answer
