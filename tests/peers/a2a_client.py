"""Send one message to an A2A agent with `a2a-sdk`'s own client and print what comes back, one JSON line each.

Runs in the a2a peer's venv (`tests/peers/requirements-a2a.txt`), like the server:

    .peers/a2a/bin/python tests/peers/a2a_client.py http://127.0.0.1:8000 "hello" [options]

The SDK does the work: `A2ACardResolver` fetches `<url>/.well-known/agent-card.json`, `ClientFactory.create` picks
the transport from the card's `supportedInterfaces` (the binding asked for; 1.0 unless `--version 0.3`, which keeps
only the card's 0.3 interfaces so the factory builds its compat transport), and `Client.send_message` streams
(`SendStreamingMessage`) or, with `--no-stream` or a card that says `streaming: false`, sends (`SendMessage`).

stdout, one JSON object per line:
    each `StreamResponse` the client yields, in the SDK's JSON form (`MessageToDict`: camelCase, enums by name):
        {"task": {...}} | {"message": {...}} | {"statusUpdate": {...}} | {"artifactUpdate": {...}}
    (a non-streaming send yields one: the `Task` or `Message` of the `SendMessageResponse`; with `--version 0.3`
    the compat transport has already turned the 0.3 wire objects into these 1.0 ones);
    with `--cancel-after N`, after the N-th response: {"cancelTask": <the Task CancelTask answered>}, then the
    rest of the stream.
stderr: with `--dump-requests`, each HTTP request the client sent as one JSON line {method, url, headers, body, raw}
    (`body` parsed, `raw` the body's bytes as sent, as text).
Exit status 0; on an error 1, with one line "<ExceptionType>: <message>" on stderr (lines printed so far stay).

Options: --context-id, --task-id (continue a task, e.g. answer INPUT_REQUIRED), --message-id, --data JSON (a data
part, e.g. a form's fields), --no-stream,
--binding jsonrpc|http-json|grpc (gRPC: `grpc.aio.insecure_channel` to the card's `host:port`), --key KEY
(`Authorization: Bearer KEY`, sent as a service parameter: a header, or gRPC metadata), --version 1.0|0.3,
--cancel-after N, --timeout SECONDS.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import CancelTaskRequest, Message, Part, Role, SendMessageRequest, StreamResponse
from google.protobuf.json_format import MessageToDict, ParseDict

BINDINGS = {"jsonrpc": "JSONRPC", "http-json": "HTTP+JSON", "grpc": "GRPC"}


def _emit(line: dict[str, Any]) -> None:
    print(json.dumps(line, ensure_ascii=False), flush=True)


def _task_id(response: StreamResponse) -> str:
    if response.HasField("task"):
        return response.task.id
    if response.HasField("status_update"):
        return response.status_update.task_id
    if response.HasField("artifact_update"):
        return response.artifact_update.task_id
    return response.message.task_id


async def _dump(request: httpx.Request) -> None:
    body = request.content.decode("utf-8", errors="replace")
    try:
        parsed: Any = json.loads(body) if body else None
    except json.JSONDecodeError:
        parsed = body
    print(json.dumps({"method": request.method, "url": str(request.url), "headers": dict(request.headers),
                      "body": parsed, "raw": body}), file=sys.stderr, flush=True)


def _parts(args: argparse.Namespace) -> list[Part]:
    """The message's parts: its text, or with `--data` a data part holding that JSON (and the text too, when not
    empty)."""
    if args.data is None:
        return [Part(text=args.text)]
    data = Part()
    ParseDict(json.loads(args.data), data.data)
    return [Part(text=args.text), data] if args.text else [data]


async def run(args: argparse.Namespace) -> None:
    hooks = {"request": [_dump]} if args.dump_requests else {}
    async with httpx.AsyncClient(timeout=args.timeout, event_hooks=hooks) as http:
        card = await A2ACardResolver(http, args.url).get_agent_card()
        interfaces = [i for i in card.supported_interfaces
                      if (i.protocol_version or "1.0").startswith(args.version)]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(interfaces)
        channels = {}
        if args.binding == "grpc":
            import grpc

            channels["grpc_channel_factory"] = grpc.aio.insecure_channel
        config = ClientConfig(streaming=not args.no_stream, httpx_client=http,
                              supported_protocol_bindings=[BINDINGS[args.binding]], **channels)
        client = ClientFactory(config).create(card)
        context = ClientCallContext(service_parameters={"Authorization": f"Bearer {args.key}"}) if args.key else None
        message = Message(message_id=args.message_id or str(uuid.uuid4()), role=Role.ROLE_USER,
                          parts=_parts(args), context_id=args.context_id or "", task_id=args.task_id or "")
        seen = 0
        async for response in client.send_message(SendMessageRequest(message=message), context=context):
            _emit(MessageToDict(response))
            seen += 1
            if seen == args.cancel_after:
                cancelled = await client.cancel_task(CancelTaskRequest(id=_task_id(response)), context=context)
                _emit({"cancelTask": MessageToDict(cancelled)})
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the agent's base URL; the card is read from <url>/.well-known/agent-card.json")
    parser.add_argument("text", help="the user message's one text part")
    parser.add_argument("--context-id")
    parser.add_argument("--task-id")
    parser.add_argument("--message-id")
    parser.add_argument("--data", metavar="JSON", help="a data part holding this JSON (the text, when not empty, too)")
    parser.add_argument("--no-stream", action="store_true", help="SendMessage instead of SendStreamingMessage")
    parser.add_argument("--binding", choices=sorted(BINDINGS), default="jsonrpc")
    parser.add_argument("--version", choices=("1.0", "0.3"), default="1.0")
    parser.add_argument("--key", help="sent as Authorization: Bearer KEY")
    parser.add_argument("--cancel-after", type=int, default=0, metavar="N",
                        help="send CancelTask for the task after the N-th response")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--dump-requests", action="store_true", help="log each HTTP request as JSON on stderr")
    args = parser.parse_args()
    try:
        asyncio.run(run(args))
    except Exception as error:  # the one-line contract: the caller reads the type and the message
        print(f"{type(error).__name__}: {' '.join(str(error).split())}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
