"""What the per-event modules make of odd upstream streams, printed so that two builds can be compared byte for byte.

    python tests/compiled_diff.py SEED CASES [--pure]

Each case is a recorded upstream stream (`tests/fixtures`), or one crafted to hold what real upstreams send rarely
(`tests/fixtures/crafted`: refusals, answers cut short, replaced artifacts, interleaved messages), with random
values put into a few of its frames' fields (or fields removed, or another event type named), fed in odd-sized
chunks to every decoder that reads its dialect;
the events go through the recorder and every dialect's encoder. One block per case: the events, the recorded
messages, each encoder's bytes, or the exception each stage raised. `--pure` imports `gateway.compiled.modules()`
from their `.py` even where a compiled build (scripts/compile) sits beside them, and the Python of `NATIVE`'s modules
for them. `tests/test_compiled.py` runs both and compares.
"""

from __future__ import annotations

import copy
import importlib.machinery
import importlib.util
import json
import random
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from importlib.machinery import EXTENSION_SUFFIXES, ModuleSpec
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
JUNK: list[Any] = [None, True, False, 0, 1, -3, 1.5, -0.0, 2**70, 10**30, "", "lots", "x y", "text-delta",
                   "TEXT_MESSAGE_CONTENT", [], [1, "x"], {}, {"a": None}, {"type": "text"},
                   [{"type": "text", "text": 3}]]
READERS = {"ag-ui": ["ag-ui", "ag-kit"], "ag-kit": ["ag-kit"], "vercel": ["vercel"], "a2a": ["a2a"],
           "agent-respond": ["agent-respond"], "langgraph": ["langgraph"], "openai-chat": ["openai-chat"],
           "openai-responses": ["openai-responses"]}
"""The decoders that read each dialect's streams (AG-Kit's reads AG-UI too)."""
GONE = object()
WALL_CLOCK = re.compile(r'(\\?"timestamp\\?":\\?")[0-9T:.Z-]+')
"""An A2A status's `timestamp`: the time it was written, which two runs do not share."""


class _FromSource:
    """A finder that imports the compiled modules from their `.py`, and finds none of the modules in C (their Python
    stands in): the pure-Python run of the same checkout."""

    def __init__(self, modules: Sequence[str], native: Sequence[str]) -> None:
        self.modules = set(modules)
        self.native = set(native)

    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None) -> ModuleSpec | None:
        if name in self.native:
            raise ModuleNotFoundError(f"{name} is left out of the pure-Python run", name=name)
        if name not in self.modules:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.origin is None or not spec.origin.endswith(tuple(EXTENSION_SUFFIXES)):
            return spec
        suffix = next(s for s in EXTENSION_SUFFIXES if spec.origin.endswith(s))
        return importlib.util.spec_from_file_location(name, spec.origin[: -len(suffix)] + ".py")


def _frames(path: Path) -> tuple[bool, list[Any], list[bytes]]:
    """(whether the body is SSE, its frames' JSON values, or text where a frame is not JSON, and their `event:`
    lines, which name what a frame is in LangGraph's streams)."""
    raw = path.read_bytes()
    if path.suffix == ".json":
        return False, [json.loads(raw)], [b""]
    frames: list[Any] = []
    names: list[bytes] = []
    for block in raw.replace(b"\r\n", b"\n").split(b"\n\n"):
        lines = block.split(b"\n")
        data = b"\n".join(line[5:].lstrip() for line in lines if line.startswith(b"data:"))
        if data:
            try:
                frames.append(json.loads(data))
            except ValueError:
                frames.append(data.decode())
            names.append(b"".join(line + b"\n" for line in lines if line.startswith(b"event:")))
    return True, frames, names


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


