"""`agent-gateway`: the command line.

- `demo` runs the gateway in front of the built-in agent, in one process, and prints a request to try per dialect;
- `serve` runs the gateway, from a config file or, for one route, from flags;
- `agent` runs the built-in scripted agent in any dialect;
- `translate` re-encodes a recorded stream from one dialect into another with the proxy's own codecs (with no
  input it translates a built-in AG-Kit run, so it works on a fresh install with no agent anywhere);
- `check` sends an agent endpoint the standard conversations and judges its answers by its dialect's rules.
"""

from __future__ import annotations

import argparse
import asyncio
import errno
import os
import socket
import sys
import tempfile
from importlib import resources
from typing import TYPE_CHECKING, NoReturn, TextIO

import orjson
from pydantic import ValidationError

from adapters import registry
from gateway.config import ConfigError, GatewayConfig, Route, Store, Upstream, load_config
from gateway.core.events import Raw, RunError, RunFinished, RunStarted
from gateway.core.turn import Turn
from gateway.core.validation import error_message

if TYPE_CHECKING:
    from gateway.conversations.store import ConversationStore


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: use 1-65535")
    return port


def _workers(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"{count}: at least 1 worker")
    return count


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < seconds <= 3600:
        raise argparse.ArgumentTypeError(f"{text}: use more than 0 and at most 3600 seconds")
    return seconds


class _Parser(argparse.ArgumentParser):
    """Bad flags get one line saying what is wrong, and where to read more."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="agent-gateway", description="A reverse proxy that translates between AI-agent dialects.")
    parser.add_argument("--version", action="version", version=_version(),
                        help="print the version, and whether the codecs run compiled (scripts/compile), and exit")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    names = list(registry.DIALECTS)
    variants = registry.variants()
    variant_help = "; ".join(f"{variant} ({dialect})" for variant, dialect in variants.items())

    serve = commands.add_parser("serve", help="run the gateway",
                                description="Run the gateway: routes from --config, or one route from the flags.")
    serve.add_argument("--config", help="YAML configuration file (see config/)")
    serve.add_argument("--check", action="store_true",
                       help="check the configuration, reach every upstream and the store, print a line each, and "
                            "exit (non-zero if anything failed)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8080, help="port to listen on (default: 8080)")
    serve.add_argument("--upstream", metavar="URL", help="without --config: the upstream agent's URL")
    serve.add_argument("--upstream-dialect", choices=names, help="without --config: the upstream's dialect")
    serve.add_argument("--upstream-variant", choices=list(variants),
                       help=f"without --config: the upstream's variant, when its responses do not show it "
                            f"({variant_help})")
    serve.add_argument("--client-dialect", choices=names, action="append",
                       help="without --config: a dialect clients speak (repeat; default: detect any)")
    serve.add_argument("--store", default=None,
                       help="without --config: conversation store URL (memory://, sqlite:///file.db, redis://...)")
    serve.add_argument("--workers", type=_workers, default=1,
                       help="worker processes (default: 1); more than one needs a shared store (sqlite or redis)")
    serve.add_argument("--log-format", choices=["json", "human"], default="json",
                       help="one JSON line per request (default), or lines for humans")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info",
                       help="least severe level logged (default: info)")
    serve.add_argument("--log-bodies", action="store_true",
                       help="debugging only: put request bodies (users' words) in the access log")

    demo = commands.add_parser(
        "demo", help="run the gateway in front of the built-in agent (no external agent needed)",
        description="Serve the gateway and the built-in scripted agent (speaking AG-Kit) in one process, and print "
                    "a curl command for each client dialect.")
    demo.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    demo.add_argument("--port", type=_port, default=8080, help="port to listen on (default: 8080)")
    demo.add_argument("--agent-dialect", choices=names, default="ag-kit",
                      help=f"the dialect the built-in agent speaks (default: ag-kit; "
                           f"{' and '.join(n for n, d in registry.DIALECTS.items() if 'reasoning' in d.carries)} "
                           f"show reasoning)")

    agent = commands.add_parser(
        "agent", help="run the built-in scripted agent",
        description="Serve the built-in scripted agent in one dialect. Keywords in the user's message choose what it "
                    "does: weather (server tool), tool (calls the client's first tool), approve / interrupt "
                    "(human in the loop), think, state, slow, fail, hang, silent; anything else is echoed.")
    agent.add_argument("--dialect", choices=names, required=True, help="the dialect the agent speaks")
    agent.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    agent.add_argument("--port", type=_port, default=8001, help="port to listen on (default: 8001)")
    agent.add_argument("--pace", type=float, default=0.0, help="seconds between streamed events (default: 0)")

    translate = commands.add_parser(
        "translate", help="translate a recorded stream from one dialect into another",
        description="Decode INPUT as the --from dialect and write it re-encoded in the --to dialect on stdout.")
    translate.add_argument("input", nargs="?", help="a file, or - for stdin; default: a built-in AG-Kit sample run")
    translate.add_argument("--from", dest="source", choices=names, default="ag-kit",
                           help="the dialect the input is in (default: ag-kit)")
    translate.add_argument("--to", dest="target", choices=names, default="ag-ui",
                           help="the dialect to write (default: ag-ui)")
    translate.add_argument("--variant", choices=list(variants), help=f"the target's variant ({variant_help})")

    from gateway.check import SCENARIOS

    check = commands.add_parser(
        "check", help="judge an agent endpoint by its dialect's rules",
        description="Send URL the standard conversations (" + ", ".join(SCENARIOS) + ") in its dialect, and judge "
                    "every answer by the rules a real client of that dialect holds it to. A conversation the agent "
                    "shows nothing of (no tool called, no interrupt) is skipped. Exits 1 on any violation.")
    check.add_argument("url", help="the agent endpoint, e.g. http://127.0.0.1:8001/agui")
    check.add_argument("--dialect", choices=names, required=True, help="the dialect the endpoint speaks")
    check.add_argument("--scenario", choices=list(SCENARIOS), action="append",
                       help="a conversation to run (repeat for several; default: all)")
    check.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="a header for every request, e.g. 'Authorization: Bearer ...' (repeatable)")
    check.add_argument("--prompt", action="append", default=[], metavar="SCENARIO=TEXT",
                       help="what a conversation asks the agent (repeatable), e.g. server-tool='look up X'")
    check.add_argument("--variant", choices=list(variants), help=f"the endpoint's variant ({variant_help})")
    check.add_argument("--timeout", type=_seconds, default=60.0, help="seconds per request (default: 60)")
    check.add_argument("--json", action="store_true", help="a JSON report on stdout, for CI")

    args = parser.parse_args(argv)
    if args.command == "check":
        return _check_endpoint(check, args)
    if args.command == "serve":
        return _serve(serve, args)
    if args.command == "demo":
        return _demo(args)
    if args.command == "agent":
        return _agent(args)
    return _translate(parser, args)


def _version() -> str:
    """The version, and whether the per-event modules run compiled (and from a build older than their source)."""
    from gateway import __version__, compiled

    return f"agent-gateway {__version__}, codecs {compiled.describe()}"


_FLAGS = {("routes", "upstream", "url"): "--upstream", ("routes", "upstream", "dialect"): "--upstream-dialect",
          ("routes", "upstream", "variant"): "--upstream-variant", ("routes", "upstream"): "--upstream-variant",
          ("routes", "client_dialects"): "--client-dialect", ("store", "url"): "--store"}

def _flag(loc: tuple[int | str, ...]) -> str:
    """The flag a configuration error's location came from."""
    names = tuple(str(part) for part in loc if not isinstance(part, int))
    for end in range(len(names), 0, -1):
        if names[:end] in _FLAGS:
            return _FLAGS[names[:end]]
    return "the flags"


