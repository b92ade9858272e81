"""An A2A agent on gRPC whose stream breaks off after "Hello " (the call ends UNAVAILABLE), for the gateway's
re-attach over gRPC (`tests/adapters/a2a/test_grpc_calls.py`). grpcio's server with a generic handler over the
gateway's own schema (`adapters/a2a/proto.py`), run with the gateway's interpreter from the repository root:

    python tests/dropping_grpc_agent.py PORT [--ended]

`SubscribeToTask` answers the task as it stands ("Hello wor"), then the rest ("ld", completed); with `--ended` the
task has ended by then: `SubscribeToTask` is refused (FAILED_PRECONDITION) and `GetTask` answers it whole. It prints
`serving` once it listens, then `<method>:<tenant>` for each call.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from adapters.a2a import proto
from adapters.a2a.grpc_wire import fill, stream_response

TASK = {"id": "t-1", "contextId": "c-1"}
WORKING, DONE = {"state": "TASK_STATE_WORKING"}, {"state": "TASK_STATE_COMPLETED"}


def chunk(text: str, append: bool, last: bool) -> bytes:
    return stream_response("artifact-update", {"taskId": "t-1", "contextId": "c-1", "append": append,
                                               "lastChunk": last,
                                               "artifact": {"artifactId": "a-1", "parts": [{"text": text}]}})


def said(method: str, request: Any) -> None:
    print(f"{method}:{request.tenant}", flush=True)


def handlers(ended: bool) -> Any:
    schema = proto.loaded()

    async def send(request: Any, context: Any) -> Any:
        said("SendStreamingMessage", request)
        yield stream_response("task", {**TASK, "status": WORKING})
        yield chunk("Hello ", False, False)
        await context.abort(grpc.StatusCode.UNAVAILABLE, "the connection broke")

    async def subscribe(request: Any, context: Any) -> Any:
        said("SubscribeToTask", request)
        if ended:
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "task has ended")
        yield stream_response("task", {**TASK, "status": WORKING,
                                       "artifacts": [{"artifactId": "a-1", "parts": [{"text": "Hello wor"}]}]})
        yield chunk("ld", True, True)
        yield stream_response("status-update", {"taskId": "t-1", "contextId": "c-1", "status": DONE})

    async def get_task(request: Any, context: Any) -> bytes:
        said("GetTask", request)
        task = schema.Task()
        fill(task, {**TASK, "status": DONE, "artifacts": [{"artifactId": "a-1", "parts": [{"text": "Hello world"}]}]},
             schema)
        return bytes(task.SerializeToString())

    def streamed(handle: Any, request: str) -> Any:
        return grpc.unary_stream_rpc_method_handler(handle, request_deserializer=getattr(schema, request).FromString,
                                                    response_serializer=bytes)

    return grpc.method_handlers_generic_handler(proto.SERVICE, {
        "SendStreamingMessage": streamed(send, "SendMessageRequest"),
        "SubscribeToTask": streamed(subscribe, "SubscribeToTaskRequest"),
        "GetTask": grpc.unary_unary_rpc_method_handler(get_task, request_deserializer=schema.GetTaskRequest.FromString,
                                                       response_serializer=bytes)})


async def main(port: int, ended: bool) -> None:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handlers(ended),))
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    print("serving", flush=True)
    await server.wait_for_termination()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), "--ended" in sys.argv[2:]))
