"""Which AG-UI a client or an upstream speaks: the one gate behind which versions differ (`legacy` holds what a
client before 1.0 is written).

A 1.0 client declares `protocolVersion: "1.0"` in every `RunAgentInput` (`@ag-ui/client` 1.0 does, unless pinned to
an older peer); clients before 1.0 declare nothing. A version the client declares is the ceiling of what it is sent.
"""

from __future__ import annotations

from typing import Any

from gateway.core.turn import ANY_OPEN_INTERRUPT, Resume, Turn

PROTOCOL_VERSION = "1.0"
LEGACY = "0"
"""The version of a client that declares none."""


def declared(protocol_version: str | None) -> str:
    return protocol_version or LEGACY


def speaks_1_0(version: str | None) -> bool:
    """Whether a client of this declared version reads AG-UI 1.0; None (no client to ask) writes the current one."""
    if version is None:
        return True
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) >= 1


def writes_legacy(request: Turn | None) -> bool:
    return request is not None and not speaks_1_0(request.client_version)


def resume_of_command(forwarded_props: Any) -> list[Resume]:
    """A client before 1.0 answers an interrupt in `forwardedProps.command.resume` (LangGraph's `Command`), naming
    none."""
    command = forwarded_props.get("command") if isinstance(forwarded_props, dict) else None
    if not isinstance(command, dict) or "resume" not in command:
        return []
    return [Resume(ANY_OPEN_INTERRUPT, "resolved", command["resume"])]
