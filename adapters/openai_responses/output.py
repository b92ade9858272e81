"""A response's output as it is written: the items in order, what an item still being written holds so far, and
how many characters of text the response holds (for how its JSON is written, `encode.json_bytes`)."""

from __future__ import annotations

from typing import Any

from gateway.core import events as canonical
from gateway.core.dropped import Dropped
from gateway.core.text_pieces import TextPieces

Semantic = tuple[str, dict[str, Any]]
"""One streaming event: its type and its fields (without `type` and `sequence_number`)."""


class OpenItem:
    """An item being written: where it is in the output, and its text or arguments so far."""

    __slots__ = ("call_id", "index", "item_id", "name", "refusal", "so_far")

    def __init__(self, index: int, item_id: str, name: str = "", call_id: str = "", *, refusal: bool = False) -> None:
        self.index = index
        self.item_id = item_id
        self.name = name
        self.call_id = call_id
        self.refusal = refusal
        """A message that is the model's refusal: its part is `refusal`, its deltas `response.refusal.delta`."""
        self.so_far = TextPieces()


class Output:
    """The output items, and what the run sent that none of them shows (`dropped`, counted by kind): what the
    writer and the parts it hands it to (`calls.Calls`) write into."""

    __slots__ = ("chars", "dropped", "items")

    def __init__(self, dropped: dict[Dropped, int]) -> None:
        self.items: list[dict[str, Any]] = []
        self.dropped = dropped
        self.chars = 0
        """Characters of text, arguments and results the response holds."""

    def add(self, item: dict[str, Any]) -> int:
        self.items.append(item)
        return len(self.items) - 1

    def added_done(self, item: dict[str, Any]) -> list[Semantic]:
        """An item that comes whole."""
        index = self.add(item)
        return [("response.output_item.added", {"output_index": index, "item": item}),
                ("response.output_item.done", {"output_index": index, "item": item})]

    def opened(self, e: canonical.TextStart | canonical.ReasoningStart | canonical.ToolCallStart) -> None:
        if e.subagent_run_id is not None:
            self.dropped[Dropped.SUBAGENT] += 1  # a message or a call has no author but the agent: whose it is, is lost
