"""A2A's gRPC binding, served (`Listener`): `lf.a2a.v1.A2AService` on `a2a.grpc_port`, with `grpc.aio` and a
generic handler built from the schema (`proto`), no generated code. Each call becomes the JSON-RPC request the
route already serves, posted to the route's path in process, with its metadata as headers (`authorization`,
`x-api-key`, `a2a-version`, `a2a-extensions`); the client cancelling, or its deadline passing, is the client
leaving. A stream comes back as `StreamResponse` messages (`grpc_wire`); a JSON-RPC error as the call's status,
with `google.rpc.Status` in `grpc-status-details-bin` (`grpc_errors`).

The route is the request's `tenant`, naming it; with one A2A route it is that route.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any

import orjson

from gateway.core.listeners import Answering, InProcess

from . import proto
from .grpc_errors import Refusal, from_http, from_rpc, invalid_argument
from .grpc_wire import MEDIA_TYPE, frames

log = logging.getLogger("agent_gateway.app")

RPCS: dict[str, tuple[str, str | None]] = {
    "SendMessage": ("SendMessageRequest", "SendMessageResponse"),
    "SendStreamingMessage": ("SendMessageRequest", None),
    "GetTask": ("GetTaskRequest", "Task"),
    "ListTasks": ("ListTasksRequest", "ListTasksResponse"),
    "CancelTask": ("CancelTaskRequest", "Task"),
    "SubscribeToTask": ("SubscribeToTaskRequest", None),
    "CreateTaskPushNotificationConfig": ("TaskPushNotificationConfig", "TaskPushNotificationConfig"),
    "GetTaskPushNotificationConfig": ("GetTaskPushNotificationConfigRequest", "TaskPushNotificationConfig"),
    "ListTaskPushNotificationConfigs": ("ListTaskPushNotificationConfigsRequest",
                                        "ListTaskPushNotificationConfigsResponse"),
    "GetExtendedAgentCard": ("GetExtendedAgentCardRequest", "AgentCard"),
    "DeleteTaskPushNotificationConfig": ("DeleteTaskPushNotificationConfigRequest", "Empty"),
}
"""Each method of the service: its request message, and its answer's (None: a stream of `StreamResponse`)."""


def missing() -> str | None:
    try:
        import grpc  # noqa: F401
    except ImportError:
        return "grpcio is not installed: pip install 'agent-gateway[grpc]'"
    if not proto.available():
        return "protobuf is not installed: pip install 'agent-gateway[grpc]'"
    return None


class _Running:
    __slots__ = ("_server", "_stopping")

    def __init__(self, server: Any) -> None:
        self._server = server
        self._stopping: asyncio.Task[None] | None = None

    def draining(self, grace: float) -> None:
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._server.stop(grace + 1.0))

    async def stop(self) -> None:
        if self._stopping is None:
            await self._server.stop(0)
        else:
            await self._stopping


async def start(app: InProcess, host: str, port: int, routes: Mapping[str, str]) -> _Running:
    """Serve the service on `host:port`, each call to one of `routes` (name -> path)."""
    import grpc

    schema = proto.loaded()
    service = _Service(app, dict(routes), schema)
    handlers = {}
    for method, (request_type, answer_type) in RPCS.items():
        read = getattr(schema, request_type).FromString
        if answer_type is None:
            handlers[method] = grpc.unary_stream_rpc_method_handler(
                service.streamed(method), request_deserializer=read, response_serializer=bytes)
        else:
            handlers[method] = grpc.unary_unary_rpc_method_handler(
                service.unary(method, answer_type), request_deserializer=read, response_serializer=bytes)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(proto.SERVICE, handlers),))
    try:
        bound = server.add_insecure_port(f"{host}:{port}")
    except RuntimeError as exc:
        raise OSError(f"a2a.grpc_port {port}: cannot listen on {host}:{port} ({exc})") from None
    if not bound:
        raise OSError(f"a2a.grpc_port {port}: cannot listen on {host}:{port}")
    await server.start()
    return _Running(server)


_Posted = tuple[str, list[tuple[str, str]], bytes]
_PASSED_OVER = ("grpc-", ":")
"""Metadata that is gRPC's own, not the client's headers."""


