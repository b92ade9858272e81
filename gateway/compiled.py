"""The optional compiled build: the per-event modules mypyc compiles, and whether this process runs them compiled.

`AGENT_GATEWAY_COMPILE=1 pip install .` (`setup.py`) and `scripts/compile` (in place, in a checkout) compile
`modules()` into C extensions; a plain install runs the same modules as Python. An extension in place is imported
before its `.py`, so a module edited after `scripts/compile` runs its old compiled code until the next
`scripts/compile` (or `scripts/compile --clean`): `summary()` says so, in `agent-gateway --version` and when
`serve` starts.

This file is read by `setup.py` before the package is installed: importing it imports nothing of ours, and
`modules()` imports the registry only when called (with the checkout on `sys.path`, and the build requirements).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys
from functools import cache
from importlib.machinery import EXTENSION_SUFFIXES

CORE = (
    "gateway.core.sse",
    "gateway.core.repair",
    "gateway.core.decoding",
    "gateway.core.steady",
    "gateway.core.text_pieces",
    "gateway.conversations.recorder",
    "gateway.upstream.connection",
    "gateway.upstream.response",
)
"""What one upstream event crosses whatever its dialect: the upstream connection's read and its response, SSE
framing, the decoders' bases, repair, and the recorder."""

NATIVE = ("gateway.server.stream._splice",)
"""Modules written in C, each beside the Python module it stands in for (`_splice.c`, for `splice.py`): built with
the compiled modules; without them, the Python runs."""

DECODING = ("decode", "reading")
"""A dialect's own modules one upstream event crosses, by name: its decoder's (`decode`, and `<format>_decode` for
another wire format it reads: AG-UI's `proto_decode`), and what its decoder reads messages with (`reading`)."""


@cache
def modules() -> tuple[str, ...]:
    """`CORE`, then each registered dialect's decoding modules (`DECODING`), found in its decoder's package.

    Left as Python, though one event crosses them too: `gateway.core.events` (compiled, an event's fields are
    checked against their annotations when it is made, so an upstream's odd value would raise where Python passes
    it on, and the Python encoders read compiled events more slowly), `gateway.core.codec` and `gateway.core.state`
    (no measurable gain: nothing in them runs per text event), and the encoders, `adapters.*.encode` (a class
    body's table of its own methods, `handlers`, does not compile; and compiled callers would not see the `encode`
    that `SSEEncoder.__init_subclass__` sets on each class). `gateway.core.encoding` alone compiles with two changes,
    for 3% fewer instructions: not worth them.
    """
    from adapters.registry import DIALECTS

    found: list[str] = []
    for package in sorted({dialect.new_decoder.__module__.rpartition(".")[0] for dialect in DIALECTS.values()}):
        names = sorted({info.name for info in pkgutil.iter_modules(importlib.import_module(package).__path__)})
        found += [f"{package}.{name}" for name in names if name in DECODING or name.endswith("_decode")]
    return (*CORE, *found)


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
    """The modules of `modules()` and `NATIVE` that run (or would be imported) compiled."""
    return [name for name in (*modules(), *NATIVE)
            if (origin := _origin(name)) and origin.endswith(tuple(EXTENSION_SUFFIXES))]


def unlisted() -> list[str]:
    """Loaded modules of ours that are compiled but not in `modules()` or `NATIVE`: left by an older build."""
    listed = (*modules(), *NATIVE)
    return sorted(name for name, module in list(sys.modules.items())
                  if name.partition(".")[0] in ("gateway", "adapters") and name not in listed
                  and str(getattr(module, "__file__", "")).endswith(tuple(EXTENSION_SUFFIXES)))


def stale() -> list[str]:
    """Compiled modules whose source beside them is newer than their extension: edited since the build."""
    found = []
    for name in compiled():
        origin = _origin(name)
        assert origin is not None
        source = origin[: -len(next(s for s in EXTENSION_SUFFIXES if origin.endswith(s)))] \
            + (".c" if name in NATIVE else ".py")
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
    listed = (*modules(), *NATIVE)
    if len(done) < len(listed):
        missing = [name for name in listed if name not in done]
        return f"partly compiled with mypyc ({len(done)} of {len(listed)} modules; not {', '.join(missing)})"
    return f"compiled with mypyc ({len(done) - len(NATIVE)} modules) and C ({len(NATIVE)})"
