"""`agent-gateway`: the command line.

- `demo` runs the gateway in front of the built-in agent, in one process, and prints a request to try per dialect;
- `serve` runs the gateway, from a config file or, for one route, from flags;
- `agent` runs the built-in scripted agent in any dialect;
- `translate` re-encodes a recorded stream from one dialect into another with the proxy's own codecs (with no
  input it translates a built-in AG-Kit run, so it works on a fresh install with no agent anywhere);
- `check` sends an agent endpoint the standard conversations and judges its answers by its dialect's rules, or
  judges the replies of recordings (`--recording`);
- `replay` serves recordings as an agent in the recorded upstream's dialect.

This module reads the arguments; each command is a module of `gateway.commands`.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Callable
from typing import NamedTuple, NoReturn, TypeVar

from adapters import registry
from gateway.commands import version
from gateway.core.listeners import Listener

_N = TypeVar("_N", int, float)


def _number(convert: Callable[[str], _N], what: str, within: Callable[[_N], bool], refusal: str
            ) -> Callable[[str], _N]:
    """An argument type for a number in a range: `what` names the kind of number a word is not, `refusal` (with
    `{value}` and `{text}`) says what is wrong with one out of range."""

    def parse(text: str) -> _N:
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not within(value):
            raise argparse.ArgumentTypeError(refusal.format(value=value, text=text))
        return value

    return parse


_port = _number(int, "a port number", lambda port: 1 <= port <= 65535, "{value} is not a port: use 1-65535")
_workers = _number(int, "a number", lambda count: count >= 1, "{value}: at least 1 worker")
_seconds = _number(float, "a number of seconds", lambda seconds: 0 < seconds <= 3600,
                   "{text}: use more than 0 and at most 3600 seconds")
_speed = _number(float, "a number", lambda speed: 0 < speed <= 1000,
                 "{text}: use more than 0 and at most 1000 (--at-once for no waiting)")
_pace = _number(float, "a number of seconds", lambda seconds: 0 <= seconds <= 60, "{text}: use 0 to 60 seconds")


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)")


class _Parser(argparse.ArgumentParser):
    """Bad flags get one line saying what is wrong, a guess at what was meant, and where to read more."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message}{self._guess(message)} (see {self.prog} --help)\n")

    def _guess(self, message: str) -> str:
        """", did you mean --port?" for a mistyped flag, "; did you mean 'ag-kit'?" for a mistyped choice."""
        if (choice := _INVALID_CHOICE.search(message)) is not None:
            close = difflib.get_close_matches(choice[1], re.findall(r"'([^']*)'", choice[2]), n=1, cutoff=0.6)
            return f"; did you mean {close[0]!r}?" if close else ""
        if not message.startswith("unrecognized arguments: "):
            return ""
        known = {option.lstrip("-"): option for action in self._actions for option in action.option_strings}
        for word in message.removeprefix("unrecognized arguments: ").split():
            close = difflib.get_close_matches(word.split("=", 1)[0].lstrip("-"), known, n=1, cutoff=0.6)
            if word.startswith("-") and close:
                return f", did you mean {known[close[0]]}?"
        return ""


def _listening(command: argparse.ArgumentParser, port: int) -> None:
    """The address a command that serves listens on: every such command takes the same two flags, defaults aside."""
    command.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1)")
    command.add_argument("--port", type=_port, default=port, help=f"port to listen on (default: {port})")


def main(argv: list[str] | None = None) -> int:
    """Each command adds its flags; the one asked for runs, and its exit status is returned."""
    parser = _Parser(prog="agent-gateway", description="A reverse proxy that translates between AI-agent dialects.")
    parser.add_argument("--version", action="version", version=version(),
                        help="print the version, and whether the codecs run compiled (scripts/compile), and exit")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    dialects = _Dialects()
    for command in _commands():
        command.flags(commands.add_parser(command.name, help=command.help, description=command.description),
                      dialects)
    if not (sys.argv[1:] if argv is None else argv):  # nothing asked: what can be asked
        parser.print_help()
        return 2
    args, unknown = parser.parse_known_args(argv)
    asked = commands.choices[args.command]
    if unknown:  # said by the command's own parser, which knows what the command takes
        asked.error(f"unrecognized arguments: {' '.join(unknown)}")
    return _run(asked, args)