DEMO_PROMPTS = ("What is the weather in Paris?", "hello", "What is the weather in Berlin?",
                "What is the weather in Rome?", "think", "approve")
"""What the demo's printed requests ask, one per dialect in the registry's order (a server tool, an echo, ...)."""
DEMO_REQUESTS = {
    name: (dialect.paths[0], orjson.dumps(dialect.sample_request(DEMO_PROMPTS[index % len(DEMO_PROMPTS)],
                                                                 f"demo-{index + 1}")).decode())
    for index, (name, dialect) in enumerate(registry.DIALECTS.items())
}
"""Per client dialect, a path of the gateway's and a body its client would send there."""


def _demo(args: argparse.Namespace) -> int:
    import uvicorn
    from starlette.routing import Mount

    from gateway.agent.server import KEYWORDS, create_agent_app
    from gateway.server import logs
    from gateway.server.app import create_app

    base = f"http://{args.host}:{args.port}"
    dialect = registry.get(args.agent_dialect)
    agent_url = f"{base}/demo-agent{dialect.paths[0]}"
    config = GatewayConfig(routes=[Route(name="demo", upstream=Upstream(url=agent_url, dialect=dialect.name))],
                           store=Store(url="memory://"))
    sock = _bind(args.host, args.port)
    if sock is None:
        return 2
    print(f"agent-gateway demo: the built-in agent speaks {dialect.name} at {agent_url};\n"
          f"the gateway answers every dialect at {base}. Try (keywords: {', '.join(KEYWORDS)}):\n")
    for client, (path, body) in DEMO_REQUESTS.items():
        print(f"# {client}\ncurl -N {base}{path} -H 'content-type: application/json' -d '{body}'\n")
    logs.configure("human", "info")  # a person is watching: one readable line per request (tracing's too)
    app = create_app(config, extra_routes=[Mount("/demo-agent", create_agent_app(dialect.name))])
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


