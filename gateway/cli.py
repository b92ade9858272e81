"""`agent-gateway`: the command line.

- `demo` runs the gateway in front of the built-in agent, in one process, and prints a request to try per dialect;
- `serve` runs the gateway, from a config file or, for one route, from flags;
- `agent` runs the built-in scripted agent in any dialect;
- `translate` re-encodes a recorded stream from one dialect into another with the proxy's own codecs (with no
  input it translates a built-in AG-Kit run, so it works on a fresh install with no agent anywhere);
- `check` sends an agent endpoint the standard conversations and judges its answers by its dialect's rules, or
  judges the replies of recordings (`--recording`);
- `replay` serves recordings as an agent in the recorded upstream's dialect (`gateway/recording_commands.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import errno
import logging
import os
import socket
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import orjson
from pydantic import ValidationError

from adapters import registry
from gateway.config import ConfigError, GatewayConfig, Route, Store, Upstream, load_config
from gateway.core.events import Event, Raw, RunError, RunFinished, RunStarted
from gateway.core.turn import Turn
from gateway.core.validation import error_message
from gateway.inspector.options import InspectorOptions
from gateway.recordings.options import RecordOptions

if TYPE_CHECKING:
    from gateway.conversations.store import ConversationStore

log = logging.getLogger("agent_gateway.serve")


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


def _speed(text: str) -> float:
    try:
        speed = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < speed <= 1000:
        raise argparse.ArgumentTypeError(f"{text}: use more than 0 and at most 1000 (--at-once for no waiting)")
    return speed


def _pace(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= seconds <= 60:
        raise argparse.ArgumentTypeError(f"{text}: use 0 to 60 seconds")
    return seconds


class _Parser(argparse.ArgumentParser):
    """Bad flags get one line saying what is wrong, a guess at what was meant, and where to read more."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}{self._guess(message)} (see {self.prog} --help)\n")

    def _guess(self, message: str) -> str:
        """", did you mean --port?" for a mistyped flag."""
        if not message.startswith("unrecognized arguments: "):
            return ""
        known = {option.lstrip("-"): option for action in self._actions for option in action.option_strings}
        for word in message.removeprefix("unrecognized arguments: ").split():
            close = difflib.get_close_matches(word.split("=", 1)[0].lstrip("-"), known, n=1, cutoff=0.6)
            if word.startswith("-") and close:
                return f", did you mean {known[close[0]]}?"
        return ""


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
                            "exit (non-zero if anything failed); nothing is written")
    serve.add_argument("--send-request", action="store_true",
                       help="with --check: also send each upstream one real request ('hello') and judge its reply "
                            "by its dialect's rules (the agent answers it, which may cost a model call)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    serve.add_argument("--port", type=_port, default=8080, help="port to listen on (default: 8080)")
    serve.add_argument("--upstream", metavar="URL", help="without --config: the upstream agent's URL")
    serve.add_argument("--upstream-dialect", choices=names, help="without --config: the upstream's dialect")
    serve.add_argument("--upstream-variant", choices=list(variants),
                       help=f"without --config: the upstream's variant, when its responses do not show it "
                            f"({variant_help})")
    serve.add_argument("--upstream-agent", metavar="NAME",
                       help="without --config: which agent the upstream's server runs, for one that hosts several "
                            "(a LangGraph assistant id or graph name)")
    serve.add_argument("--client-dialect", choices=names, action="append",
                       help="without --config: a dialect clients speak (repeat; default: detect any)")
    serve.add_argument("--store", default=None,
                       help="without --config: conversation store URL (memory://, sqlite:///file.db, redis://...; "
                            "default: sqlite:///agent-gateway.db, a file in the working directory)")
    serve.add_argument("--workers", type=_workers, default=1,
                       help="worker processes (default: 1); more than one needs a shared store (sqlite or redis)")
    serve.add_argument("--log-format", choices=["json", "human"], default="json",
                       help="one JSON line per request (default), or lines for humans")
    serve.add_argument("--log-level", choices=["debug", "info", "warning", "error"], default="info",
                       help="least severe level logged (default: info)")
    serve.add_argument("--log-bodies", action="store_true",
                       help="debugging only: put request bodies (users' words) in the access log")
    serve.add_argument("--inspector", action="store_true",
                       help="serve the inspector's page at /_inspector (with inspector.key, or a key made now and "
                            "printed: loopback listeners only)")
    serve.add_argument("--inspector-bodies", action="store_true",
                       help="let the inspector show what every route's runs said (routes[].inspector_bodies)")
    serve.add_argument("--record", metavar="DIR",
                       help="record every route's exchanges into DIR, a file per conversation (routes[].record)")

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
    agent.add_argument("--pace", type=_pace, default=0.0, help="seconds between streamed events (default: 0)")

    translate = commands.add_parser(
        "translate", help="translate a recorded stream from one dialect into another",
        description="Decode INPUT as the --from dialect and write it re-encoded in the --to dialect on stdout.")
    translate.add_argument("input", nargs="?", help="a file (a stream, or a recording), or - for stdin; default: a "
                           "built-in AG-Kit sample run")
    translate.add_argument("--from", dest="source", choices=names, default=None,
                           help="the dialect the input is in (default: ag-kit; a recording says its own)")
    translate.add_argument("--to", dest="target", choices=names, default="ag-ui",
                           help="the dialect to write (default: ag-ui)")
    translate.add_argument("--variant", choices=list(variants), help=f"the target's variant ({variant_help})")

    from gateway.check import SCENARIOS

    check = commands.add_parser(
        "check", help="judge an agent endpoint by its dialect's rules",
        description="Send URL the standard conversations (" + ", ".join(SCENARIOS) + ") in its dialect, and judge "
                    "every answer by the rules a real client of that dialect holds it to. A conversation the agent "
                    "shows nothing of (no tool called, no interrupt) is skipped. Exits 1 on any violation.")
    check.add_argument("url", nargs="?", help="the agent endpoint, e.g. http://127.0.0.1:8001/agui")
    check.add_argument("--dialect", choices=names, help="the dialect the endpoint speaks")
    check.add_argument("--recording", action="append", metavar="FILE",
                       help="instead of an endpoint: judge the replies a recording holds, the upstream's and the "
                            "client's, each by its own dialect's rules (repeatable)")
    check.add_argument("--scenario", choices=list(SCENARIOS), action="append",
                       help="a conversation to run (repeat for several; default: all)")
    check.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="a header for every request, e.g. 'Authorization: Bearer ...' (repeatable)")
    check.add_argument("--prompt", action="append", default=[], metavar="SCENARIO=TEXT",
                       help="what a conversation asks the agent (repeatable), e.g. server-tool='look up X'")
    check.add_argument("--variant", choices=list(variants), help=f"the endpoint's variant ({variant_help})")
    check.add_argument("--timeout", type=_seconds, default=60.0, help="seconds per request (default: 60)")
    check.add_argument("--json", action="store_true", help="a JSON report on stdout, for CI")

    replay = commands.add_parser(
        "replay", help="serve recordings as an agent",
        description="Serve the exchanges recorded in FILEs as an agent in the recorded upstream's dialect: each "
                    "request, matched by its conversation and turn, gets the recorded reply, frame by frame, with "
                    "its timing. A request nothing was recorded for gets the dialect's own error.")
    replay.add_argument("files", nargs="+", metavar="FILE", help="recordings (routes[].record, serve --record, or "
                        "downloaded from the inspector)")
    replay.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    replay.add_argument("--port", type=_port, default=8001, help="port to listen on (default: 8001)")
    replay.add_argument("--speed", type=_speed, default=1.0,
                        help="how much faster than recorded (default: 1, the recorded timing)")
    replay.add_argument("--at-once", action="store_true", help="every frame at once, no waiting")

    if not (sys.argv[1:] if argv is None else argv):  # nothing asked: what can be asked
        parser.print_help()
        return 2
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's own parser, which knows what the command takes
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "check":
        return _check_endpoint(check, args)
    if args.command == "serve":
        return _serve(serve, args)
    if args.command == "demo":
        return _demo(args)
    if args.command == "agent":
        return _agent(args)
    if args.command == "replay":
        from gateway import recording_commands

        return recording_commands.replay(replay, args)
    return _translate(translate, args)


