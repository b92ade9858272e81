"""`agent-gateway`: the command line.

`agent-gateway translate` re-encodes a recorded agent stream (or response body) from one dialect into another,
through the same codecs the proxy uses; with no input it translates a built-in AG-Kit run, so it works on a fresh
install with no agent anywhere.
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from adapters import registry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agent-gateway", description=__doc__.split("\n\n")[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    translate = commands.add_parser(
        "translate",
        help="translate a recorded stream from one dialect into another",
        description="Decode INPUT as the --from dialect and write it re-encoded in the --to dialect on stdout.",
    )
    names = list(registry.DIALECTS)
    translate.add_argument("input", nargs="?", help="a file, or - for stdin; default: a built-in AG-Kit sample run")
    translate.add_argument("--from", dest="source", choices=names, default="ag-kit",
                           help="the dialect the input is in (default: ag-kit)")
    translate.add_argument("--to", dest="target", choices=names, default="ag-ui",
                           help="the dialect to write (default: ag-ui)")
    translate.add_argument("--variant", choices=["inkeep"], help="the target's variant (vercel: inkeep)")
    args = parser.parse_args(argv)

    if args.input is None:
        data = resources.files("gateway.samples").joinpath("ag-kit.sse").read_bytes()
        if args.source != "ag-kit":
            parser.error("the built-in sample is an ag-kit stream: give an INPUT for --from " + args.source)
    elif args.input == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            with open(args.input, "rb") as handle:
                data = handle.read()
        except OSError as exc:
            parser.error(f"cannot read {args.input}: {exc.strerror}")
    decoder = registry.get(args.source).new_decoder()
    encoder = registry.get(args.target).new_encoder(args.variant)
    events = decoder.feed(data) + decoder.close()
    sys.stdout.buffer.write(encoder.encode(events))
    if not registry.get(args.target).streaming:
        sys.stdout.buffer.write(b"\n")
    return 0 if encoder.status_code < 400 else 1


if __name__ == "__main__":
    raise SystemExit(main())
