"""A2A 1.0's protobuf messages (`lf.a2a.v1`, the gRPC binding's), built from `proto_schema` with the `protobuf`
runtime in a pool of their own, so that nothing else a process loads (a2a-sdk's generated code, googleapis) can
clash with them. `protobuf` is optional (the `grpc` extra): without it `available()` is false and no gRPC is served.
"""

from __future__ import annotations

from functools import cache
from typing import Any

SERVICE = "lf.a2a.v1.A2AService"
DOMAIN = "a2a-protocol.org"
"""The `ErrorInfo.domain` of A2A's errors."""


class Schema:
    """The message classes, by their names in `lf.a2a.v1` (`schema.Task`) and `google.rpc` (`schema.Status`)."""

    def __init__(self, pool: Any, message_factory: Any, json_format: Any) -> None:
        self.pool = pool
        self.json_format = json_format
        self._factory = message_factory
        self._classes: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        classes = self.__dict__["_classes"]
        found = classes.get(name)
        if found is None:
            for package in ("lf.a2a.v1.", "google.rpc.", "google.protobuf."):
                try:
                    descriptor = self.pool.FindMessageTypeByName(package + name)
                except KeyError:
                    continue
                found = classes[name] = self._factory.GetMessageClass(descriptor)
                break
            else:
                raise AttributeError(name)
        return found

    def enum(self, name: str) -> Any:
        return self.pool.FindEnumTypeByName("lf.a2a.v1." + name)


@cache
def schema() -> Schema | None:
    """The schema, built once; None without the `protobuf` runtime."""
    try:
        from google.protobuf import (
            any_pb2,
            descriptor_pool,
            empty_pb2,
            json_format,
            message_factory,
            struct_pb2,
            timestamp_pb2,
        )
    except ImportError:
        return None
    from .proto_schema import RPC, SERIALIZED

    pool = descriptor_pool.DescriptorPool()
    for known in (any_pb2, empty_pb2, struct_pb2, timestamp_pb2):
        pool.AddSerializedFile(known.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(SERIALIZED)
    pool.AddSerializedFile(RPC)
    return Schema(pool, message_factory, json_format)


def available() -> bool:
    return schema() is not None


def loaded() -> Schema:
    """The schema, for code that runs only when it is `available()`."""
    found = schema()
    if found is None:
        raise RuntimeError("A2A over gRPC needs the protobuf runtime: pip install 'agent-gateway[grpc]'")
    return found


def varint(value: int) -> bytes:
    """A protobuf varint (a field's key, a length), as the hand-written fast paths write them."""
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL = [bytes((n,)) for n in range(0x80)]
