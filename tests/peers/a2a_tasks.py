"""Ask an A2A agent about its tasks with `a2a-sdk`'s own client, and print the answers, one JSON line each.

Runs in the a2a peer's venv (`tests/peers/requirements-a2a.txt`), like `a2a_client.py`:

    .peers/a2a/bin/python tests/peers/a2a_tasks.py http://127.0.0.1:8000 list '{"contextId": "c-1"}'

operation: get (`get_task`), cancel (`cancel_task`), list (`list_tasks`), subscribe (`subscribe`:
SubscribeToTask), push-create, push-get, push-list, push-delete (the push notification config methods). The params
are the request's, in its JSON form, read into the SDK's request type.

stdout: the answer in the SDK's JSON form (`MessageToDict`); for subscribe, each `StreamResponse` as it comes.
Exit status 0; on an error 1, with one line "<ExceptionType>: <message>" on stderr: the SDK raises A2A's errors as
their own types (`TaskNotFoundError`, `PushNotificationNotSupportedError`, ...).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from google.protobuf.json_format import MessageToDict, ParseDict

OPERATIONS: dict[str, tuple[str, Any]] = {
    "get": ("get_task", GetTaskRequest), "cancel": ("cancel_task", CancelTaskRequest),
    "list": ("list_tasks", ListTasksRequest), "subscribe": ("subscribe", SubscribeToTaskRequest),
    "push-create": ("create_task_push_notification_config", TaskPushNotificationConfig),
    "push-get": ("get_task_push_notification_config", GetTaskPushNotificationConfigRequest),
    "push-list": ("list_task_push_notification_configs", ListTaskPushNotificationConfigsRequest),
    "push-delete": ("delete_task_push_notification_config", DeleteTaskPushNotificationConfigRequest),
}


def _emit(line: dict[str, Any]) -> None:
    print(json.dumps(line, ensure_ascii=False), flush=True)


async def run(args: argparse.Namespace) -> None:
    async with httpx.AsyncClient(timeout=args.timeout) as http:
        card = await A2ACardResolver(http, args.url).get_agent_card()
        interfaces = [i for i in card.supported_interfaces if (i.protocol_version or "1.0") == "1.0"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(interfaces)
        if args.binding == "grpc":
            import grpc

            config = ClientConfig(httpx_client=http, supported_protocol_bindings=["GRPC"],
                                  grpc_channel_factory=grpc.aio.insecure_channel)
        else:
            config = ClientConfig(httpx_client=http)
        client = ClientFactory(config).create(card)
        name, kind = OPERATIONS[args.operation]
        request = ParseDict(json.loads(args.params), kind())
        if args.operation == "subscribe":
            async for response in client.subscribe(request):
                _emit(MessageToDict(response))
        else:
            answer = await getattr(client, name)(request)
            _emit(MessageToDict(answer) if answer is not None else {})
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url", help="the agent's base URL; the card is read from <url>/.well-known/agent-card.json")
    parser.add_argument("operation", choices=sorted(OPERATIONS))
    parser.add_argument("params", nargs="?", default="{}", help="the request, as JSON")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--binding", choices=("jsonrpc", "grpc"), default="jsonrpc",
                        help="the card's JSON-RPC interface, or its gRPC one")
    args = parser.parse_args()
    try:
        asyncio.run(run(args))
    except Exception as error:  # the one-line contract: the caller reads the type and the message
        print(f"{type(error).__name__}: {' '.join(str(error).split())}", file=sys.stderr, flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