AGENT_INSIDE = "/_agent"
"""Where `agent` mounts the scripted agent it serves through the gateway's own route (a dialect with queries)."""


def _agent(args: argparse.Namespace) -> int:
    """The built-in agent in one dialect. A dialect whose clients ask about their runs after starting them (A2A's
    tasks) is served by a gateway route in front of the agent speaking AG-UI, in the same process: what a real
    agent of that dialect answers beyond its runs (GetTask, ListTasks, SubscribeToTask, ...) is then the gateway's,
    and the agent's runs are the same as in any dialect."""
    import uvicorn

    from gateway.agent.server import KEYWORDS, create_agent_app, run

    dialect = registry.get(args.dialect)
    paths = ", ".join(f"http://{args.host}:{args.port}{path}" for path in dialect.paths)
    print(f"agent-gateway agent: speaking {args.dialect} at {paths}\nkeywords: {', '.join(KEYWORDS)}; "
          "anything else is echoed", file=sys.stderr)
    if dialect.queries is None:
        run(args.dialect, args.host, args.port, args.pace)
        return 0
    from starlette.routing import Mount

    from gateway.server.app import create_app

    inside = registry.get("ag-ui")
    upstream = Upstream(url=f"http://{args.host}:{args.port}{AGENT_INSIDE}{inside.paths[0]}", dialect=inside.name)
    route = Route(name="scripted-agent", paths=list(dialect.paths), client_dialects=[dialect.name], upstream=upstream,
                  agent={"description": f"The gateway's built-in scripted agent: keywords {', '.join(KEYWORDS)}."})
    sock = _bind(args.host, args.port)
    if sock is None:
        return 2
    app = create_app(GatewayConfig(routes=[route], store=Store(url="memory://")),
                     extra_routes=[Mount(AGENT_INSIDE, create_agent_app(inside.name, pace=args.pace))])
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def _bind(host: str, port: int) -> socket.socket | None:
    """The listening socket, bound before anything says "listening"; a port in use is one line, not a traceback."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = "is in use: try --port" if exc.errno == errno.EADDRINUSE else f"cannot be used: {exc.strerror}"
        print(f"agent-gateway: {host}:{port} {reason}", file=sys.stderr)
        return None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.server import http_server, logs, workers
    from gateway.server.app import CONFIG_ENV, create_app

    flags = [flag for flag, value in (("--upstream", args.upstream), ("--upstream-dialect", args.upstream_dialect),
                                      ("--upstream-variant", args.upstream_variant),
                                      ("--client-dialect", args.client_dialect),
                                      ("--store", args.store)) if value is not None]
    if args.config and flags:
        parser.error(f"{', '.join(flags)} describe the route and store without --config; with --config, set them "
                     "in the file")
    try:
        if args.config:
            config = load_config(args.config)
        elif args.upstream and args.upstream_dialect:
            config = GatewayConfig.model_validate({
                "routes": [{"upstream": {"url": args.upstream, "dialect": args.upstream_dialect,
                                         "variant": args.upstream_variant},
                            "client_dialects": args.client_dialect or "auto"}],
                "store": {"url": args.store or "sqlite:///agent-gateway.db"}})
        else:
            parser.error("serve needs --config FILE, or --upstream URL with --upstream-dialect")
    except ConfigError as exc:
        for line in str(exc).splitlines():  # one line per mistake
            print(f"agent-gateway: {line}", file=sys.stderr)
        return 2
    except ValidationError as exc:  # from the flags: name each flag and what is wrong with it
        for error in exc.errors():
            print(f"agent-gateway: {_flag(error['loc'])}: {error_message(error)}", file=sys.stderr)
        return 2
    if args.check:
        return _check_config(config)
    if args.workers > 1 and config.store.url.startswith("memory:"):
        print("agent-gateway: --workers > 1 needs a store the workers share: sqlite:///... or redis://...",
              file=sys.stderr)
        return 2
    store = _open_store(config, "agent-gateway: the store cannot be opened: {}", sys.stderr)
    if store is None:
        return 2
    if args.workers > 1:  # each worker opens its own: this one only proved it can be opened
        asyncio.run(store.close())
    for route in config.routes:
        print(f"{route.name}: {', '.join(route.paths)} ({', '.join(route.dialects)}) -> "
              f"{route.upstream.url} ({route.upstream.dialect})", file=sys.stderr)
    sock = _bind(args.host, args.port)
    if sock is None:
        asyncio.run(store.close())
        return 2
    print(_version(), file=sys.stderr)
    print(f"agent-gateway listening on http://{args.host}:{args.port}", file=sys.stderr)
    logs.configure(args.log_format, args.log_level)
    http_server.HEAD_SECONDS = config.header_timeout
    if args.workers == 1:
        app = create_app(config, store, log_bodies=args.log_bodies)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", limit_concurrency=config.max_connections,
                                               http=http_server.HeadDeadlineProtocol))
        server.run(sockets=[sock])
        return 0
    sock.close()  # it was free: each worker binds its own (gateway/server/workers.py)
    os.environ[CONFIG_ENV] = orjson.dumps({"config": config.model_dump(mode="json"), "log_format": args.log_format,
                                           "log_level": args.log_level, "log_bodies": args.log_bodies}).decode()
    with tempfile.TemporaryDirectory(prefix="agent-gateway-metrics-") as metrics_dir:
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir)
        workers.run(uvicorn.Config("gateway.server.app:from_environment", factory=True, host=args.host,
                                   port=args.port, workers=args.workers, log_level="warning",
                                   limit_concurrency=config.max_connections, http=http_server.HeadDeadlineProtocol))
    return 0


def _open_store(config: GatewayConfig, failure: str, stream: TextIO) -> ConversationStore | None:
    """The configured store, or None after one line on `stream` saying why it cannot be opened (a path that
    cannot be written, the redis package missing), instead of a traceback from deep in the app's startup."""
    from gateway.conversations.store import StoreError

    try:
        return config.store.open()
    except (StoreError, ValueError, OSError) as exc:
        print(failure.format(exc), file=stream)
        return None