def _put(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for part in path[:-1]:
        value = value[part]
    if new is GONE and isinstance(value, dict):
        del value[path[-1]]
    else:
        value[path[-1]] = None if new is GONE else new


def _body(sse: bool, frames: list[Any], names: list[bytes]) -> bytes:
    def dump(frame: Any) -> bytes:  # json, not orjson: integers past 64 bits are part of the junk
        return frame.encode() if isinstance(frame, str) else json.dumps(frame, separators=(",", ":")).encode()

    return b"".join(name + b"data: " + dump(frame) + b"\n\n" for name, frame in zip(names, frames, strict=True)) \
        if sse else dump(frames[0])


def main(argv: list[str]) -> None:
    seed, cases = int(argv[0]), int(argv[1])
    sys.path.insert(0, str(ROOT))
    if "--pure" in argv:  # the list asked of another process: finding it imports the modules it lists, compiled
        listed, native = subprocess.run(
            [sys.executable, "-c", "from gateway.compiled import NATIVE, modules; print(*modules()); print(*NATIVE)"],
            capture_output=True, text=True, check=True, cwd=ROOT).stdout.splitlines()
        sys.meta_path.insert(0, _FromSource(listed.split(), native.split()))  # type: ignore[arg-type]

    from adapters import registry
    from gateway import compiled
    from gateway.conversations.recorder import RunRecorder
    from gateway.core import ids

    time.time = lambda: 1_800_000_000.0  # the same clock in both runs: replies that say when they were made (OpenAI's)

    def run(dialect: str, data: bytes) -> str:
        ids._source, ids._random, ids._used = random.Random(seed).randbytes, b"", 0  # the same ids in both runs
        try:
            decoder = registry.DIALECTS[dialect].new_decoder()
            events = [event for start in range(0, len(data), 97) for event in decoder.feed(data[start:start + 97])]
            events += decoder.close()
        except Exception as exc:
            return f"decode: {type(exc).__name__}: {exc}"
        out = [repr(events)]
        try:
            recorder = RunRecorder()
            recorder.record(events)
            out.append(f"{recorder.close()!r} {recorder.usage!r} {recorder.pending_tools!r} {recorder.state.value!r}")
        except Exception as exc:
            out.append(f"record: {type(exc).__name__}: {exc}")
        for name, target in registry.DIALECTS.items():
            try:
                out.append(f"{name}: {target.new_encoder(None).encode(events)!r}")
            except Exception as exc:
                out.append(f"encode {name}: {type(exc).__name__}: {exc}")
        return WALL_CLOCK.sub(r"\1<now>", "\n  ".join(out))

    print(f"codecs {compiled.summary()}")
    fixtures = {path: _frames(path) for path in sorted([*FIXTURES.glob("*/*"), *FIXTURES.glob("crafted/*/*")])
                if path.suffix in (".sse", ".json")}
    types = {path.parent.name: sorted({frame[key] for other, (_, frames, _) in fixtures.items()
                                       if other.parent == path.parent for frame in frames if isinstance(frame, dict)
                                       for key in ("type", "kind") if isinstance(frame.get(key), str)})
             for path in fixtures}
    rng = random.Random(seed)
    paths = list(fixtures)
    for case in range(cases):
        path = paths[rng.randrange(len(paths))]
        sse, frames, names = copy.deepcopy(fixtures[path])
        dialect = path.parent.name
        for _ in range(rng.choice([1, 1, 2, 3, 6])):
            frame = frames[rng.randrange(len(frames))]
            where = [p for p in _paths(frame) if p] if isinstance(frame, (dict, list)) else []
            if where:
                draw = rng.random()
                new = (GONE if draw < 0.15 else rng.choice(types[dialect]) if draw < 0.3 and types[dialect]
                       else copy.deepcopy(rng.choice(JUNK)))
                _put(frame, where[rng.randrange(len(where))], new)
        data = _body(sse, frames, names)
        for reader in READERS[dialect]:
            print(f"### {case} {dialect}/{path.name} read as {reader}\n  {run(reader, data)}")


if __name__ == "__main__":
    main(sys.argv[1:])
