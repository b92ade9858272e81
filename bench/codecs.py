"""Codec throughput: translated text-delta events per second for every (upstream dialect -> client dialect) pair.

Method. For each source dialect a realistic upstream body is made by encoding one canonical run with that
dialect's own encoder: `RunStarted`, `TextStart`, N `TextDelta` ("tok0 ", "tok1 ", ...), `TextEnd`, one tool call
(`ToolCallStart`, 3 `ToolCallArgs`, `ToolCallEnd`, `ToolResult`) and `RunFinished`. The body is cut, outside the
timer, into the pieces a network read would deliver: one SSE frame per piece (split after each blank line, the
separator kept) or, with `--chunk N`, fixed N-byte pieces. An agent-respond body is one JSON document and is always
fed whole.

One repetition of a pair is the gateway's hot path for one run: a new source decoder and a new target encoder, every
piece fed to `decoder.feed()`, every non-empty event list handed to `encoder.encode()`, then `decoder.close()` and
its events encoded too. It is timed with `time.perf_counter`, garbage collection left on. Each pair gets one
untimed warm-up repetition (which also checks that the run came through whole), then timed repetitions until it
has spent `--seconds` in them and made at least `--min-reps`. The pairs take turns, each running for a tenth of its
budget per round, so that a slow spell of the machine is shared by all pairs instead of landing on a few. The
fastest repetition is reported (`--stat median` for the median): a slower repetition is the same code plus
interference from outside, and on a shared or virtual host the median moves by tens of percent from one run to the
next while the best stays within a percent or two. The headline line prints both.

The figure is N / (seconds per repetition): text-delta events of the upstream run translated per second. An
agent-respond source carries those N deltas already joined into one message (it decodes to a single `TextDelta`),
so its row reads "the run's N tokens' worth per second" and is not comparable with the streamed rows. The process
is pinned to one core (`--core`, default 0) so the numbers are single-core numbers.

AG-UI over protobuf is one more source and target, `ag-ui/proto`, when the `protobuf` runtime is installed: the
AG-UI dialect asked for (and answering in) `application/vnd.ag-ui.event+proto`, fed one length-prefixed event per
piece.

A2A over gRPC is one more source and target, `a2a/grpc`, when the `protobuf` runtime is installed: the A2A stream
as the gateway's gRPC listener asks a route for it, each response a length-prefixed protobuf `StreamResponse` (what
the listener sends on as the call's messages), beside `a2a`'s JSON-RPC over SSE; as a source, the same messages as
the gateway's gRPC calls hand an agent's answer to its decoder (`grpc_decode`), fed one message per piece.

A2A over HTTP+JSON is one more source and target, `a2a/rest`: the same stream responses as `a2a`'s, bare (no
JSON-RPC envelope), each an SSE `data:` frame, as the binding's clients read them and its agents send them.

MCP has two sources. `mcp` is, as every row, its own encoder's stream: the gateway's MCP face, whose progress
notifications each repeat the text so far and go out as it grows by an eighth (so about 60 notifications carry the
N deltas, and the row, like agent-respond's, reads as N tokens' worth per second), then the result with the tool
call in `structuredContent`. `mcp/per-delta` (a source only) is what an MCP server on the official Python SDK sends
when its tool reports each delta (`ctx.report_progress(i, message=text_so_far)`, as `tests/peers/mcp_server.py`
does), byte for byte as `mcp` 2.3.0 writes it: `event: message`, CRLF line ends, one progress notification a delta
holding the whole text so far, then the result (`content`, `structuredContent: {"result": text}`). Its body grows
with the square of the answer (14 MB for the default 2,000 deltas), and so does the cost of reading it.

Run it with the project's interpreter (the script puts the repository root on `sys.path` itself):

    python bench/codecs.py                  # Markdown tables, about 20 s
    python bench/codecs.py --events 500 --seconds 0.5 --chunk 4096 --core 1
    python bench/codecs.py --json           # one JSON object instead
    python bench/codecs.py --dialects ag-ui,mcp,mcp/per-delta    # only these sources and targets

The headline is "ag-kit -> ag-ui text-delta events/s", set against two targets (`TARGET_NOW`, `TARGET_LATER`).
The script always exits 0: it reports, it does not gate. A wide gap between the best and the median means something
else was competing for the core (or the host's) while it ran.

Type-check it as `mypy --explicit-package-bases bench/codecs.py`: without that flag mypy names the file `codecs`,
which shadows the standard library module of that name (and leaves a confusing cache behind).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from adapters import registry  # noqa: E402
from gateway.core.codec import Dialect  # noqa: E402
from gateway.core.events import (  # noqa: E402
    Event,
    RunError,
    RunFinished,
    RunStarted,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from gateway.core.sse import DEFAULT_MAX_FRAME  # noqa: E402
from gateway.core.turn import Turn  # noqa: E402

HEADLINE = ("ag-kit", "ag-ui")
PROTO = "ag-ui/proto"
A2A_GRPC = "a2a/grpc"
A2A_REST = "a2a/rest"
"""A2A's stream as its gRPC listener carries it: a target only."""
PER_DELTA = "mcp/per-delta"
"""An MCP server on the official SDK reporting each delta as progress with the text so far: a source only."""
TARGET_NOW = 300_000
TARGET_LATER = 1_000_000
ROUNDS = 10
"""Each pair's time budget is spent in this many slices, interleaved with the other pairs."""
TOOL_ARGS = ('{"city":', ' "Paris",', ' "unit": "celsius"}')


