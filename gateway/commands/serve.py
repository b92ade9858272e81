"""`agent-gateway serve`: the gateway, from a config file or, for one route, from flags; and `serve --check`, what
a start would find, found without writing anything."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
from typing import TYPE_CHECKING, NamedTuple

import orjson
from pydantic import ValidationError

from gateway.commands import bind, version
from gateway.config import ConfigError, GatewayConfig, Route, load_config
from gateway.config.upstream import endpoints_below
from gateway.core.validation import error_message
from gateway.inspector.options import InspectorOptions
from gateway.recordings.options import RecordOptions

if TYPE_CHECKING:
    import socket

    from gateway.conversations.store import ConversationStore

log = logging.getLogger("agent_gateway.serve")


_FLAGS = {("routes", "upstream", "url"): "--upstream", ("routes", "upstream", "dialect"): "--upstream-dialect",
          ("routes", "upstream", "variant"): "--upstream-variant", ("routes", "upstream"): "--upstream-variant",
          ("routes", "upstream", "agent"): "--upstream-agent",
          ("routes", "client_dialects"): "--client-dialect", ("store", "url"): "--store"}

_KEYS = {flag: ".".join(loc).replace("routes.", "routes[].") for loc, flag in reversed(_FLAGS.items())}
"""Each flag's key in a configuration file (the first of a flag's locations)."""


def _flag(loc: tuple[int | str, ...]) -> str:
    """The flag a configuration error's location came from."""
    names = tuple(str(part) for part in loc if not isinstance(part, int))
    for end in range(len(names), 0, -1):
        if names[:end] in _FLAGS:
            return _FLAGS[names[:end]]
    return "the flags"


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Read the configuration, add what the flags say to it, and check it (`--check` stops there); open the store
    and bind the ports, say what is served, and serve it, in this process or in workers."""
    from gateway.server.connections import http_server

    config = _configuration(parser, args)
    if config is None:
        return 2
    if args.send_request and not args.check:
        parser.error("--send-request goes with --check")
    _add_flags(config, args)
    made_key = config.inspector is not None and not config.inspector.key
    if not _inspector_keyed(config, args) or not _can_record(config):
        return 2
    if args.check:
        return _check_config(config, args.send_request)
    opened = _open(config, args)
    if opened is None:
        return 2
    _announce(config, args, made_key)
    http_server.HEAD_SECONDS = config.header_timeout
    if args.workers == 1:
        _serve_here(config, args, opened)
    else:
        _serve_in_workers(config, args, opened)
    return 0


def _configuration(parser: argparse.ArgumentParser, args: argparse.Namespace) -> GatewayConfig | None:
    """The configuration, from --config or from the flags for one route; None after a line per mistake in a file
    (a mistake in the flags is the parser's one-line error). Logging is configured from here on."""
    from gateway.server.operations import logs

    flags = [flag for flag, value in (("--upstream", args.upstream), ("--upstream-dialect", args.upstream_dialect),
                                      ("--upstream-variant", args.upstream_variant),
                                      ("--upstream-agent", args.upstream_agent),
                                      ("--client-dialect", args.client_dialect),
                                      ("--store", args.store)) if value is not None]
    if args.config and flags:
        keys = list(dict.fromkeys(_KEYS[flag] for flag in flags))
        keys_said = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]
        parser.error(f"{', '.join(flags)}: only without --config; with --config, set {keys_said} in the file")
    args.log_format = args.log_format or logs.default_format(sys.stderr)
    logs.configure(args.log_format, args.log_level)  # from here every line on stderr is a log line, in its format
    try:
        if args.config:
            return load_config(args.config)
        if args.upstream and args.upstream_dialect:
            return GatewayConfig.model_validate({
                "routes": [{"upstream": {"url": args.upstream, "dialect": args.upstream_dialect,
                                         "variant": args.upstream_variant, "agent": args.upstream_agent},
                            "client_dialects": args.client_dialect or "auto"}],
                "store": {"url": args.store or "sqlite:///agent-gateway.db"}})
        parser.error("serve needs --config FILE, or --upstream URL with --upstream-dialect")
    except ConfigError as exc:
        for line in str(exc).splitlines():  # one line per mistake
            log.error(line)
        return None
    except ValidationError as exc:  # from the flags: name each flag and what is wrong with it
        parser.error("; ".join(f"{_flag(error['loc'])}: {error_message(error)}" for error in exc.errors()))


def _add_flags(config: GatewayConfig, args: argparse.Namespace) -> None:
    """What --inspector-bodies, --record and --inspector add to the configuration's routes and inspector, and a
    listener's port flag (`--a2a-grpc-port`) to its dialect's section."""
    from adapters import registry
    from gateway.cli import listener_flag
    from gateway.core.listeners import Listener

    for name, dialect in registry.DIALECTS.items():
        listener = dialect.capability(Listener)
        port = getattr(args, listener_flag(name, listener.setting), None) if listener is not None else None
        if listener is not None and port is not None:
            setattr(config.settings_of(name), listener.setting, port)
    for route in config.routes:
        route.inspector_bodies = route.inspector_bodies or args.inspector_bodies
        if args.record:
            route.record = route.record or RecordOptions(dir=args.record)
    if args.inspector and config.inspector is None:
        config.inspector = InspectorOptions()


