"""`agent-gateway demo`: the gateway in front of the built-in agent, in one process, with a request to try per
dialect; and `agent-gateway agent`: the built-in agent alone, in any dialect."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

import orjson

from adapters import registry
from gateway.commands import bind
from gateway.config import GatewayConfig, Route, Store, Upstream
from gateway.core.capabilities import NamedRoutes, Resource
from gateway.core.codec import Dialect, Feature
from gateway.core.queries import RunQueries
from gateway.inspector.options import InspectorOptions

DEMO_PROMPTS = ("What is the weather in Paris?", "hello", "What is the weather in Berlin?",
                "What is the weather in Rome?", "think", "approve")
"""What the demo's printed requests ask, one per dialect in the registry's order (a server tool, an echo, ...)."""
ROUTE = "agent-gateway"
"""The demo's one route, by the name OpenAI clients know it by (the model the printed requests name)."""


def _call(dialect: Dialect, body: dict[str, Any]) -> tuple[str, str]:
    """Where a client of `dialect` sends `body`, and what it sends: the dialect's path, or, for a dialect whose
    clients post runs to paths under it (LangGraph's `/threads/{thread_id}/runs/stream`), the first such path that
    names what the body does, read back into the same request (with what the path itself adds: the reply its
    client expects)."""
    for resource in dialect.capabilities_of(Resource):
        names = re.findall(r"{(\w+)}", resource.path)
        if resource.method != "POST" or not names or not all(isinstance(body.get(n), str) for n in names):
            continue
        segments = {name: body[name] for name in names}
        rest = {key: value for key, value in body.items() if key not in segments}
        read = resource.read(segments, rest, {})
        if all(read.get(key) == value for key, value in body.items()):
            return dialect.paths[0] + resource.path.format(**segments), orjson.dumps(rest).decode()
    return dialect.paths[0], orjson.dumps(body).decode()


DEMO_REQUESTS = {
    name: _call(dialect, dialect.sample_request(DEMO_PROMPTS[index % len(DEMO_PROMPTS)], f"demo-{index + 1}"))
    for index, (name, dialect) in enumerate(registry.DIALECTS.items())
}
"""Per client dialect, a path of the gateway's and a body its client would send there."""


def demo(args: argparse.Namespace) -> int:
    import uvicorn
    from starlette.routing import Mount

    from gateway.agent.script import KEYWORD_HELP, KEYWORD_SHOWS
    from gateway.agent.server import KEYWORDS, create_agent_app
    from gateway.server.app import create_app
    from gateway.server.connections.drain import exit_quietly_when_stopped
    from gateway.server.operations import logs

    base = f"http://{args.host}:{args.port}"
    dialect = registry.get(args.agent_dialect)
    agent_url = f"{base}/demo-agent{dialect.paths[0]}"
    inspector = InspectorOptions()
    inspector.key = inspector.key_for(args.host) if _loopback(args.host) else None  # beyond loopback: no page
    config = GatewayConfig(routes=[Route(name=ROUTE, upstream=Upstream(url=agent_url, dialect=dialect.name),
                                         inspector_bodies=True)],
                           store=Store(url="memory://"), inspector=inspector if inspector.key else None)
    logs.configure("human", "info")  # a person is watching: one readable line per request (tracing's too)
    sock = bind(args.host, args.port)
    if sock is None:
        return 2
    print(f"agent-gateway demo: the built-in agent speaks {dialect.name} at {agent_url};\n"
          f"the gateway answers every dialect at {base}. A word in the message picks what the agent does:")
    for keyword in KEYWORDS:
        print(f"  {keyword:<10} {KEYWORD_HELP[keyword]}{_lost(dialect, KEYWORD_SHOWS.get(keyword))}")
    print("  otherwise  echoes the message, counting the turns of its conversation\n")
    if config.inspector is not None:
        print(f"See each translation in the inspector: {base}{inspector.path}/?key={inspector.key}\n")
    print("Try:\n")
    for client, (path, body) in DEMO_REQUESTS.items():
        print(f"# {client}\ncurl -N {base}{path} -H 'content-type: application/json' -d '{body}'\n")
    agent_app = create_agent_app(dialect.name, test_hooks=False)  # its request log holds what people typed
    app = create_app(config, extra_routes=[Mount("/demo-agent", agent_app)])
    exit_quietly_when_stopped()
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0


def _lost(agent: Dialect, needs: Feature | None) -> str:
    """Why a keyword's run shows nothing through an agent of this dialect, and which dialect would show it."""
    if needs is None or needs in agent.carries:
        return ""
    other = next(name for name, dialect in registry.DIALECTS.items() if needs in dialect.carries)
    return f" ({agent.name} cannot carry it: try --agent-dialect {other})"


def _loopback(host: str) -> bool:
    from gateway.inspector.options import is_loopback

    return is_loopback(host)


AGENT_INSIDE = "/_agent"
"""Where `agent` mounts the scripted agent it serves through the gateway's own route (a dialect with queries)."""
NAMED_AS = "agent"
"""That route's name where clients name the agent they call at one endpoint (MCP's tool): the name `check` asks such a
server for unless told another."""


def agent(args: argparse.Namespace) -> int:
    """The built-in agent in one dialect. A dialect whose clients ask about their runs after starting them (A2A's
    tasks), or reach one endpoint for every agent (MCP's `/mcp`, its tools the agents), is served by a gateway route
    in front of the agent speaking AG-UI, in the same process: what a real server of that dialect answers beyond its
    runs (GetTask, ListTasks, SubscribeToTask; sessions, cancels, the Host and Origin checks) is then the gateway's,
    and the agent's runs are the same as in any dialect."""
    import uvicorn

    from gateway.agent.server import KEYWORDS, create_agent_app, run
    from gateway.server.connections.drain import exit_quietly_when_stopped
    from gateway.server.operations import logs

    logs.configure("human", "info")
    dialect = registry.get(args.dialect)
    sock = bind(args.host, args.port)
    if sock is None:
        return 2
    paths = ", ".join(f"http://{args.host}:{args.port}{path}" for path in dialect.paths)
    print(f"agent-gateway agent: speaking {args.dialect} at {paths}\nkeywords: {', '.join(KEYWORDS)}; "
          "anything else is echoed", file=sys.stderr)
    exit_quietly_when_stopped()
    if dialect.capability(RunQueries) is None and dialect.capability(NamedRoutes) is None:
        run(args.dialect, sock, args.pace)
        return 0
    from starlette.routing import Mount

    from gateway.server.app import create_app

    inside = registry.get("ag-ui")
    upstream = Upstream(url=f"http://{args.host}:{args.port}{AGENT_INSIDE}{inside.paths[0]}", dialect=inside.name)
    name = NAMED_AS if dialect.capability(NamedRoutes) is not None else "scripted-agent"
    route = Route(name=name, paths=list(dialect.paths), client_dialects=[dialect.name], upstream=upstream,
                  agent={"description": f"The gateway's built-in scripted agent: keywords {', '.join(KEYWORDS)}."})
    app = create_app(GatewayConfig(routes=[route], store=Store(url="memory://")),
                     extra_routes=[Mount(AGENT_INSIDE, create_agent_app(inside.name, pace=args.pace))])
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    return 0
