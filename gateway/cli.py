"""`agent-gateway`: the command line.

- `serve` runs the gateway, from a config file or, for one route, from flags;
- `translate` re-encodes a recorded stream from one dialect into another with the proxy's own codecs (with no
  input it translates a built-in AG-Kit run, so it works on a fresh install with no agent anywhere).
"""

from __future__ import annotations

import argparse
import sys
from importlib import resources

from adapters import registry
from gateway.config import ConfigError, GatewayConfig, Route, Store, Upstream, load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agent-gateway",
                                     description="A reverse proxy that translates between AI-agent dialects.")
    commands = parser.add_subparsers(dest="command", required=True)
    names = list(registry.DIALECTS)

    serve = commands.add_parser("serve", help="run the gateway",
                                description="Run the gateway: routes from --config, or one route from the flags.")
    serve.add_argument("--config", help="YAML configuration file (see config/)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8080, help="port to listen on (default: 8080)")
    serve.add_argument("--upstream", metavar="URL", help="without --config: the upstream agent's URL")
    serve.add_argument("--upstream-dialect", choices=names, help="without --config: the upstream's dialect")
    serve.add_argument("--client-dialect", choices=names, action="append",
                       help="without --config: a dialect clients speak (repeat; default: detect any)")
    serve.add_argument("--store", default="sqlite:///agent-gateway.db",
                       help="without --config: conversation store URL (memory://, sqlite:///file.db, redis://...)")

    translate = commands.add_parser(
        "translate", help="translate a recorded stream from one dialect into another",
        description="Decode INPUT as the --from dialect and write it re-encoded in the --to dialect on stdout.")
    translate.add_argument("input", nargs="?", help="a file, or - for stdin; default: a built-in AG-Kit sample run")
    translate.add_argument("--from", dest="source", choices=names, default="ag-kit",
                           help="the dialect the input is in (default: ag-kit)")
    translate.add_argument("--to", dest="target", choices=names, default="ag-ui",
                           help="the dialect to write (default: ag-ui)")
    translate.add_argument("--variant", choices=["inkeep"], help="the target's variant (vercel: inkeep)")

    args = parser.parse_args(argv)
    if args.command == "serve":
        return _serve(parser, args)
    return _translate(parser, args)


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.app import create_app

    try:
        if args.config:
            config = load_config(args.config)
        elif args.upstream and args.upstream_dialect:
            config = GatewayConfig(
                routes=[Route(upstream=Upstream(url=args.upstream, dialect=args.upstream_dialect),
                              client_dialects=args.client_dialect or "auto")],
                store=Store(url=args.store))
        else:
            parser.error("serve needs --config FILE, or --upstream URL with --upstream-dialect")
    except ConfigError as exc:
        print(f"agent-gateway: {exc}", file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"agent-gateway: {exc}", file=sys.stderr)
        return 2
    for route in config.routes:
        print(f"{route.name}: {', '.join(route.paths)} ({', '.join(route.dialects)}) -> "
              f"{route.upstream.url} ({route.upstream.dialect})", file=sys.stderr)
    uvicorn.run(create_app(config), host=args.host, port=args.port, log_level="info")
    return 0


def _translate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
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