def _inspector_keyed(config: GatewayConfig, args: argparse.Namespace) -> bool:
    """Whether the inspector, if any, has its key (made now when the configuration names none), or a line saying
    why it cannot be served."""
    if config.inspector is None:
        return True
    if args.workers > 1:
        log.error("the inspector keeps the runs of the process that ran them: use --workers 1 with it")
        return False
    try:
        config.inspector.key = config.inspector.key_for(args.host)
    except ValueError as exc:
        log.error("%s", exc)
        return False
    return True


class _Opened(NamedTuple):
    """What serving needs opened before anything says "listening"."""

    store: ConversationStore
    """Open, for this process to serve; closed already when workers serve (each opens its own)."""
    sockets: list[socket.socket]
    """The gateway's listening socket, and the metrics' when they have their own address."""


def _open(config: GatewayConfig, args: argparse.Namespace) -> _Opened | None:
    """The store opened and the ports bound, before anything says "listening"; None after a line saying why not
    (nothing is left open then)."""
    if args.workers > 1 and config.store.backend().one_process:
        log.error("--workers > 1 needs a store the workers share: sqlite:///... or redis://...")
        return None
    store = _open_store(config)
    if store is None:
        return None
    if args.workers > 1:  # each worker opens its own: this one only proved it can be opened
        asyncio.run(store.close())
    metrics_at = config.metrics.address
    if metrics_at is not None and metrics_at[1] == args.port:
        log.error("metrics.listen %s needs a port of its own, not the gateway's (%d)", config.metrics.listen,
                  args.port)
        asyncio.run(store.close())
        return None
    sock = bind(args.host, args.port)
    metrics_sock = bind(*metrics_at, "another metrics.listen") if metrics_at is not None else None
    bound = [bound for bound in (sock, metrics_sock) if bound is not None]
    if sock is None or (metrics_at is not None and metrics_sock is None) or not _listeners_free(config, args):
        for each in bound:
            each.close()
        asyncio.run(store.close())
        return None
    return _Opened(store, bound)


def _listeners_free(config: GatewayConfig, args: argparse.Namespace) -> bool:
    """Whether each port a `Listener` will serve on (A2A's gRPC) is free, found now, before anything says
    "listening": a port in use (by another gateway too: the listener's workers share theirs) is one line."""
    from gateway.server.connections.listeners import configured

    taken = {args.port} | ({config.metrics.address[1]} if config.metrics.address is not None else set())
    for name, listener, port in configured(config):
        setting = f"{name}.{listener.setting}"
        if listener.missing() is not None:
            continue  # not served: said when the app starts
        if port in taken:
            log.error("%s %d needs a port of its own, not the gateway's or the metrics'", setting, port)
            return False
        probe = bind(args.host, port, f"another {setting}")
        if probe is None:
            return False
        probe.close()
        taken.add(port)
    return True


def _announce(config: GatewayConfig, args: argparse.Namespace, made_key: bool) -> None:
    """A line per route (and what looks wrong with its upstream's URL), the version, and where the metrics and the
    inspector are."""
    for route in config.routes:
        log.info("route %s: %s (%s) -> %s (%s)", route.name, ", ".join(route.paths), ", ".join(route.dialects),
                 route.upstream.url, route.upstream.dialect, extra={"route": route.name})
        if (note := _base_url_note(route)) is not None:
            log.warning("route %s: %s", route.name, note, extra={"route": route.name})
    log.info(version())
    if config.metrics.address is not None:
        log.info("metrics at http://%s/metrics", config.metrics.listen)
    if config.inspector is not None:
        shown = f"?key={config.inspector.key}" if made_key else " (with inspector.key)"
        log.info("inspector at %s%s/%s", _url(args), config.inspector.path, shown)


def _url(args: argparse.Namespace) -> str:
    """Where the gateway listens, as a client would ask for it."""
    return f"http://{args.host}:{args.port}"


def _serve_here(config: GatewayConfig, args: argparse.Namespace, opened: _Opened) -> None:
    """Serve in this process, on the sockets bound, until stopped."""
    import uvicorn

    from gateway.server.app import create_app
    from gateway.server.connections.drain import exit_quietly_when_stopped
    from gateway.server.connections.uvicorn_options import uvicorn_options

    log.info("listening on %s", _url(args), extra={"url": _url(args)})
    app = create_app(config, opened.store, log_bodies=args.log_bodies, listen_host=args.host)
    server = uvicorn.Server(uvicorn.Config(app, **uvicorn_options(config.max_connections)))
    exit_quietly_when_stopped()
    server.run(sockets=opened.sockets)


