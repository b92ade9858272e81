"""A2A agents called over gRPC (`UpstreamTransport`): the gateway's HTTP/1.1 client cannot carry gRPC, so the
dialect makes the calls with `grpc.aio`, one channel per upstream address, and hands each answer back as the
core reads an HTTP response: a body of length-prefixed `StreamResponse` messages (`grpc_wire.MEDIA_TYPE`), the
call's final status last when it failed (`grpc_decode.status_frame`), which `grpc_decode` reads.

A call is the `UpstreamRequest` a turn or a decoder built for gRPC: its path the method
(`/lf.a2a.v1.A2AService/SendStreamingMessage`), its body the serialized request, its headers the metadata (with
the route's: `authorization`, `a2a-extensions`). The target's path is the card's `tenant`, set on the request.
A broken call after the stream began is a broken connection (the run is re-attached); before, its status is the
run's error.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from gateway.core.codec import UpstreamRequest

from .grpc_decode import SERVICE_PATH, status_frame
from .grpc_server import missing
from .grpc_wire import MEDIA_TYPE, fill, frame
from .proto import varint

STREAMED = frozenset({"SendStreamingMessage", "SubscribeToTask"})
TASK_ANSWERS = frozenset({"GetTask", "CancelTask"})
"""Methods whose answer is a `Task`: handed on as the `StreamResponse` holding it (`task` is its field 1)."""
MAX_CHANNELS = 64
"""Upstream addresses kept connected at once; past that the least recently used is closed (its calls may finish)."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""grpcio's own bound on a message; the route's `max_event_bytes` is the decoder's."""
_CLOSE_GRACE = 30.0
_NOT_METADATA = frozenset({"content-type", "accept", "content-length", "host", "user-agent", "te", "connection",
                           "transfer-encoding"})
_HEADERS = {"content-type": MEDIA_TYPE}


class GrpcCalls:
    """The gRPC calls of one app, on a channel per upstream address (bounded), closed with the app."""

    def __init__(self) -> None:
        self._channels: OrderedDict[tuple[str, bool], Any] = OrderedDict()

    async def call(self, url: str, connect_timeout: float, method: str, path: str | None, body: bytes,
                   headers: Mapping[str, str]) -> _Answer:
        import grpc

        parts = urlsplit(url)
        if path is None or not path.startswith(SERVICE_PATH):
            raise ConnectionError(f"not a gRPC call: {path or url}")
        name = path[len(SERVICE_PATH):]
        tenant = unquote(parts.path.strip("/"))
        if tenant:
            data = tenant.encode()
            body += b"\x0a" + varint(len(data)) + data  # field 1 of every request: set last, it wins
        channel = await self._ready(parts.netloc.rpartition("@")[2], parts.scheme == "https", connect_timeout)
        metadata = _metadata(headers)
        if name in STREAMED:
            call = channel.unary_stream(path, request_serializer=None, response_deserializer=None)(
                body, metadata=metadata)
        else:
            call = channel.unary_unary(path, request_serializer=None, response_deserializer=None)(
                body, metadata=metadata)
        return _Answer(call, name in STREAMED, name in TASK_ANSWERS, grpc)

    async def _ready(self, address: str, tls: bool, connect_timeout: float) -> Any:
        """The address's channel, connected: `ConnectionError` if it cannot be, `TimeoutError` if not in time."""
        import grpc

        key = (address, tls)
        channel = self._channels.get(key)
        if channel is None:
            options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES), ("grpc.enable_http_proxy", 0)]
            channel = grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(), options) if tls else \
                grpc.aio.insecure_channel(address, options)
            self._channels[key] = channel
            while len(self._channels) > MAX_CHANNELS:
                _, oldest = self._channels.popitem(last=False)
                asyncio.get_running_loop().create_task(oldest.close(_CLOSE_GRACE))
        self._channels.move_to_end(key)
        ready, failed = grpc.ChannelConnectivity.READY, grpc.ChannelConnectivity.TRANSIENT_FAILURE
        async with asyncio.timeout(connect_timeout):
            state = channel.get_state(try_to_connect=True)
            while state is not ready:
                if state is failed:
                    raise ConnectionError(f"cannot connect to {address} over gRPC")
                await channel.wait_for_state_change(state)
                state = channel.get_state(try_to_connect=True)
        return channel

    async def close(self) -> None:
        channels, self._channels = list(self._channels.values()), OrderedDict()
        for channel in channels:
            await channel.close(None)


class _Answer:
    """One call's answer, read as an HTTP response's body: its messages framed, its failure the last frame."""

    __slots__ = ("_call", "_done", "_grpc", "_heard", "_streams", "_task")

    status = 200
    headers = _HEADERS

    def __init__(self, call: Any, streams: bool, task: bool, grpc: Any) -> None:
        self._call = call
        self._streams = streams
        self._task = task
        self._grpc = grpc
        self._done = False
        self._heard = False

    async def read(self) -> bytes:
        if self._done:
            return b""
        grpc = self._grpc
        try:
            message = await (self._call.read() if self._streams else self._call)
        except grpc.aio.AioRpcError as failed:
            self._done = True
            return self._failed(failed.code(), failed.details(), failed.trailing_metadata())
        if message is grpc.aio.EOF:
            self._done = True
            code = await self._call.code()
            if code is grpc.StatusCode.OK:
                return b""
            return self._failed(code, await self._call.details(), await self._call.trailing_metadata())
        self._heard = True
        self._done = not self._streams
        if self._task:
            message = b"\x0a" + varint(len(message)) + message
        return frame(message)

    def _failed(self, code: Any, details: str | None, trailers: Any) -> bytes:
        """The call's status as the answer's last frame; a stream that broke once it began, a broken connection."""
        grpc = self._grpc
        if self._heard and code is grpc.StatusCode.UNAVAILABLE:
            raise ConnectionError(f"the gRPC stream broke: {details or code.name}")
        for key, value in trailers or ():
            if key == "grpc-status-details-bin" and isinstance(value, bytes):
                return status_frame(value)
        from . import proto

        status = proto.loaded().Status(code=code.value[0], message=details or code.name)
        return status_frame(bytes(status.SerializeToString()))

    def release(self) -> None:
        if not self._call.done():
            self._call.cancel()


def _metadata(headers: Mapping[str, str]) -> list[tuple[str, str]]:
    """The request's headers as gRPC metadata: lowercase keys, what HTTP frames itself and gRPC's own left out,
    and values gRPC cannot carry (not printable ASCII) dropped."""
    out = []
    for name, value in headers.items():
        key = name.lower()
        if key in _NOT_METADATA or key.startswith(("grpc-", ":")) or key.endswith("-bin"):
            continue
        if value.isascii() and value.isprintable():
            out.append((key, value))
    return out


def send_request(params: dict[str, Any], streams: bool) -> UpstreamRequest:
    """`SendStreamingMessage` (or `SendMessage`) with the params a JSON-RPC call would carry, as protobuf."""
    from . import proto

    schema = proto.loaded()
    message = schema.SendMessageRequest()
    fill(message, params, schema)
    method = "SendStreamingMessage" if streams else "SendMessage"
    return UpstreamRequest(bytes(message.SerializeToString()), {"a2a-version": "1.0"}, streams=streams,
                           path=SERVICE_PATH + method)


def new_calls() -> GrpcCalls:
    return GrpcCalls()


__all__ = ["GrpcCalls", "missing", "new_calls", "send_request"]
