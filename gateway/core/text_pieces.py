"""A text that comes in pieces (a message's deltas, a tool call's arguments), held while it streams at about the
cost of its characters: a string object a delta costs some 55 bytes beside a token's few characters, and joining
each delta onto the text before it copies the whole text every time."""

from __future__ import annotations

JOINED_AT = 16
"""Pieces joined into one string as they come."""


class TextPieces:
    """`pieces` is appended to, and `settle()` after a batch joins what came since into one string once it is
    `JOINED_AT` pieces or more; `add` does both, for a writer with no batch's end to settle at."""

    __slots__ = ("_joined", "pieces")

    def __init__(self, first: str = "") -> None:
        self.pieces: list[str] = [first] if first else []
        self._joined = 0
        """How many of `pieces`, from the start, are joins already: they are not joined again."""

    def add(self, piece: str) -> None:
        pieces = self.pieces
        pieces.append(piece)
        if len(pieces) - self._joined >= JOINED_AT:
            self.settle()

    def settle(self) -> None:
        pieces, joined = self.pieces, self._joined
        if len(pieces) - joined >= JOINED_AT:
            pieces[joined:] = ["".join(pieces[joined:])]
            self._joined = joined + 1

    def text(self) -> str:
        """The text so far, its pieces joined into one (and kept so, for a text read again as it grows)."""
        pieces = self.pieces
        if len(pieces) > 1:
            pieces[:] = ["".join(pieces)]
            self._joined = 1
        return pieces[0] if pieces else ""

    def clear(self) -> None:
        self.pieces.clear()
        self._joined = 0
