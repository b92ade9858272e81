"""What every stage of the AG-UI judge shares: the client's SSE framing, its limits and how it names things."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

PROTOCOL_VERSION = "1.0"
PROTOBUF = "application/vnd.ag-ui.event+proto"
MAX_BUFFER = 10 * 1024 * 1024
"""Characters the client's SSE buffer may hold before the run fails: an event longer than this cannot arrive."""

Event = dict[str, Any]
Path = tuple[str | int, ...]
Report = Callable[[str, str], None]
"""(rule, message) about the frame being judged."""




def frames(body: bytes) -> list[str]:
    """The `data` of each event exactly as the client frames it: split on a literal "\\n\\n", lines on "\\n",
    `data:` lines kept with one optional space removed. Unlike the SSE standard, CR and CRLF end nothing."""
    text = body.decode("utf-8", "replace").removeprefix("\ufeff")
    frames = []
    for block in text.split("\n\n"):
        data = [line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")]
        if data:
            frames.append("\n".join(data))
    return frames


def no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")




def dotted(path: Path) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else part)
    return out


def who(owner: str | None) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


ABSENT = object()
"""What a lookup finds for a name nothing declared (unlike None, which names the parent agent as an owner)."""
