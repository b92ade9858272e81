"""`agent-gateway check`: an agent endpoint sent the standard conversations and its answers judged by its
dialect's rules, or (`--recording`) the replies recordings hold."""

from __future__ import annotations

import argparse
import asyncio
import sys

import orjson

from adapters import registry


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from gateway.check import SCENARIOS, check
    from gateway.upstream.url import UpstreamURL

    if args.recording:
        if args.url is not None or args.dialect is not None:
            parser.error("--recording judges recorded replies: give no URL and no --dialect (each reply is judged "
                         "by its own dialect)")
        from gateway.commands import recordings

        return recordings.check(parser, args.recording, args.json)
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
                               agent=args.agent, timeout=args.timeout, prompts=prompts))
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report.as_json(), option=orjson.OPT_INDENT_2) + b"\n")
    else:
        print("\n".join(report.lines()))
    return 1 if report.failed else 0
