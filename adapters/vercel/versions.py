"""Which AI SDK a useChat client runs, and what its chunk schema takes: the one gate behind which `ai` 5, 6 and 7
differ.

Every release before 5.0.217, 6.0.231 and 7.0.32 rejects a chunk with a key its schema does not list, and every
release rejects a chunk type it does not know, so a client is written only what the oldest release of its version
reads. The version is what the route says (`client_version: 5`, `6`, `7`, or a full version such as `7.0.173`),
else what the client's own messages show (a part or a field only a later major writes), else 6: the major whose
approvals the gateway's interrupts need, and whose chunks a 7 client reads too. An AI SDK 5 client's route must say
so: its requests look like a 6 client's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

DEFAULT = "6"

_SEVEN_PARTS = frozenset({"custom", "reasoning-file", "steering-message"})
_SIX_STATES = frozenset({"approval-requested", "approval-responded", "output-denied"})


@dataclass(frozen=True, slots=True)
class AiSdk:
    """An `ai` release, or the oldest release of a major when only the major is known."""

    version: tuple[int, int, int]

    @staticmethod
    def of(declared: str | None) -> AiSdk:
        return _parsed(declared or DEFAULT)

    def at_least(self, major: int, minor: int = 0, patch: int = 0) -> bool:
        return self.version >= (major, minor, patch)

    @property
    def major(self) -> int:
        return self.version[0]

    @property
    def approvals(self) -> bool:
        """`tool-approval-request`, `tool-output-denied` and `addToolApprovalResponse` (6 on)."""
        return self.at_least(6)

    @property
    def tool_metadata(self) -> bool:
        """`providerMetadata` on `tool-input-start` and the tool outputs (6 on; 5 has it on the input only)."""
        return self.at_least(6)

    @property
    def seven(self) -> bool:
        """`custom`, `reasoning-file`, `tool-approval-response`, and `isAutomatic` on an approval (7 on)."""
        return self.at_least(7)

    @property
    def approval_reason(self) -> bool:
        """`reason`, `approvalDescriptor` and `inputSchemaInput` on an approval request: 7.0.31 has none of them,
        7.0.173 all; the release between that added them is not pinned, so only a route that names 7.0.173 or
        later gets them."""
        return self.at_least(7, 0, 173)

    def passes(self, chunk_type: str) -> bool:
        """Whether an upstream's chunk of this type, with no canonical meaning, may reach this client as it came."""
        if chunk_type in ("message-metadata", "source-url", "source-document", "file"):
            return True
        if chunk_type == "reasoning-file":
            return self.seven
        if chunk_type == "steering-message":
            return self.at_least(7, 0, 163)
        if chunk_type == "reset-step":
            return self.at_least(7, 0, 173)
        return False


@cache
def _parsed(declared: str) -> AiSdk:
    """Made once per version string: an encoder is made per request."""
    parts = [int(p) for p in declared.split(".")[:3] if p.isdigit()] or [int(DEFAULT)]
    return AiSdk((*parts, 0, 0)[:3])  # type: ignore[arg-type]


def shown_by(messages: Any) -> str | None:
    """The least major a client's messages prove it runs: a part or a field only a later `ai` writes, or None."""
    if not isinstance(messages, list):
        return None
    least = None
    for message in messages:
        for part in message.get("parts") or () if isinstance(message, dict) else ():
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            approval = part.get("approval")
            if kind in _SEVEN_PARTS or "citations" in part or (kind == "reasoning" and "id" in part) \
                    or (isinstance(approval, dict) and ("isAutomatic" in approval or "requestReason" in approval)):
                return "7"
            if part.get("state") in _SIX_STATES or isinstance(approval, dict) or "toolMetadata" in part:
                least = "6"
    return least