class _Service:
    __slots__ = ("_app", "_routes", "_schema")

    def __init__(self, app: InProcess, routes: dict[str, str], schema: proto.Schema) -> None:
        self._app = app
        self._routes = routes
        self._schema = schema

    def _call(self, method: str, request: Any, context: Any, stream: bool) -> _Posted:
        """The route's path, the headers and the JSON-RPC body the call stands for."""
        params = self._schema.json_format.MessageToDict(request)
        tenant = params.pop("tenant", None)
        path = self._routes.get(tenant) if tenant else None
        if path is None:
            if len(self._routes) != 1:
                named = ", ".join(self._routes)
                raise invalid_argument(f"tenant {tenant!r} names no A2A route of this gateway: one of {named}"
                                       if tenant else f"name the route in the request's tenant: one of {named}")
            path = next(iter(self._routes.values()))
        headers = [(key, value) for key, value in context.invocation_metadata() or ()
                   if isinstance(value, str) and not key.endswith("-bin") and not key.startswith(_PASSED_OVER)]
        headers += [("content-type", "application/json"), ("accept", MEDIA_TYPE if stream else "application/json")]
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        return path, headers, body

    def unary(self, method: str, answer_type: str) -> Any:
        answer_class = getattr(self._schema, answer_type)

        async def handle(request: Any, context: Any) -> bytes:
            try:
                path, headers, body = self._call(method, request, context, stream=False)
                async with self._app("POST", path, headers, body, _client(context)) as answer:
                    whole = b"".join([piece async for piece in answer.body()])
                result = _result(answer, whole)
                message = answer_class()
                if isinstance(result, dict):
                    self._schema.json_format.ParseDict(result, message, ignore_unknown_fields=True)
                return bytes(message.SerializeToString())
            except self._schema.json_format.ParseError as exc:
                refusal = _unwritable(exc)
            except Refusal as refused:
                refusal = refused
            await refusal.abort(context)
            raise AssertionError("abort raises")

        return handle

    def streamed(self, method: str) -> Any:
        async def handle(request: Any, context: Any) -> AsyncIterator[bytes]:
            try:
                path, headers, body = self._call(method, request, context, stream=True)
                async with self._app("POST", path, headers, body, _client(context)) as answer:
                    async for message in self._stream(answer):
                        yield message
                return
            except self._schema.json_format.ParseError as exc:
                refusal = _unwritable(exc)
            except Refusal as refused:
                refusal = refused
            await refusal.abort(context)

        return handle

    async def _stream(self, answer: Answering) -> AsyncIterator[bytes]:
        """The answer's responses as serialized `StreamResponse` messages: as they are, from the route's protobuf
        stream; read from its JSON-RPC events (a query's stream, `SubscribeToTask`); or its error raised."""
        kind = answer.headers.get("content-type", "").partition(";")[0].strip()
        buffer = bytearray()
        if kind == MEDIA_TYPE:
            async for piece in answer.body():
                buffer += piece
                for message in frames(buffer):
                    yield message
            return
        if kind != "text/event-stream":
            whole = b"".join([piece async for piece in answer.body()])
            result = _result(answer, whole)
            if isinstance(result, dict):
                yield self._stream_response(result)
            return
        async for piece in answer.body():
            buffer += piece
            while (end := buffer.find(b"\n\n")) >= 0:
                event = bytes(buffer[:end])
                del buffer[:end + 2]
                data = b"".join(line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:"))
                if data:
                    result = _rpc_result(orjson.loads(data))
                    if isinstance(result, dict):
                        yield self._stream_response(result)

    def _stream_response(self, result: dict[str, Any]) -> bytes:
        message = self._schema.StreamResponse()
        self._schema.json_format.ParseDict(result, message, ignore_unknown_fields=True)
        return bytes(message.SerializeToString())


def _unwritable(exc: Exception) -> Refusal:
    """An answer of the route's that the schema cannot hold: the gateway's fault, said as such."""
    log.warning("an A2A answer could not be written in protobuf: %s", exc)
    return Refusal("INTERNAL", f"the answer could not be written in protobuf: {exc}", "INTERNAL_ERROR")


def _client(context: Any) -> tuple[str, int] | None:
    """The caller's address, from gRPC's `ipv4:127.0.0.1:5555` (or `ipv6:[::1]:5555`)."""
    peer = context.peer() or ""
    kind, _, address = peer.partition(":")
    host, _, port = address.rpartition(":")
    if kind not in ("ipv4", "ipv6") or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


def _result(answer: Answering, body: bytes) -> Any:
    """A JSON-RPC answer's result, or its error raised; an answer that is not JSON-RPC's (the gateway refusing the
    call before the route) raised by its HTTP status."""
    try:
        value = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        value = None
    if isinstance(value, dict) and ("result" in value or "error" in value):
        return _rpc_result(value)
    raise from_http(answer.status, value, body)


def _rpc_result(value: Any) -> Any:
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        raise from_rpc(value["error"])
    return value.get("result") if isinstance(value, dict) else None
