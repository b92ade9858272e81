"""`POST /v1/responses/compact`: a conversation as one `compaction` item that its client sends back as input later,
in place of the history (without `previous_response_id`), and the run goes on with the whole history.

A model server summarises; an agent behind the gateway has no model to summarise with, but the gateway holds the
history. So the item's `encrypted_content` is the history itself, as input items (`items.compacted`), which the
gateway reads again wherever the item comes back (`request.read_input`). It holds nothing its client could not
send as input itself (the request's input, or a stored response's conversation, which it may read), so it is
encoded, not encrypted: opaque to the client by the specification's word, not by a key.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from gateway.core.capabilities import Asked, PathAnswer
from gateway.core.ids import new_id
from gateway.core.queries import Answer
from gateway.core.turn import Message, Turn

from .items import compacted
from .request import input_items, parse_request

_NO_TOKENS = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "input_tokens_details": {"cached_tokens": 0},
              "output_tokens_details": {"reasoning_tokens": 0}}
"""No model read or wrote anything."""


async def compact(asked: Asked) -> Answer:
    """A request read as a turn, with the whole history: the stored one of the run it continues, if it names one,
    then the request's messages."""
    turn = parse_request(await asked.json())
    asked.check(turn)
    history = turn.messages
    if turn.follows is not None:
        history = await asked.history(turn.follows) + turn.messages
    return Answer(orjson.dumps(answer(turn, history)))


COMPACTION = PathAnswer("POST", "/compact", compact, outcome="compaction")


def answer(turn: Turn, history: list[Message]) -> dict[str, Any]:
    """The compaction resource for `history` (the stored conversation `turn` follows, then what it said)."""
    item = {"id": new_id("cmp"), "type": "compaction", "encrypted_content": compacted(input_items(history)),
            "created_by": "agent-gateway"}
    return {"id": new_id("resp"), "object": "response.compaction", "output": [item],
            "created_at": int(time.time()), "usage": _NO_TOKENS}