def _version() -> str:
    """The version, and whether the per-event modules run compiled (and from a build older than their source)."""
    from gateway import __version__, compiled

    return f"agent-gateway {__version__}, codecs {compiled.summary()}"


_FLAGS = {("routes", "upstream", "url"): "--upstream", ("routes", "upstream", "dialect"): "--upstream-dialect",
          ("routes", "upstream", "variant"): "--upstream-variant", ("routes", "upstream"): "--upstream-variant",
          ("routes", "upstream", "agent"): "--upstream-agent",
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

    from gateway.agent.script import KEYWORD_HELP
    from gateway.agent.server import KEYWORDS, create_agent_app
    from gateway.server import logs
    from gateway.server.app import create_app
    from gateway.server.drain import exit_quietly_when_stopped

    base = f"http://{args.host}:{args.port}"
    dialect = registry.get(args.agent_dialect)
    agent_url = f"{base}/demo-agent{dialect.paths[0]}"
    inspector = InspectorOptions()
    inspector.key = inspector.key_for(args.host) if _loopback(args.host) else None  # beyond loopback: no page
    config = GatewayConfig(routes=[Route(name="demo", upstream=Upstream(url=agent_url, dialect=dialect.name),
                                         inspector_bodies=True)],
                           store=Store(url="memory://"), inspector=inspector if inspector.key else None)
    logs.configure("human", "info")  # a person is watching: one readable line per request (tracing's too)
    sock = bind(args.host, args.port)
    if sock is None:
        return 2
    print(f"agent-gateway demo: the built-in agent speaks {dialect.name} at {agent_url};\n"
          f"the gateway answers every dialect at {base}. A word in the message picks what the agent does:")
    for keyword in KEYWORDS:
        print(f"  {keyword:<10} {KEYWORD_HELP[keyword]}")
    print("  otherwise  echoes the message, counting the turns of its conversation\n")
    if config.inspector is not None:
        print(f"See each translation in the inspector: {base}{inspector.path}/?key={inspector.key}\n")
    print("Try:\n")
    for client, (path, body) in DEMO_REQUESTS.items():
        print(f"# {client}\ncurl -N {base}{path} -H 'content-type: application/json' -d '{body}'\n")
    agent = create_agent_app(dialect.name, test_hooks=False)  # its request log holds what people typed
    app = create_app(config, extra_routes=[Mount("/demo-agent", agent)])
    exit_quietly_when_stopped()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def _loopback(host: str) -> bool:
    from gateway.inspector.options import is_loopback

    return is_loopback(host)


AGENT_INSIDE = "/_agent"
"""Where `agent` mounts the scripted agent it serves through the gateway's own route (a dialect with queries)."""


def _agent(args: argparse.Namespace) -> int:
    """The built-in agent in one dialect. A dialect whose clients ask about their runs after starting them (A2A's
    tasks) is served by a gateway route in front of the agent speaking AG-UI, in the same process: what a real
    agent of that dialect answers beyond its runs (GetTask, ListTasks, SubscribeToTask, ...) is then the gateway's,
    and the agent's runs are the same as in any dialect."""
    import uvicorn

    from gateway.agent.server import KEYWORDS, create_agent_app, run
    from gateway.server import logs
    from gateway.server.drain import exit_quietly_when_stopped

    logs.configure("human", "info")
    dialect = registry.get(args.dialect)
    sock = bind(args.host, args.port)
    if sock is None:
        return 2
    paths = ", ".join(f"http://{args.host}:{args.port}{path}" for path in dialect.paths)
    print(f"agent-gateway agent: speaking {args.dialect} at {paths}\nkeywords: {', '.join(KEYWORDS)}; "
          "anything else is echoed", file=sys.stderr)
    exit_quietly_when_stopped()
    if dialect.queries is None:
        run(args.dialect, sock, args.pace)
        return 0
    from starlette.routing import Mount

    from gateway.server.app import create_app

    inside = registry.get("ag-ui")
    upstream = Upstream(url=f"http://{args.host}:{args.port}{AGENT_INSIDE}{inside.paths[0]}", dialect=inside.name)
    route = Route(name="scripted-agent", paths=list(dialect.paths), client_dialects=[dialect.name], upstream=upstream,
                  agent={"description": f"The gateway's built-in scripted agent: keywords {', '.join(KEYWORDS)}."})
    app = create_app(GatewayConfig(routes=[route], store=Store(url="memory://")),
                     extra_routes=[Mount(AGENT_INSIDE, create_agent_app(inside.name, pace=args.pace))])
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0

def bind(host: str, port: int) -> socket.socket | None:
    """The listening socket, bound before anything says "listening"; a port in use is one line, not a traceback."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        reason = "is in use: try --port" if exc.errno == errno.EADDRINUSE else f"cannot be used: {exc.strerror}"
        log.error("%s:%d %s", host, port, reason)
        return None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def _serve(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    import uvicorn

    from gateway.server import http_server, logs, workers
    from gateway.server.app import CONFIG_ENV, create_app
    from gateway.server.drain import exit_quietly_when_stopped

    flags = [flag for flag, value in (("--upstream", args.upstream), ("--upstream-dialect", args.upstream_dialect),
                                      ("--upstream-variant", args.upstream_variant),
                                      ("--upstream-agent", args.upstream_agent),
                                      ("--client-dialect", args.client_dialect),
                                      ("--store", args.store)) if value is not None]
    if args.config and flags:
        parser.error(f"{', '.join(flags)} describe the route and store without --config; with --config, set them "
                     "in the file")
    logs.configure(args.log_format, args.log_level)  # from here every line on stderr is a log line, in its format
    try:
        if args.config:
            config = load_config(args.config)
        elif args.upstream and args.upstream_dialect:
            config = GatewayConfig.model_validate({
                "routes": [{"upstream": {"url": args.upstream, "dialect": args.upstream_dialect,
                                         "variant": args.upstream_variant, "agent": args.upstream_agent},
                            "client_dialects": args.client_dialect or "auto"}],
                "store": {"url": args.store or "sqlite:///agent-gateway.db"}})
        else:
            parser.error("serve needs --config FILE, or --upstream URL with --upstream-dialect")
    except ConfigError as exc:
        for line in str(exc).splitlines():  # one line per mistake
            log.error(line)
        return 2
    except ValidationError as exc:  # from the flags: name each flag and what is wrong with it
        parser.error("; ".join(f"{_flag(error['loc'])}: {error_message(error)}" for error in exc.errors()))
    if args.send_request and not args.check:
        parser.error("--send-request goes with --check")
    for route in config.routes:
        route.inspector_bodies = route.inspector_bodies or args.inspector_bodies
        if args.record:
            route.record = route.record or RecordOptions(dir=args.record)
    if args.inspector and config.inspector is None:
        config.inspector = InspectorOptions()
    inspector_made_key = config.inspector is not None and not config.inspector.key
    if config.inspector is not None:
        if args.workers > 1:
            log.error("the inspector keeps the runs of the process that ran them: use --workers 1 with it")
            return 2
        try:
            config.inspector.key = config.inspector.key_for(args.host)
        except ValueError as exc:
            log.error("%s", exc)
            return 2
    if args.check:
        return _check_config(config, args.send_request)
    if args.workers > 1 and config.store.url.startswith("memory:"):
        log.error("--workers > 1 needs a store the workers share: sqlite:///... or redis://...")
        return 2
    store = _open_store(config)
    if store is None:
        return 2
    if args.workers > 1:  # each worker opens its own: this one only proved it can be opened
        asyncio.run(store.close())
    sock = bind(args.host, args.port)
    if sock is None:
        asyncio.run(store.close())
        return 2
    for route in config.routes:
        log.info("route %s: %s (%s) -> %s (%s)", route.name, ", ".join(route.paths), ", ".join(route.dialects),
                 route.upstream.url, route.upstream.dialect, extra={"route": route.name})
    log.info(_version())
    url = f"http://{args.host}:{args.port}"
    http_server.HEAD_SECONDS = config.header_timeout
    if config.inspector is not None:
        shown = f"?key={config.inspector.key}" if inspector_made_key else " (with inspector.key)"
        log.info("inspector at %s%s/%s", url, config.inspector.path, shown)
    if args.workers == 1:
        log.info("listening on %s", url, extra={"url": url})
        app = create_app(config, store, log_bodies=args.log_bodies)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", limit_concurrency=config.max_connections,
                                               http=http_server.HeadDeadlineProtocol))
        exit_quietly_when_stopped()
        server.run(sockets=[sock])
        return 0
    sock.close()  # it was free: each worker binds its own (gateway/server/workers.py)
    os.environ[CONFIG_ENV] = orjson.dumps({"config": config.model_dump(mode="json"), "log_format": args.log_format,
                                           "log_level": args.log_level, "log_bodies": args.log_bodies}).decode()
    with tempfile.TemporaryDirectory(prefix="agent-gateway-metrics-") as metrics_dir:
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir)
        workers.run(uvicorn.Config("gateway.server.app:from_environment", factory=True, host=args.host,
                                   port=args.port, workers=args.workers, log_level="warning",
                                   limit_concurrency=config.max_connections, http=http_server.HeadDeadlineProtocol),
                    ready=lambda: log.info("listening on %s (%d workers)", url, args.workers,
                                           extra={"url": url, "workers": args.workers}))
    return 0


def _open_store(config: GatewayConfig) -> ConversationStore | None:
    """The configured store, or None after one line saying why it cannot be opened (a path that cannot be
    written, the redis package missing), instead of a traceback from deep in the app's startup."""
    from gateway.conversations.store import StoreError

    try:
        return config.store.open()
    except (StoreError, ValueError, OSError) as exc:
        log.error("the store cannot be opened: %s", exc)
        return None


def _check_config(config: GatewayConfig, ask: bool) -> int:
    """`serve --check`: what a start would find, found without writing anything (a SQLite store is looked at, not
    opened: opening creates it)."""
    from gateway.conversations.store import StoreError, redact_url, sqlite_path, sqlite_problem
    from gateway.server.probe import probe

    print(f"configuration: ok ({len(config.routes)} route{'s' if len(config.routes) != 1 else ''})")
    url = config.store.url
    store: ConversationStore | None = None
    if url.lower().startswith("sqlite:"):
        path = sqlite_path(url)
        problem = sqlite_problem(path)
        where = path if path == ":memory:" else str(Path(path).absolute())
        state = "exists" if path != ":memory:" and Path(path).exists() else "would be created"
        print(f"store {redact_url(url)}: {'FAILED (' + problem + ')' if problem else f'ok ({where} {state})'}")
        if problem:
            return 1
    else:
        try:
            store = config.store.open()
        except (StoreError, ValueError, OSError) as exc:
            print(f"store: FAILED ({exc})")
            return 1

    async def run() -> bool:
        try:
            results = await probe(config, store)
        finally:
            if store is not None:
                await store.close()
        for result in results:
            print(result.line())
        passed = all(result.ok for result in results)
        if ask:
            from gateway.check import ask_upstream

            for route in config.routes:
                ok, detail = await ask_upstream(route)
                print(f"{route.name}: upstream {route.upstream.url} answers as {route.upstream.dialect}: "
                      f"{'ok' if ok else 'FAILED'} ({detail})")
                passed = passed and ok
        return passed

    return 0 if asyncio.run(run()) else 1


def _check_endpoint(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from gateway.check import SCENARIOS, check
    from gateway.upstream.url import UpstreamURL

    if args.recording:
        if args.url is not None or args.dialect is not None:
            parser.error("--recording judges recorded replies: give no URL and no --dialect (each reply is judged "
                         "by its own dialect)")
        from gateway import recording_commands

        return recording_commands.check(parser, args.recording, args.json)
    if args.url is None or args.dialect is None:
        parser.error("check needs URL and --dialect, or --recording FILE")
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
    if mismatch := registry.variant_mismatch(args.variant, args.dialect, flag="--dialect"):
        parser.error(mismatch)
    scenarios = list(dict.fromkeys(args.scenario or SCENARIOS))
    report = asyncio.run(check(args.url, args.dialect, scenarios, headers=headers, variant=args.variant,
                               timeout=args.timeout, prompts=prompts))
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report.as_json(), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        print("\n".join(report.lines()))
    return 1 if report.failed else 0


def _translate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
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
    if is_recording(data):
        from gateway import recording_commands

        return recording_commands.translate(parser, args, data)
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
    if not data.strip():
        print("agent-gateway translate: the input is empty", file=sys.stderr)
    elif isinstance(error := events[-1], RunError):
        said = "the input ends before its run does" if error.code == "upstream_truncated" else error.message
        print(f"agent-gateway translate: the run failed: {said}", file=sys.stderr)
    failed = failed or read_nothing
    return 1 if failed else 0


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


if __name__ == "__main__":
    raise SystemExit(main())
