"""Shared agent state as the AG-UI dialect defines it: a JSON snapshot, moved on by RFC 6902 JSON Patches."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch


class StateTracker:
    """Keeps the latest state of a run. A patch that does not apply leaves the state as it was (AG-UI clients
    warn and go on, so do we)."""

    __slots__ = ("known", "value")

    def __init__(self, value: Any = None) -> None:
        self.value = value
        self.known = value is not None

    def snapshot(self, value: Any) -> None:
        self.value = value
        self.known = True

    def apply(self, patch: list[Any]) -> bool:
        try:
            # One copy, so that a patch failing half-way leaves the state as it was.
            self.value = jsonpatch.apply_patch(copy.deepcopy(self.value if self.known else {}), patch, in_place=True)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, ValueError):
            return False
        self.known = True
        return True
