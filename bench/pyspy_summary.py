"""Where a py-spy profile's time goes: `py-spy record --native --format raw` stacks, charged to layers.

    .venv/bin/python bench/pyspy_summary.py PROFILE.raw [--us-per-event 12.3]

Each sample (py-spy records only samples where the process is on a CPU) is charged to one layer: a system call
(the leaf is a libc syscall wrapper: read, write, epoll_wait, ...) first, else the innermost frame that belongs to a
known layer, walking from the leaf towards the root (interpreter frames, `ceval.c` and the like, belong to no
layer and are walked past, so their time lands on the Python code they were running). With `--us-per-event` (the
CPU the system under test spent per event in the same window) each share is also given in µs per event.

Also printed: the hottest functions by self time (leaf Python frame) and the gateway's and adapters' own lines by
inclusive time (the call sites to look at first).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass

_FRAME = re.compile(r"^(?P<name>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")
SYSCALLS = frozenset({
    "read", "write", "writev", "readv", "send", "sendto", "sendmsg", "recv", "recvfrom", "recvmsg", "epoll_wait",
    "epoll_pwait", "epoll_ctl", "poll", "select", "accept", "accept4", "close", "connect", "socket", "setsockopt",
    "getsockopt", "getsockname", "getpeername", "shutdown", "getpid", "clock_gettime", "futex", "__lll_lock_wait",
    "fstat", "fstatat", "newfstatat", "stat", "openat", "open", "lseek", "ioctl", "fcntl", "pipe2", "eventfd",
    "__libc_read", "__libc_write", "__write", "__read", "__send", "__recv", "__GI___libc_write", "__GI___libc_read",
    "__GI___writev", "__libc_recv", "__libc_send", "syscall", "madvise", "mmap", "munmap", "brk", "mprotect",
})
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("gateway: relay and call (gateway/server/route, call, relay, client, deadlines, record)",
     ("gateway/server/route.py", "gateway/server/request/call.py", "gateway/server/stream/relay.py",
      "gateway/server/stream/client.py", "gateway/server/stream/deadlines.py", "gateway/server/operations/record.py")),
    ("gateway: codecs (sse, repair, decode, encode)", ("gateway/core/sse.py", "gateway/core/repair.py",
                                                       "gateway/core/codec.py", "gateway/core/decoding.py",
                                                       "gateway/core/encoding.py", "/decode.py", "/encode.py",
                                                       "gateway/core/events.py")),
    ("gateway: conversation (mapper, recorder, store, state)", ("gateway/conversations/", "gateway/core/state.py")),
    ("gateway: request parse/build (adapters */request.py, pydantic)",
     ("/request.py", "gateway/core/validation.py", "gateway/core/turn.py", "pydantic/", "pydantic_core/")),
    ("gateway: access log (logging)", ("gateway/server/operations/logs.py", "logging/")),
    ("gateway: metrics (prometheus_client)", ("gateway/server/operations/metrics.py", "prometheus_client/")),
    ("gateway: other", ("gateway/", "adapters/")),
    ("upstream client: httpx", ("httpx/",)),
    ("upstream client: httpx-aiohttp", ("httpx_aiohttp/",)),
    ("upstream client: aiohttp", ("aiohttp/", "_http_parser", "multidict/", "yarl/", "_helpers")),
    ("upstream client: httpcore / h11", ("httpcore/", "h11/")),
    ("anyio", ("anyio/", "sniffio/")),
    ("starlette", ("starlette/",)),
    ("uvicorn", ("uvicorn/",)),
    ("asyncio (Python)", ("asyncio/",)),
    ("uvloop (C)", ("loop.c", "uvloop/", "libuv", "core.c", "stream.c", "linux.c", "uv-common.c", "timer.c")),
    ("httptools (C)", ("httptools/", "parser.c", "llhttp.c", "api.c", "http.c")),
    ("python GC", ("gc_collect", "gcmodule.c")),
]


@dataclass(slots=True)
class Frame:
    name: str
    file: str
    line: int | None


def parse_frame(text: str) -> Frame:
    m = _FRAME.match(text)
    if m is None:
        return Frame(text, "", None)
    line = m.group("line")
    return Frame(m.group("name"), m.group("file"), int(line) if line else None)


def layer_of(frame: Frame) -> str | None:
    where = frame.file
    if "gc_collect" in frame.name or where == "gcmodule.c":
        return "python GC"
    if "orjson" in where or frame.name.startswith("orjson"):
        return None  # charged to whoever called it
    for name, needles in LAYERS:
        if any(needle in where for needle in needles):
            return name
    if where.endswith(".py"):
        return "python: other (" + where.split("/")[0] + ")"
    return None


def classify(frames: list[Frame]) -> str:
    leaf = frames[-1]
    if leaf.name in SYSCALLS or (leaf.file.startswith("libc") and leaf.name.startswith("0x")):
        return "kernel: system calls (read, write, epoll, ...)"
    if any("gc_collect" in f.name for f in frames):
        return "python GC"
    for frame in reversed(frames):
        found = layer_of(frame)
        if found is not None:
            return found
    return "other (interpreter, libc)"


@dataclass(slots=True)
class Profile:
    samples: int
    layers: Counter[str]
    self_py: Counter[str]
    inclusive_lines: Counter[str]
    inclusive_funcs: Counter[str]
    inclusive_all: Counter[str]


def load(path: str) -> Profile:
    layers: Counter[str] = Counter()
    self_py: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    funcs: Counter[str] = Counter()
    every: Counter[str] = Counter()
    total = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            raw = raw.rstrip("\n")
            stack, _, count_text = raw.rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            frames = [parse_frame(part) for part in stack.split(";")]
            total += count
            layers[classify(frames)] += count
            py = [fr for fr in frames if fr.file.endswith(".py")]
            if py:
                leaf = py[-1]
                self_py[f"{leaf.name} ({leaf.file})"] += count
            seen_lines: set[str] = set()
            seen_funcs: set[str] = set()
            for key in {f"{fr.name} ({fr.file})" for fr in py}:
                every[key] += count
            for fr in py:
                if fr.file.startswith(("gateway/", "adapters/")):
                    seen_lines.add(f"{fr.file}:{fr.line} {fr.name}")
                    seen_funcs.add(f"{fr.name} ({fr.file})")
            for key in seen_lines:
                lines[key] += count
            for key in seen_funcs:
                funcs[key] += count
    return Profile(total, layers, self_py, lines, funcs, every)


def report(profile: Profile, us_per_event: float | None = None, top: int = 20) -> str:
    n = max(profile.samples, 1)

    def us(count: int) -> str:
        return f"{us_per_event * count / n:.2f}" if us_per_event else "-"

    out = [f"{profile.samples} samples" + (f"; {us_per_event:.2f} µs of CPU per event in the same window"
                                           if us_per_event else ""), "",
           "| layer | samples | share | µs/event |", "|---|---:|---:|---:|"]
    for name, count in profile.layers.most_common():
        out.append(f"| {name} | {count} | {100 * count / n:.1f}% | {us(count)} |")
    out += ["", f"Top {top} functions by self time (innermost Python frame):", "",
            "| function | share | µs/event |", "|---|---:|---:|"]
    for name, count in profile.self_py.most_common(top):
        out.append(f"| {name} | {100 * count / n:.1f}% | {us(count)} |")
    out += ["", f"Top {top} gateway/adapters functions by inclusive time:", "",
            "| function | share | µs/event |", "|---|---:|---:|"]
    for name, count in profile.inclusive_funcs.most_common(top):
        out.append(f"| {name} | {100 * count / n:.1f}% | {us(count)} |")
    out += ["", f"Top {top} functions of any module by inclusive time (below 90%: the frames every sample shares "
            "are left out):", "", "| function | share | µs/event |", "|---|---:|---:|"]
    for name, count in [(k, v) for k, v in profile.inclusive_all.most_common() if v < 0.9 * n][:top]:
        out.append(f"| {name} | {100 * count / n:.1f}% | {us(count)} |")
    out += ["", f"Top {top} gateway/adapters lines by inclusive time:", "",
            "| line | share | µs/event |", "|---|---:|---:|"]
    for name, count in profile.inclusive_lines.most_common(top):
        out.append(f"| {name} | {100 * count / n:.1f}% | {us(count)} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("raw", help="py-spy record --format raw output")
    parser.add_argument("--us-per-event", type=float, default=None)
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args(argv)
    sys.stdout.write(report(load(args.raw), args.us_per_event, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