@dataclass(slots=True)
class Workload:
    source: str
    body: bytes
    chunks: list[bytes]


@dataclass(slots=True)
class Check:
    """What one untimed run produced: enough to tell that the translation came through whole."""

    events: int
    text_deltas: int
    text: str
    """The text the decoded deltas make: the run's whole text, whether it came in N deltas or fewer."""
    terminal: str
    out_bytes: int


@dataclass(slots=True)
class PairResult:
    source: str
    target: str
    reps: int
    best_s: float
    median_s: float
    check: Check

    def seconds(self, stat: str) -> float:
        return self.best_s if stat == "best" else self.median_s


def canonical_run(n: int) -> list[Event]:
    message_id, call_id = "msg_bench", "call_bench"
    events: list[Event] = [RunStarted(thread_id="thread_bench", run_id="run_bench"), TextStart(message_id)]
    events.extend(TextDelta(message_id, f"tok{i} ") for i in range(n))
    events.append(TextEnd(message_id))
    events.append(ToolCallStart(call_id, "get_weather", parent_message_id=message_id))
    events.extend(ToolCallArgs(call_id, part) for part in TOOL_ARGS)
    events.append(ToolCallEnd(call_id))
    events.append(ToolResult(call_id, '{"temperature": 21, "unit": "celsius"}'))
    events.append(RunFinished())
    return events


def encode_upstream(dialect: Dialect, events: list[Event]) -> bytes:
    """The body an upstream of this dialect sends for the run, event by event as a server would stream it."""
    encoder = dialect.new_encoder(None)
    return b"".join(encoder.encode([event]) for event in events)


def split_frames(body: bytes) -> list[bytes]:
    """One piece per SSE frame: cut after every blank line, the separator kept with its frame."""
    pieces = [frame + b"\n\n" for frame in body.split(b"\n\n")]
    pieces[-1] = pieces[-1][:-2]
    return [piece for piece in pieces if piece]


def split_fixed(body: bytes, size: int) -> list[bytes]:
    return [body[i:i + size] for i in range(0, len(body), size)]


def split_proto(body: bytes) -> list[bytes]:
    """One piece per length-prefixed protobuf event."""
    pieces, at = [], 0
    while at < len(body):
        end = at + 4 + int.from_bytes(body[at:at + 4], "big")
        pieces.append(body[at:end])
        at = end
    return pieces


def protobuf_ag_ui() -> Dialect | None:
    """AG-UI over protobuf as a dialect of its own, for the tables; None without the `protobuf` runtime."""
    from adapters.ag_ui import proto

    if not proto.available():
        return None
    ag_ui = registry.get("ag-ui")
    asked = Turn(accept=proto.MEDIA_TYPE)

    def new_decoder(max_event_bytes: int = DEFAULT_MAX_FRAME) -> Any:
        return proto.decoder_for(proto.MEDIA_TYPE, max_event_bytes)

    return replace(ag_ui, name=PROTO, new_encoder=lambda request: ag_ui.new_encoder(asked), new_decoder=new_decoder)


def protobuf_a2a() -> Dialect | None:
    """A2A's stream as protobuf `StreamResponse` messages (the gRPC binding's), a source and target for the tables;
    None without the `protobuf` runtime."""
    from adapters.a2a import grpc_wire, proto

    if not proto.available():
        return None
    from adapters.a2a.grpc_decode import A2AProtoDecoder

    a2a = registry.get("a2a")
    asked = Turn(accept=grpc_wire.MEDIA_TYPE)
    return replace(a2a, name=A2A_GRPC, new_encoder=lambda request: a2a.new_encoder(asked),
                   new_decoder=A2AProtoDecoder)