def _run(command: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The command's module runs it, imported only now: a command does not pay for the others' imports."""
    match args.command:
        case "check":
            from gateway.commands import check as checking

            return checking.run(command, args)
        case "serve":
            from gateway.commands import serve as serving

            return serving.run(command, args)
        case "demo":
            from gateway.commands import demo as demo_command

            return demo_command.demo(args)
        case "agent":
            from gateway.commands import demo as demo_command

            return demo_command.agent(args)
        case "replay":
            from gateway.commands import recordings

            return recordings.replay(command, args)
        case _:  # translate
            from gateway.commands import translate as translating

            return translating.run(command, args)


class _Dialects:
    """The dialects and variants several commands offer as choices."""

    def __init__(self) -> None:
        self.names = list(registry.DIALECTS)
        self.variants = list(registry.variants())
        self.variant_help = "; ".join(f"{variant} ({dialect})" for variant, dialect in registry.variants().items())
        self.listeners = [(name, listener) for name, dialect in registry.DIALECTS.items()
                          if (listener := dialect.capability(Listener)) is not None]


class _Command(NamedTuple):
    """A subcommand as `agent-gateway --help` lists it, and what adds its flags."""

    name: str
    help: str
    description: str
    flags: Callable[[argparse.ArgumentParser, _Dialects], None]


def _commands() -> tuple[_Command, ...]:
    """The subcommands, in the order `--help` lists them."""
    from gateway.check import SCENARIOS

    return (
        _Command("serve", "run the gateway", "Run the gateway: routes from --config, or one route from the flags.",
                 _serve),
        _Command("demo", "run the gateway in front of the built-in agent (no external agent needed)",
                 "Serve the gateway and the built-in scripted agent (speaking AG-Kit) in one process, and print "
                 "a curl command for each client dialect.", _demo),
        _Command("agent", "run the built-in scripted agent",
                 "Serve the built-in scripted agent in one dialect. Keywords in the user's message choose what it "
                 "does: weather (server tool), tool (calls the client's first tool), approve / interrupt "
                 "(human in the loop), think, state, slow, fail, hang, silent; anything else is echoed.", _agent),
        _Command("translate", "translate a recorded stream from one dialect into another",
                 "Decode INPUT as the --from dialect and write it re-encoded in the --to dialect on stdout.",
                 _translate),
        _Command("check", "judge an agent endpoint by its dialect's rules",
                 "Send URL the standard conversations (" + ", ".join(SCENARIOS) + ") in its dialect, and judge "
                 "every answer by the rules a real client of that dialect holds it to. A conversation the agent "
                 "shows nothing of (no tool called, no interrupt) is skipped. Exits 1 on any violation.", _check),
        _Command("replay", "serve recordings as an agent",
                 "Serve the exchanges recorded in FILEs as an agent in the recorded upstream's dialect: each "
                 "request, matched by its conversation and turn, gets the recorded reply, frame by frame, with "
                 "its timing. A request nothing was recorded for gets the dialect's own error.", _replay),
    )


def _serve(serve: argparse.ArgumentParser, dialects: _Dialects) -> None:
    serve.add_argument("--config", help="YAML configuration file (see config/)")
    serve.add_argument("--check", action="store_true",
                       help="check the configuration, reach every upstream and the store, print a line each, and "
                            "exit (non-zero if anything failed); nothing is written")
    serve.add_argument("--send-request", action="store_true",
                       help="with --check: also send each upstream one real request ('hello') and judge its reply "
                            "by its dialect's rules (the agent answers it, which may cost a model call)")
    _listening(serve, 8080)
    _one_route(serve, dialects)
    serve.add_argument("--workers", type=_workers, default=1,
                       help="worker processes (default: 1); more than one needs a shared store (sqlite or redis)")
    serve.add_argument("--log-format", choices=["json", "human"],
                       help="one JSON line per request, or lines for humans (default: human when stderr is a "
                            "terminal, json otherwise)")
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
    for dialect, listener in dialects.listeners:  # a transport of a dialect's on a port of its own (A2A's gRPC)
        serve.add_argument(f"--{dialect}-{listener.setting.replace('_', '-')}", type=_port, metavar="PORT",
                           dest=listener_flag(dialect, listener.setting),
                           help=f"serve {dialect} over {listener.name} on this port too ({dialect}.{listener.setting})")


def listener_flag(dialect: str, setting: str) -> str:
    """The attribute of `serve`'s arguments that sets a `Listener`'s port."""
    return f"listener_{dialect.replace('-', '_')}_{setting}"


def _one_route(serve: argparse.ArgumentParser, dialects: _Dialects) -> None:
    """`serve`'s flags for one route, without --config."""
    serve.add_argument("--upstream", metavar="URL", help="without --config: the upstream agent's URL")
    serve.add_argument("--upstream-dialect", choices=dialects.names, help="without --config: the upstream's dialect")
    serve.add_argument("--upstream-variant", choices=dialects.variants,
                       help=f"without --config: the upstream's variant, when its responses do not show it "
                            f"({dialects.variant_help})")
    serve.add_argument("--upstream-agent", metavar="NAME",
                       help="without --config: which agent the upstream's server runs, for one that hosts several "
                            "(a LangGraph assistant id or graph name)")
    serve.add_argument("--client-dialect", choices=dialects.names, action="append",
                       help="without --config: a dialect clients speak (repeat; default: detect any)")
    serve.add_argument("--store", default=None,
                       help="without --config: conversation store URL (memory://, sqlite:///file.db, redis://...; "
                            "default: sqlite:///agent-gateway.db, a file in the working directory)")


def _demo(demo: argparse.ArgumentParser, dialects: _Dialects) -> None:
    _listening(demo, 8080)
    demo.add_argument("--agent-dialect", choices=dialects.names, default="ag-kit",
                      help=f"the dialect the built-in agent speaks (default: ag-kit; "
                           f"{' and '.join(n for n, d in registry.DIALECTS.items() if 'reasoning' in d.carries)} "
                           f"show reasoning)")


def _agent(agent: argparse.ArgumentParser, dialects: _Dialects) -> None:
    agent.add_argument("--dialect", choices=dialects.names, required=True, help="the dialect the agent speaks")
    _listening(agent, 8001)
    agent.add_argument("--pace", type=_pace, default=0.0, help="seconds between streamed events (default: 0)")


def _translate(translate: argparse.ArgumentParser, dialects: _Dialects) -> None:
    translate.add_argument("input", nargs="?", help="a file (a stream, or a recording), or - for stdin; default: a "
                           "built-in AG-Kit sample run")
    translate.add_argument("--from", dest="source", choices=dialects.names, default=None,
                           help="the dialect the input is in (default: ag-kit; a recording says its own)")
    translate.add_argument("--to", dest="target", choices=dialects.names, default="ag-ui",
                           help="the dialect to write (default: ag-ui)")
    translate.add_argument("--variant", choices=dialects.variants,
                           help=f"the target's variant ({dialects.variant_help})")


def _check(check: argparse.ArgumentParser, dialects: _Dialects) -> None:
    from gateway.check import SCENARIOS

    check.add_argument("url", nargs="?", help="the agent endpoint, e.g. http://127.0.0.1:8001/agui")
    check.add_argument("--dialect", choices=dialects.names, help="the dialect the endpoint speaks")
    check.add_argument("--recording", action="append", metavar="FILE",
                       help="instead of an endpoint: judge the replies a recording holds, the upstream's and the "
                            "client's, each by its own dialect's rules (repeatable)")
    check.add_argument("--scenario", choices=list(SCENARIOS), action="append",
                       help="a conversation to run (repeat for several; default: all)")
    check.add_argument("--header", action="append", default=[], metavar="'NAME: VALUE'",
                       help="a header for every request, e.g. 'Authorization: Bearer ...' (repeatable)")
    check.add_argument("--prompt", action="append", default=[], metavar="SCENARIO=TEXT",
                       help="what a conversation asks the agent (repeatable), e.g. server-tool='look up X'")
    check.add_argument("--variant", choices=dialects.variants, help=f"the endpoint's variant ({dialects.variant_help})")
    check.add_argument("--agent", metavar="NAME",
                       help="which of the agents a server hosts to ask: an MCP tool's name, a LangGraph assistant "
                            "id or graph name (default: agent)")
    check.add_argument("--timeout", type=_seconds, default=60.0, help="seconds per request (default: 60)")
    check.add_argument("--json", action="store_true", help="a JSON report on stdout, for CI")


def _replay(replay: argparse.ArgumentParser, dialects: _Dialects) -> None:
    replay.add_argument("files", nargs="+", metavar="FILE", help="recordings (routes[].record, serve --record, or "
                        "downloaded from the inspector)")
    _listening(replay, 8001)
    replay.add_argument("--speed", type=_speed, default=1.0,
                        help="how much faster than recorded (default: 1, the recorded timing)")
    replay.add_argument("--at-once", action="store_true", help="every frame at once, no waiting")


if __name__ == "__main__":
    raise SystemExit(main())