def _serve_in_workers(config: GatewayConfig, args: argparse.Namespace, opened: _Opened) -> None:
    """Serve in `--workers` processes, each building the app from the configuration passed in its environment."""
    import uvicorn

    from gateway.server.app import CONFIG_ENV
    from gateway.server.connections import workers
    from gateway.server.connections.uvicorn_options import uvicorn_options

    for bound in opened.sockets:  # they were free: each worker binds its own (gateway/server/connections/workers.py)
        bound.close()
    os.environ[CONFIG_ENV] = orjson.dumps({"config": config.model_dump(mode="json"), "log_format": args.log_format,
                                           "log_level": args.log_level, "log_bodies": args.log_bodies,
                                           "host": args.host}).decode()
    url = _url(args)
    with tempfile.TemporaryDirectory(prefix="agent-gateway-metrics-") as metrics_dir:
        os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", metrics_dir)
        workers.run(uvicorn.Config("gateway.server.app:from_environment", factory=True, host=args.host,
                                   port=args.port, workers=args.workers, **uvicorn_options(config.max_connections)),
                    ready=lambda: log.info("listening on %s (%d workers)", url, args.workers,
                                           extra={"url": url, "workers": args.workers}),
                    metrics=config.metrics.address)


def _base_url_note(route: Route) -> str | None:
    """What to say of an upstream URL that stops where its dialect's path goes on (an OpenAI base URL, `.../v1`),
    which connects but answers every run with a 404."""
    meant = endpoints_below(route.upstream.url, [route.upstream.dialect])
    if not meant:
        return None
    return (f"{route.upstream.url} looks like a base URL, not an endpoint: did you mean {' or '.join(meant)}? "
            "(--check --send-request sends it a request)")


def _can_record(config: GatewayConfig) -> bool:
    """Whether every folder recordings go to can be written, or a line for each that cannot: found before the
    port is bound, not when the app makes the folder."""
    from gateway.recordings.files import folder_problem

    problems = {route.record.dir: folder_problem(route.record.dir) for route in config.routes if route.record}
    for folder, problem in problems.items():
        if problem is not None:
            log.error("cannot record into %s: %s", folder, problem)
    return not any(problems.values())


def _open_store(config: GatewayConfig) -> ConversationStore | None:
    """The configured store, or None after one line saying why it cannot be opened (a path that cannot be
    written, the redis package missing), instead of a traceback from deep in the app's startup."""
    from gateway.conversations.store import StoreError

    try:
        return config.store.open()
    except (StoreError, ValueError, OSError) as exc:
        log.error("the store cannot be opened: %s", exc)
        return None


async def _unusable(config: GatewayConfig) -> list[tuple[str, str]]:
    """The routes whose runs would all be refused as the gateway is installed (an upstream whose card offers only
    gRPC, without grpcio), and why: read as a run reads its upstream's card."""
    from adapters import registry
    from gateway.core.capabilities import Discovery
    from gateway.core.transports import UpstreamTransport
    from gateway.server.request.discovery import unusable
    from gateway.upstream.http1 import Pool

    pool = Pool(user_agent="agent-gateway-check")
    found = []
    try:
        for route in config.routes:
            dialect = registry.get(route.upstream.dialect)
            if dialect.capability(UpstreamTransport) is not None and dialect.capability(Discovery) is not None \
                    and (why := await unusable(route, dialect, pool)) is not None:
                found.append((route.name, why))
    finally:
        await pool.close()
    return found


def _check_config(config: GatewayConfig, ask: bool) -> int:
    """`serve --check`: what a start would find, found without writing anything (a SQLite store is looked at, not
    opened: opening creates it)."""
    from gateway.conversations.store import StoreError, redact_url
    from gateway.server.connections.listeners import problems
    from gateway.server.operations.probe import documents, probe

    print(f"configuration: ok ({len(config.routes)} route{'s' if len(config.routes) != 1 else ''})")
    for unserved in problems(config):  # served without it: HTTP goes on, the cards leave it out
        print(f"note: {unserved}")
    url = config.store.url
    store: ConversationStore | None = None
    if (found := config.store.backend().found) is not None:  # opening it would create it: looked at instead
        problem, there = found(url)
        print(f"store {redact_url(url)}: {'FAILED (' + problem + ')' if problem else f'ok ({there})'}")
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
            results = await probe(config, store) + await documents(config)
        finally:
            if store is not None:
                await store.close()
        for result in results:
            print(result.line())
        passed = all(result.ok for result in results)
        for name, why in await _unusable(config):
            print(f"{name}: upstream FAILED ({why})")
            passed = False
        for route in config.routes:
            if not ask and (note := _base_url_note(route)) is not None:  # asked, the answer says it
                print(f"{route.name}: note: {note}")
        if ask:
            from gateway.check import ask_upstream

            for route in config.routes:
                ok, detail = await ask_upstream(route)
                print(f"{route.name}: upstream {route.upstream.url} answers as {route.upstream.dialect}: "
                      f"{'ok' if ok else 'FAILED'} ({detail})")
                passed = passed and ok
        return passed

    return 0 if asyncio.run(run()) else 1