def rest_a2a() -> Dialect:
    """A2A's stream on its HTTP+JSON binding (bare stream responses over SSE), a source and target for the tables;
    its decoder tells the binding from the first response, as from an agent's."""
    a2a = registry.get("a2a")
    asked = Turn(metadata={"a2a": {"binding": True}})
    return replace(a2a, name=A2A_REST, new_encoder=lambda request: a2a.new_encoder(asked))


def mcp_per_delta(dialect: Dialect) -> Dialect:
    """MCP's decoder reading what an SDK server sends when it reports every delta (see `mcp_sdk_frames`)."""
    return replace(dialect, name=PER_DELTA)


def mcp_sdk_frames(n: int) -> list[bytes]:
    """The SSE frames `mcp` 2.3.0's MCPServer writes for a tool that reports the text so far after each of the run's
    N deltas, then returns it: the bytes of `tests/peers/mcp_server.py`'s `agent` tool, with the run's text."""
    frames, text = [], ""
    for i, event in enumerate(e for e in canonical_run(n) if isinstance(e, TextDelta)):
        text += event.delta
        notification = {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": 1, "progress": i + 1, "message": text}}
        frames.append(b"event: message\r\ndata: " + orjson.dumps(notification) + b"\r\n\r\n")
    result = {"jsonrpc": "2.0", "id": 1, "result": {"content": [{"text": text, "type": "text"}], "isError": False,
                                                    "structuredContent": {"result": text}}}
    frames.append(b"event: message\r\ndata: " + orjson.dumps(result) + b"\r\n\r\n")
    return frames


def make_workload(dialect: Dialect, n: int, chunk: int | None) -> Workload:
    if dialect.name == PER_DELTA:
        frames = mcp_sdk_frames(n)
        body = b"".join(frames)
        return Workload(dialect.name, body, split_fixed(body, chunk) if chunk else frames)
    body = encode_upstream(dialect, canonical_run(n))
    if not dialect.new_encoder(None).streams:
        chunks = [body]
    elif chunk:
        chunks = split_fixed(body, chunk)
    elif dialect.name in (PROTO, A2A_GRPC):
        chunks = split_proto(body)
    else:
        chunks = split_frames(body)
    if b"".join(chunks) != body:
        raise AssertionError(f"{dialect.name}: splitting lost bytes")
    return Workload(dialect.name, body, chunks)


def translate(source: Dialect, target: Dialect, chunks: list[bytes]) -> int:
    """One run through the hot path; the bytes written to the client, so that nothing is optimised away."""
    decoder = source.new_decoder()
    encoder = target.new_encoder(None)
    feed = decoder.feed
    encode = encoder.encode
    written = 0
    for chunk in chunks:
        events = feed(chunk)
        if events:
            written += len(encode(events))
    events = decoder.close()
    if events:
        written += len(encode(events))
    return written


def check_run(source: Dialect, target: Dialect, chunks: list[bytes]) -> Check:
    """The same run as `translate`, instrumented and untimed (it is also the warm-up)."""
    decoder = source.new_decoder()
    encoder = target.new_encoder(None)
    decoded: list[Event] = []
    written = 0
    for chunk in chunks:
        events = decoder.feed(chunk)
        decoded.extend(events)
        if events:
            written += len(encoder.encode(events))
    events = decoder.close()
    decoded.extend(events)
    if events:
        written += len(encoder.encode(events))
    last = decoded[-1] if decoded else None
    if isinstance(last, RunError):
        terminal = f"RunError({last.code}: {last.message})"
    elif isinstance(last, RunFinished):
        terminal = f"RunFinished({last.outcome})"
    else:
        terminal = type(last).__name__
    deltas = [e for e in decoded if type(e) is TextDelta]
    return Check(len(decoded), len(deltas), "".join(e.delta for e in deltas), terminal, written)


def bench_all(sources: dict[str, Dialect], targets: dict[str, Dialect], workloads: dict[str, Workload],
              seconds: float, min_reps: int, progress: bool) -> dict[tuple[str, str], PairResult]:
    """Time every pair, interleaved: round after round, each pair unfinished runs for a slice of its budget.

    Spreading each pair over the whole run, instead of giving it one contiguous second, keeps a slow spell of the
    machine (another process, a busy neighbour on a virtual host) from landing on a few pairs only.
    """
    pairs = [(s, t) for s in sources for t in targets]
    checks: dict[tuple[str, str], Check] = {}
    for s, t in pairs:  # the warm-up repetition, which also checks the translation
        checks[s, t] = check_run(sources[s], targets[t], workloads[s].chunks)
    times: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
    spent = dict.fromkeys(pairs, 0.0)
    clock = time.perf_counter
    slice_s = seconds / ROUNDS
    todo = pairs
    round_no = 0
    while todo:
        round_no += 1
        if progress:
            print(f"  round {round_no}: {len(todo)} pairs", file=sys.stderr, flush=True)
        for s, t in todo:
            source, target, chunks, reps = sources[s], targets[t], workloads[s].chunks, times[s, t]
            deadline = clock() + slice_s
            while True:
                start = clock()
                translate(source, target, chunks)
                end = clock()
                reps.append(end - start)
                spent[s, t] += end - start
                if end >= deadline:
                    break
        todo = [pair for pair in pairs if spent[pair] < seconds or len(times[pair]) < min_reps]
    return {
        (s, t): PairResult(s, t, len(times[s, t]), min(times[s, t]), statistics.median(times[s, t]), checks[s, t])
        for s, t in pairs
    }


def pin(core: int) -> str:
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity on this platform)"
    try:
        os.sched_setaffinity(0, {core})
    except OSError as exc:
        return f"not pinned ({exc})"
    return f"pinned to core {core}"


