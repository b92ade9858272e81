"""The optional compiled build: the per-event modules mypyc compiles, and whether this process runs them compiled.

`AGENT_GATEWAY_COMPILE=1 pip install .` (`setup.py`) and `scripts/compile` (in place, in a checkout) compile
`MODULES` into C extensions; a plain install runs the same modules as Python. An extension in place is imported
before its `.py`, so a module edited after `scripts/compile` runs its old compiled code until the next
`scripts/compile` (or `scripts/compile --clean`): `summary()` says so, in `agent-gateway --version` and when
`serve` starts.

This file is read by `setup.py` before the package is installed: it imports nothing of ours.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES

MODULES = (
    "gateway.core.sse",
    "gateway.core.repair",
    "gateway.core.decoding",
    "gateway.core.steady",
    "gateway.conversations.recorder",
    "adapters.a2a.decode",
    "adapters.a2a.reading",
    "adapters.ag_kit.decode",
    "adapters.ag_ui.decode",
    "adapters.ag_ui.proto_decode",
    "adapters.agent_respond.decode",
    "adapters.langgraph.decode",
    "adapters.langgraph.reading",
    "adapters.vercel.decode",
)
"""One upstream event crosses all of these: SSE framing, the dialect's mapping, repair, and the recorder.

Left as Python, though one event crosses them too: `gateway.core.events` (compiled, an event's fields are checked
against their annotations when it is made, so an upstream's odd value would raise where Python passes it on, and the
Python encoders read compiled events more slowly), `gateway.core.codec` and `gateway.core.state` (no measurable gain:
nothing in them runs per text event), and the encoders, `adapters.*.encode` (a class body's table of its own methods,
`handlers`, does not compile; and compiled callers would not see the `encode` that `SSEEncoder.__init_subclass__`
sets on each class). `gateway.core.encoding` alone compiles with two changes, for 3% fewer instructions: not worth
them.
"""

STALE_SECONDS = 2.0
"""A `.py` this much newer than its extension was edited after the build (an install writes both at once)."""


def _origin(name: str) -> str | None:
    module = sys.modules.get(name)
    if module is not None:
        return getattr(module, "__file__", None)
    try:
        spec = importlib.util.find_spec(name)
    except ImportError:
        return None
    return spec.origin if spec is not None else None


def compiled() -> list[str]:
    """The modules of `MODULES` that run (or would be imported) compiled."""
    return [name for name in MODULES if (origin := _origin(name)) and origin.endswith(tuple(EXTENSION_SUFFIXES))]


def unlisted() -> list[str]:
    """Loaded modules of ours that are compiled but not in `MODULES`: left by an older build."""
    return sorted(name for name, module in list(sys.modules.items())
                  if name.partition(".")[0] in ("gateway", "adapters") and name not in MODULES
                  and str(getattr(module, "__file__", "")).endswith(tuple(EXTENSION_SUFFIXES)))


def stale() -> list[str]:
    """Compiled modules whose source beside them is newer than their extension: edited since the build."""
    found = []
    for name in compiled():
        origin = _origin(name)
        assert origin is not None
        source = origin[: -len(next(s for s in EXTENSION_SUFFIXES if origin.endswith(s)))] + ".py"
        if os.path.exists(source) and os.path.getmtime(source) > os.path.getmtime(origin) + STALE_SECONDS:
            found.append(name)
    return found


def summary() -> str:
    """One line: pure Python, compiled, or compiled but stale (and what to run)."""
    done, extra = compiled(), unlisted()
    if extra:
        return (f"compiled with mypyc, but {', '.join(extra)} left by an older build "
                "(run scripts/compile, or scripts/compile --clean for pure Python)")
    if not done:
        return "pure Python"
    old = stale()
    if old:
        return (f"compiled with mypyc, but STALE: {', '.join(old)} edited since the build "
                "(run scripts/compile, or scripts/compile --clean for pure Python)")
    if len(done) < len(MODULES):
        missing = [name for name in MODULES if name not in done]
        return f"partly compiled with mypyc ({len(done)} of {len(MODULES)} modules; not {', '.join(missing)})"
    return f"compiled with mypyc ({len(done)} modules)"
