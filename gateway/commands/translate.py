"""`agent-gateway translate`: a recorded stream, decoded as one dialect and re-encoded in another with the proxy's
own codecs; with no input, a built-in AG-Kit run, so it works on a fresh install with no agent anywhere."""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from adapters import registry
from gateway.core.errors import ErrorCode
from gateway.core.events import Event, Raw, RunError, RunFinished, RunStarted
from gateway.core.turn import Turn


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from gateway.recordings.exchange import is_recording

    if args.input is None:
        args.source = args.source or "ag-kit"
        samples = {path.name.removesuffix(".sse"): path for path in resources.files("gateway.samples").iterdir()
                   if path.name.endswith(".sse")}
        if args.source not in samples:
            parser.error(f"the built-in sample is {' and '.join(sorted(samples))}: give an INPUT for --from "
                         f"{args.source}")
        data = samples[args.source].read_bytes()
    elif args.input == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(args.input, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            parser.error(f"cannot read {args.input}: {exc.strerror}")
    if mismatch := registry.variant_mismatch(args.variant, args.target, flag="--to"):
        parser.error(mismatch)
    if args.input is not None and (problem := _unreadable(data)):
        parser.error(f"{'the standard input' if args.input == '-' else args.input} {problem}")
    if is_recording(data):
        from gateway.commands import recordings

        return recordings.translate(parser, args, data)
    args.source = args.source or "ag-kit"
    decoder = registry.get(args.source).new_decoder()
    encoder = registry.get(args.target).new_encoder(Turn(variant=args.variant))
    events = decoder.feed(data) + decoder.close()
    sys.stdout.buffer.write(encoder.encode(events))
    if not encoder.streams:
        sys.stdout.buffer.write(b"\n")
    failed = isinstance(events[-1], RunError)
    unread = [str(e.event.get("type", "?")) for e in events if isinstance(e, Raw)]
    read_nothing = bool(unread) and _read(events) == 0
    if read_nothing or (failed and unread):  # most often the wrong --from: say so once, and what it looks like
        kinds = ", ".join(repr(kind) for kind in list(dict.fromkeys(unread))[:5])
        likely = _dialect_of(data, args.source)
        guess = f"the input reads as {likely}: try --from {likely}" if likely else f"is --from {args.source} right?"
        print(f"agent-gateway translate: {len(unread)} frames are not {args.source} ({kinds}); {guess}",
              file=sys.stderr)
    if isinstance(error := events[-1], RunError):
        said = "the input ends before its run does" if error.code == ErrorCode.UPSTREAM_TRUNCATED else error.message
        print(f"agent-gateway translate: the run failed: {said}", file=sys.stderr)
    failed = failed or read_nothing
    return 1 if failed else 0


def _unreadable(data: bytes) -> str | None:
    """Why `data` cannot be a recorded stream, which is text (SSE, JSON, a recording's JSON lines); None if it may
    be one."""
    if not data.strip():
        return "is empty: nothing to translate"
    try:
        data.decode()
    except UnicodeDecodeError:
        return "is not text: a recorded stream is SSE or JSON in UTF-8"
    return None


def _read(events: list[Event]) -> int:
    """How many of a run's events its decoder made sense of, beyond the run's start and end."""
    return sum(not isinstance(e, RunStarted | RunFinished | RunError | Raw) for e in events)


def _dialect_of(data: bytes, not_this: str) -> str | None:
    """The dialect, other than `not_this`, whose decoder reads nearly all of a recording's frames (all but one in
    ten), the best such; None if none does."""
    unread: dict[str, float] = {}
    for name, dialect in registry.DIALECTS.items():
        events = dialect.new_decoder().feed(data)
        if name != not_this and events:
            unread[name] = sum(isinstance(e, Raw) for e in events) / len(events)
    best = min(unread, key=lambda name: unread[name], default=None)
    return best if best is not None and unread[best] <= 0.1 else None