def fmt_rate(value: float) -> str:
    return f"{value:,.0f}"


def fmt_us(value: float) -> str:
    return f"{value:.2f}"


def table(sources: list[str], targets: list[str], cell: dict[tuple[str, str], str]) -> str:
    lines = ["| source \\ target | " + " | ".join(targets) + " |", "|---|" + "---:|" * len(targets)]
    lines.extend(f"| **{s}** | " + " | ".join(cell[s, t] for t in targets) + " |" for s in sources)
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--events", type=int, default=2000, help="text-delta events in the run (default 2000)")
    parser.add_argument("--seconds", type=float, default=1.0, help="timed seconds per pair (default 1.0)")
    parser.add_argument("--min-reps", type=int, default=3, help="at least this many timed repetitions (default 3)")
    parser.add_argument("--chunk", type=int, default=None, metavar="N",
                        help="feed fixed N-byte chunks instead of one SSE frame per feed() call")
    parser.add_argument("--core", type=int, default=0, help="CPU core to pin the process to (default 0)")
    parser.add_argument("--stat", choices=("best", "median"), default="best",
                        help="which repetition to report (default best)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of Markdown tables")
    parser.add_argument("--dialects", default=None, metavar="A,B",
                        help="only these sources and targets (default: every dialect, ag-ui/proto, mcp/per-delta, "
                        "a2a/grpc, a2a/rest)")
    args = parser.parse_args(argv)
    if args.events < 1 or args.min_reps < 1 or args.seconds < 0 or (args.chunk is not None and args.chunk < 1):
        parser.error("--events, --min-reps and --chunk must be positive, --seconds not negative")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    pinned = pin(args.core)
    n: int = args.events
    stat: str = args.stat
    dialects = dict(registry.DIALECTS)
    if (protobuf := protobuf_ag_ui()) is not None:
        dialects[PROTO] = protobuf
    sources = {**dialects, PER_DELTA: mcp_per_delta(dialects["mcp"])}
    if args.dialects:
        asked = args.dialects.split(",")
        unknown = [name for name in asked if name not in sources and name not in (A2A_GRPC, A2A_REST)]
        if unknown:
            print(f"unknown dialects {unknown}: choose among {list(sources)}", file=sys.stderr)
            return 2
        sources = {name: sources[name] for name in asked if name in sources}
        dialects = {name: dialects[name] for name in asked if name in dialects}
    if (grpc := protobuf_a2a()) is not None and (not args.dialects or A2A_GRPC in args.dialects.split(",")):
        dialects[A2A_GRPC] = sources[A2A_GRPC] = grpc
    if not args.dialects or A2A_REST in args.dialects.split(","):
        dialects[A2A_REST] = sources[A2A_REST] = rest_a2a()
    names, targets = list(sources), list(dialects)
    workloads = {name: make_workload(sources[name], n, args.chunk) for name in names}

    results = bench_all(sources, dialects, workloads, args.seconds, args.min_reps, progress=not args.json)

    rate = {pair: n / r.seconds(stat) for pair, r in results.items()}
    headline = rate.get(HEADLINE)
    feeding = f"{args.chunk}-byte chunks" if args.chunk else "one SSE frame per feed()"
    text = "".join(e.delta for e in canonical_run(n) if isinstance(e, TextDelta))
    problems = [
        f"{s} -> {t}: decoded {r.check.text_deltas} TextDelta of {len(r.check.text)} characters (expected the "
        f"run's {len(text)}), ended {r.check.terminal}"
        for (s, t), r in results.items()
        if r.check.text != text or not r.check.terminal.startswith("RunFinished")
    ]

    if args.json:
        report: dict[str, Any] = {
            "method": "text-delta events of the upstream run / seconds per repetition (new decoder + encoder, "
                      "feed all pieces, encode each non-empty event list, close)",
            "stat": stat,
            "events": n,
            "feeding": feeding,
            "seconds_per_pair": args.seconds,
            "min_reps": args.min_reps,
            "affinity": pinned,
            "python": platform.python_version(),
            "orjson": orjson.__version__,
            "upstream": {name: {"bytes": len(w.body), "pieces": len(w.chunks)} for name, w in workloads.items()},
            "results": {
                s: {
                    t: {
                        "events_per_s": rate[s, t],
                        "us_per_event": 1e6 / rate[s, t],
                        "reps": results[s, t].reps,
                        "best_s": results[s, t].best_s,
                        "median_s": results[s, t].median_s,
                        "canonical_events": results[s, t].check.events,
                        "decoded_text_deltas": results[s, t].check.text_deltas,
                        "terminal": results[s, t].check.terminal,
                        "client_bytes": results[s, t].check.out_bytes,
                    }
                    for t in targets
                }
                for s in names
            },
            "headline": None if headline is None else {
                "pair": "ag-kit -> ag-ui", "events_per_s": headline, "best_events_per_s": n / results[HEADLINE].best_s,
                "median_events_per_s": n / results[HEADLINE].median_s, "target_now": TARGET_NOW,
                "target_later": TARGET_LATER, "meets_now": headline >= TARGET_NOW,
                "meets_later": headline >= TARGET_LATER},
            "problems": problems,
        }
        print(orjson.dumps(report, option=orjson.OPT_INDENT_2).decode())
        return 0

    print(f"# Codec throughput: {n} text deltas per run, {feeding}, {stat} of >= {args.min_reps} reps "
          f"over {args.seconds:g} s per pair")
    print()
    print(f"Python {platform.python_version()}, orjson {orjson.__version__}, {pinned}. Upstream bodies: "
          + ", ".join(f"{name} {len(w.body):,} B in {len(w.chunks):,} pieces" for name, w in workloads.items())
          + ".")
    print()
    print("## Text-delta events/s (rows: upstream dialect decoded, columns: client dialect encoded)")
    print()
    print(table(names, targets, {pair: fmt_rate(value) for pair, value in rate.items()}))
    print()
    print("## µs per text-delta event")
    print()
    print(table(names, targets, {pair: fmt_us(1e6 / value) for pair, value in rate.items()}))
    print()
    print("agent-respond is not streamed: its row decodes one JSON body whose N deltas are already joined into one")
    print("message, so it reads as N tokens' worth per second, not comparable with the streamed rows; so does mcp's,")
    print("whose progress notifications carry the text so far as it grows by an eighth. mcp/per-delta is an SDK")
    print("server's one notification a delta, each with the whole text so far: a body in the square of the answer.")
    print()
    for problem in problems:
        print(f"WARNING: {problem}")
    if problems:
        print()
    if headline is None:
        return 0
    verdict_now = "meets" if headline >= TARGET_NOW else "BELOW"
    verdict_later = "meets" if headline >= TARGET_LATER else "below"
    head = results[HEADLINE]
    print(f"ag-kit -> ag-ui text-delta events/s: {fmt_rate(headline)} "
          f"({verdict_now} the {TARGET_NOW:,} target now; {verdict_later} the {TARGET_LATER:,} target later; "
          f"{stat} of {head.reps} reps; best {fmt_rate(n / head.best_s)}, median {fmt_rate(n / head.median_s)})")
    return 0


if __name__ == "__main__":
    main()
    sys.exit(0)
