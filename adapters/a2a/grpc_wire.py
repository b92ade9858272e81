"""A2A's stream responses as the gRPC binding carries them: each a protobuf `StreamResponse`, and in the gateway's
own hands (between the route that writes a task and the gRPC listener that sends it, `grpc_server`) after its length
as four big-endian bytes.

A response's JSON object (1.0's spelling) is moved into the message field by field (`fill`), which costs a fraction
of `json_format`'s parse; most of a stream, a text chunk (an artifact update with one text part), is written as
bytes around the text from a prefix made once per message.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from gateway.core import events as canonical
from gateway.core.encoding import EVENT_TYPES
from gateway.core.turn import Turn

from . import proto
from .encode import A2AStreamEncoder
from .proto import varint

MEDIA_TYPE = "application/vnd.a2a.stream-response+proto"
"""What the gRPC listener asks a route's stream in (`Accept`): length-prefixed `StreamResponse` messages."""
_LENGTH = struct.Struct(">I")
_ARMS = {"task": "task", "message": "message", "status-update": "status_update", "artifact-update": "artifact_update"}


def frame(message: bytes) -> bytes:
    return _LENGTH.pack(len(message)) + message


def frames(buffer: bytearray) -> list[bytes]:
    """The whole messages at the start of `buffer`, taken out of it."""
    out = []
    while len(buffer) >= 4:
        (length,) = _LENGTH.unpack_from(buffer)
        if len(buffer) < 4 + length:
            break
        out.append(bytes(buffer[4:4 + length]))
        del buffer[:4 + length]
    return out


def stream_response(kind: str, value: dict[str, Any]) -> bytes:
    """One response (`task`, `status-update`, `artifact-update`, `message`) as a serialized `StreamResponse`."""
    schema = proto.loaded()
    message = schema.StreamResponse()
    fill(getattr(message, _ARMS[kind]), value, schema)
    return bytes(message.SerializeToString())


def fill(message: Any, value: dict[str, Any], schema: proto.Schema) -> None:
    """A message's fields from a JSON object keyed as the proto's JSON names (or its field names, as `json_format`
    reads them); keys it has no field for are left out."""
    descriptor = message.DESCRIPTOR
    by_json, by_name = descriptor.fields_by_camelcase_name, descriptor.fields_by_name
    for key, item in value.items():
        field = by_json.get(key) or by_name.get(key)
        if field is None or item is None:
            continue
        kind = field.message_type
        if kind is not None and kind.full_name == "google.protobuf.Timestamp":
            getattr(message, field.name).FromJsonString(item)
        elif kind is not None and kind.full_name.startswith("google.protobuf."):
            target = getattr(message, field.name)
            if field.is_repeated:
                for element in item:
                    schema.json_format.ParseDict(element, target.add())
            else:
                schema.json_format.ParseDict(item, target)
        elif kind is not None and kind.GetOptions().map_entry:
            getattr(message, field.name).update(item)
        elif kind is not None:
            if field.is_repeated:
                for element in item:
                    if isinstance(element, dict):
                        fill(getattr(message, field.name).add(), element, schema)
            elif isinstance(item, dict):
                fill(getattr(message, field.name), item, schema)
        elif field.enum_type is not None:
            names = field.enum_type.values_by_name
            numbers = [v if isinstance(v, int) else names[v].number if v in names else 0
                       for v in (item if field.is_repeated else [item])]
            if field.is_repeated:
                getattr(message, field.name).extend(numbers)
            else:
                setattr(message, field.name, numbers[0])
        elif field.type == field.TYPE_BYTES:
            setattr(message, field.name, base64.b64decode(item))
        elif field.is_repeated:
            getattr(message, field.name).extend(item)
        else:
            setattr(message, field.name, item)




def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


class TextChunks:
    """A message's chunks after its first, as `frame(stream_response("artifact-update", ...))` writes them: the
    update's fields but the text are the same for every chunk, serialized once (a parser takes fields in any
    order); what comes before the text depends only on its length, and is kept for the lengths chunks have."""

    __slots__ = ("_artifact", "_heads", "_update")

    def __init__(self, update: dict[str, Any]) -> None:
        schema = proto.loaded()
        head = schema.TaskArtifactUpdateEvent()
        fill(head, {k: v for k, v in update.items() if k != "artifact"}, schema)
        artifact = schema.Artifact()
        fill(artifact, {k: v for k, v in update["artifact"].items() if k != "parts"}, schema)
        self._update = bytes(head.SerializeToString())
        self._artifact = bytes(artifact.SerializeToString())
        self._heads: dict[int, bytes] = {}

    def frame(self, text: str) -> bytes:
        data = text.encode()
        head = self._heads.get(len(data))
        if head is None:
            head = self._head(len(data))
        return head + data

    def _head(self, size: int) -> bytes:
        text_field = b"\x0a" + varint(size)  # Part.text = 1
        part_size = len(text_field) + size
        parts_field = b"\x22" + varint(part_size)  # Artifact.parts = 4
        artifact_size = len(self._artifact) + len(parts_field) + part_size
        artifact_field = b"\x1a" + varint(artifact_size)  # TaskArtifactUpdateEvent.artifact = 3
        update_size = len(self._update) + len(artifact_field) + artifact_size
        update_field = b"\x22" + varint(update_size)  # StreamResponse.artifact_update = 4
        head = b"".join((_LENGTH.pack(len(update_field) + update_size), update_field, self._update, artifact_field,
                         self._artifact, parts_field, text_field))
        if size < _KEPT_SIZES:
            self._heads[size] = head
        return head


_KEPT_SIZES = 256
"""Chunks up to this many bytes have their head kept: a model's tokens are a few bytes each."""


def _proto_event(self: A2AProtoStreamEncoder, e: canonical.Event) -> bytes:
    return b"".join([frame(stream_response(kind, value)) for kind, value in self.writer.event(e)])


def _proto_text(self: A2AProtoStreamEncoder, e: canonical.TextDelta) -> bytes:
    """Most of a stream: each chunk after a message's first, from the prefix made at the second."""
    if self.writer.sent.get(e.message_id) and e.metadata is None:
        chunks = self.texts.get(e.message_id)
        if chunks is None:
            chunks = self.texts[e.message_id] = TextChunks(self.writer.updates.text_chunk(e.message_id, "")[1])
        return chunks.frame(e.delta)
    return _proto_event(self, e)


class A2AProtoStreamEncoder(A2AStreamEncoder):
    """`SendStreamingMessage`'s reply for the gRPC listener: what the JSON-RPC stream carries, each response a
    length-prefixed `StreamResponse`. A gRPC stream has no comments: an idle one is sent nothing."""

    __slots__ = ("texts",)

    handlers = {**dict.fromkeys(EVENT_TYPES, _proto_event), canonical.TextDelta: _proto_text}
    HEADERS = {"content-type": MEDIA_TYPE}
    KEEP_ALIVE = b""

    def __init__(self, request: Turn | None = None) -> None:
        super().__init__(request)
        self.texts: dict[str, TextChunks] = {}


def wants_proto(request: Turn | None) -> bool:
    return request is not None and request.accept == MEDIA_TYPE and proto.available()
