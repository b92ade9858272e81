"""The command line's recordings: `replay` serves them as an agent, `check --recording` judges them and
`translate` reads them (the parsers are `gateway.cli`'s)."""

from __future__ import annotations

import argparse
import logging
import sys

from gateway.recordings import offline
from gateway.recordings.exchange import Recorded, RecordingError, read

log = logging.getLogger("agent_gateway.replay")


def load(parser: argparse.ArgumentParser, paths: list[str]) -> list[Recorded]:
    """The exchanges of `paths`; a bad file is the parser's one-line error."""
    try:
        recorded = read(paths)
    except RecordingError as exc:
        parser.error(str(exc))
    if not recorded:
        parser.error(f"{', '.join(paths)}: no exchange recorded")
    return recorded


def replay(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Serve the recordings as an agent, until stopped."""
    import uvicorn

    from gateway.commands import bind
    from gateway.recordings.replay import ReplayApp
    from gateway.server.connections.drain import exit_quietly_when_stopped
    from gateway.server.operations import logs

    recorded = load(parser, args.files)
    speed = None if args.at_once else args.speed
    app = ReplayApp(recorded, speed)
    logs.configure("human", "info")
    sock = bind(args.host, args.port)
    if sock is None:
        return 2
    timing = "at once" if speed is None else "with the recorded timing" if speed == 1 else f"{speed:g} times as fast"
    paths = ", ".join(f"http://{args.host}:{args.port}{path}" for path in sorted(app.paths))
    print(f"agent-gateway replay: {len(recorded)} exchanges ({'; '.join(app.turns())}), {timing}, at {paths}",
          file=sys.stderr)
    exit_quietly_when_stopped()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def check(parser: argparse.ArgumentParser, paths: list[str], as_json: bool) -> int:
    """Judge every recorded reply by its dialect's rules; 1 when any broke one."""
    import orjson

    judged = offline.judge(load(parser, paths))
    failed = sum(j.failed for j in judged)
    skipped = sum(j.skipped is not None for j in judged)
    if as_json:
        report = {"recordings": paths, "pass": len(judged) - failed - skipped, "fail": failed, "skip": skipped,
                  "results": [{"where": j.where, "side": j.side, "dialect": j.dialect, "events": j.events,
                               "outcome": "skip" if j.skipped else "fail" if j.failed else "pass",
                               "violations": [{"rule": v.rule, "message": v.message, "frame": v.frame,
                                               "index": v.index} for v in j.violations]} for j in judged]}
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        print(f"agent-gateway check --recording {' '.join(paths)}")
        for result in judged:
            print("\n".join(result.lines()))
        print(f"{len(judged) - failed - skipped} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


def translate(parser: argparse.ArgumentParser, args: argparse.Namespace, data: bytes) -> int:
    """`translate` of a recording: each exchange's upstream reply, in the recorded dialect, re-encoded."""
    from gateway.recordings.exchange import parse

    try:
        recorded = [parse(line, f"{args.input}:{number}") for number, line in enumerate(data.splitlines(), 1)
                    if line.strip()]
    except RecordingError as exc:
        parser.error(str(exc))
    dialects = sorted({r.upstream_dialect for r in recorded})
    if args.source is not None and dialects != [args.source]:
        parser.error(f"--from {args.source}: the recording's upstream spoke {' and '.join(dialects)}; leave --from "
                     "out to read it as recorded")
    body, events = offline.translate(recorded, args.target, args.variant)
    sys.stdout.buffer.write(body)
    failed = [e for e in events if type(e).__name__ == "RunError"]
    for error in failed:
        print(f"agent-gateway translate: a recorded run failed: {getattr(error, 'message', '')}", file=sys.stderr)
    return 1 if failed else 0
