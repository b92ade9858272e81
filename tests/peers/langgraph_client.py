"""`langgraph-sdk`'s own client, run in the langgraph peer's venv: one call to a LangGraph server (or the gateway),
each thing it yields printed as a JSON line on stdout; on failure the exception's type and message on stderr and
exit 1.

    langgraph_client.py URL stream --thread T --text "hello" [--assistant agent] [--mode messages-tuple ...]
    langgraph_client.py URL stream --thread T --resume '{"approved": true}'
    langgraph_client.py URL create-thread | state --thread T | assistants | cancel --thread T --run R
    langgraph_client.py URL join --thread T --run R [--last-event-id ID]
    langgraph_client.py URL create --thread T --text "hello" [--mode ...]   # runs.create: the Run, at once
    langgraph_client.py URL join-values --thread T --run R                  # runs.join: the thread's values
    langgraph_client.py URL wait --thread T --text "hello"                  # runs.wait: the values at the end
    langgraph_client.py URL stream ... --cancel-after N    # cancels the run after the N-th part (its id from
                                                           # `metadata`), then reads on
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from langgraph_sdk import get_client


def _out(value: Any) -> None:
    print(json.dumps(value, default=str), flush=True)


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("operation", choices=["stream", "create-thread", "state", "assistants", "cancel", "join",
                                                       "create", "join-values", "wait"])
    parser.add_argument("--thread")
    parser.add_argument("--run")
    parser.add_argument("--text")
    parser.add_argument("--assistant", default="agent")
    parser.add_argument("--mode", action="append")
    parser.add_argument("--resume")
    parser.add_argument("--tools")
    parser.add_argument("--cancel-after", type=int, default=0)
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--last-event-id")
    options = parser.parse_args()
    headers = dict(h.split(":", 1) for h in options.header)
    client = get_client(url=options.url, headers={k.strip(): v.strip() for k, v in headers.items()})
    if options.operation == "create-thread":
        _out(await client.threads.create())
    elif options.operation == "state":
        _out(await client.threads.get_state(options.thread))
    elif options.operation == "assistants":
        _out(await client.assistants.search())
    elif options.operation == "cancel":
        _out(await client.runs.cancel(options.thread, options.run))
    elif options.operation == "join":
        async for part in client.runs.join_stream(options.thread, options.run, last_event_id=options.last_event_id):
            _out({"event": part.event, "data": part.data})
    elif options.operation == "join-values":
        _out(await client.runs.join(options.thread, options.run))
    elif options.operation in ("create", "wait"):
        call = client.runs.create if options.operation == "create" else client.runs.wait
        _out(await call(options.thread, options.assistant, input={"messages": [{"type": "human",
                                                                                 "content": options.text or ""}]},
                        **({"stream_mode": options.mode} if options.mode else {})))
    else:
        await _stream(client, options)


async def _stream(client: Any, options: argparse.Namespace) -> None:
    arguments: dict[str, Any] = {"stream_mode": options.mode or ["messages-tuple", "values", "updates"]}
    if options.resume is not None:
        arguments["command"] = {"resume": json.loads(options.resume)}
    else:
        given: dict[str, Any] = {"messages": [{"type": "human", "content": options.text or ""}]}
        if options.tools:
            given["tools"] = json.loads(options.tools)
        arguments["input"] = given
    run_id = None
    count = 0
    async for part in client.runs.stream(options.thread, options.assistant, **arguments):
        _out({"event": part.event, "data": part.data})
        count += 1
        if part.event == "metadata" and isinstance(part.data, dict):
            run_id = part.data.get("run_id")
        if options.cancel_after and count == options.cancel_after and run_id is not None:
            await client.runs.cancel(options.thread, run_id)
            _out({"event": "cancelled", "data": run_id})


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Exception as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        sys.exit(1)