def _check_config(config: GatewayConfig) -> int:
    from gateway.server.probe import probe

    store = _open_store(config, "store: FAILED ({})", sys.stdout)
    if store is None:
        return 1

    async def run() -> bool:
        try:
            results = await probe(config, store)
        finally:
            await store.close()
        for result in results:
            print(result.line())
        return all(result.ok for result in results)

    print(f"configuration: ok ({len(config.routes)} route{'s' if len(config.routes) != 1 else ''})")
    return 0 if asyncio.run(run()) else 1


def _check_endpoint(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from gateway.check import SCENARIOS, check
    from gateway.upstream.url import UpstreamURL

    try:
        UpstreamURL.parse(args.url)
    except ValueError as exc:
        parser.error(f"{args.url}: {exc}")
    headers: dict[str, str] = {}
    for header in args.header:
        name, colon, value = header.partition(":")
        if not colon or not name.strip() or any(c.isspace() for c in name.strip()):
            parser.error(f"--header {header!r}: write it as 'Name: value'")
        headers[name.strip().lower()] = value.strip()
    prompts: dict[str, str] = {}
    for prompt in args.prompt:
        scenario, equals, text = prompt.partition("=")
        if not equals or scenario not in SCENARIOS:
            parser.error(f"--prompt {prompt!r}: write it as SCENARIO=TEXT, SCENARIO one of {', '.join(SCENARIOS)}")
        prompts[scenario] = text
    if args.variant is not None and args.variant not in registry.get(args.dialect).variants:
        owner = registry.variants()[args.variant]
        parser.error(f"--variant {args.variant} is a {owner} variant: use it with --dialect {owner}")
    scenarios = list(dict.fromkeys(args.scenario or SCENARIOS))
    report = asyncio.run(check(args.url, args.dialect, scenarios, headers=headers, variant=args.variant,
                               timeout=args.timeout, prompts=prompts))
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report.as_json(), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        print("\n".join(report.lines()))
    return 1 if report.failed else 0


def _translate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    if args.input is None:
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
    if args.variant is not None and args.variant not in registry.get(args.target).variants:
        owner = registry.variants()[args.variant]
        parser.error(f"--variant {args.variant} is a {owner} variant: use it with --to {owner}")
    decoder = registry.get(args.source).new_decoder()
    encoder = registry.get(args.target).new_encoder(Turn(variant=args.variant))
    events = decoder.feed(data) + decoder.close()
    sys.stdout.buffer.write(encoder.encode(events))
    if not encoder.streams:
        sys.stdout.buffer.write(b"\n")
    failed = isinstance(events[-1], RunError)
    unread = [e.event.get("type", "?") for e in events if isinstance(e, Raw)]
    read_nothing = bool(unread) and all(isinstance(e, RunStarted | RunFinished | RunError | Raw) for e in events)
    if read_nothing or (failed and unread):  # most often the wrong --from: say which frames did not read
        for kind in unread[:20]:
            print(f"agent-gateway translate: a frame of type {kind!r} is not {args.source}", file=sys.stderr)
        if len(unread) > 20:
            print(f"agent-gateway translate: ... and {len(unread) - 20} more", file=sys.stderr)
        print(f"agent-gateway translate: is --from {args.source} right?", file=sys.stderr)
    if isinstance(error := events[-1], RunError):
        print(f"agent-gateway translate: the run failed: {error.message}", file=sys.stderr)
    failed = failed or read_nothing
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
