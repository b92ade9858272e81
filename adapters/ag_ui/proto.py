"""AG-UI over protobuf (`application/vnd.ag-ui.event+proto`): each event an `ag_ui.Event`, after its length as four
big-endian bytes, as `@ag-ui/proto` 1.0 writes and reads them.

The events are the JSON objects the SSE binding carries, moved to and from the wire as `@ag-ui/proto`'s `encode`
and `decode` move them: the event in the envelope's arm of its type with `type`, `timestamp`, `rawEvent` and
`metadata` in its `baseEvent`; a run's (or a subagent's) outcome as a string beside its interrupts and pending calls
(its interrupt ids); JSON Patch operations as an enum; a tool result's content parts in `contentParts`. The schema is
`proto_schema`, generated from the published package (`scripts/generate-agui-proto`); the messages are built with
the `protobuf` runtime, an optional dependency (the `proto` extra): without it the gateway answers SSE, which every
AG-UI client reads.
"""

from __future__ import annotations

import struct
from functools import cache
from typing import Any

import orjson

from gateway.core.dropped import Dropped

MEDIA_TYPE = "application/vnd.ag-ui.event+proto"
VARIANT = "proto"
"""An AG-UI upstream configured so (`variant: proto`) is asked for protobuf; any upstream's protobuf reply is read."""
_LENGTH = struct.Struct(">I")


class ProtoError(ValueError):
    """Bytes that are not an AG-UI protobuf event."""


@cache
def _schema() -> Any:
    """The message classes, built once from the generated descriptor; None without the `protobuf` runtime."""
    try:
        from google.protobuf import descriptor_pool, json_format, message_factory, struct_pb2
    except ImportError:
        return None
    from .proto_schema import SERIALIZED

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    pool.AddSerializedFile(SERIALIZED)
    return _Schema(message_factory.GetMessageClass(pool.FindMessageTypeByName("ag_ui.Event")), json_format, pool)


class _Schema:
    def __init__(self, event: Any, json_format: Any, pool: Any) -> None:
        self.event = event
        self.json_format = json_format
        event_type = pool.FindEnumTypeByName("ag_ui.EventType")
        self.arm_of_type = {value.name: self.event.DESCRIPTOR.fields_by_name[value.name.lower()]
                            for value in event_type.values}
        """Each event type's arm of the envelope."""
        self.text_content = event_type.values_by_name["TEXT_MESSAGE_CONTENT"].number


def available() -> bool:
    return _schema() is not None


def wants_proto(accept: str | None) -> bool:
    """Whether a client's `Accept` names the protobuf media type, with a quality above zero and no lower than SSE's.
    `@ag-ui/client` asks for it only by name; a wildcard (curl's `*/*`) is answered in SSE, which every client
    reads."""
    if not accept or MEDIA_TYPE not in accept:
        return False
    quality: dict[str, float] = {}
    for item in accept.split(","):
        media, *params = (p.strip() for p in item.split(";"))
        q = 1.0
        for param in params:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        quality[media.lower()] = max(q, quality.get(media.lower(), 0.0))
    proto = quality.get(MEDIA_TYPE, 0.0)
    return proto > 0 and proto >= quality.get("text/event-stream", 0.0)


def frame(message: bytes) -> bytes:
    return _LENGTH.pack(len(message)) + message


# -- events to the wire


def encode(event: dict[str, Any]) -> bytes:
    """One AG-UI event (its JSON object) as a length-prefixed `ag_ui.Event`."""
    schema = _schema()
    kind = event["type"]
    if kind == "TEXT_MESSAGE_CONTENT" and len(event) == 3:  # most of a stream: its fields set directly
        envelope = schema.event()
        content = envelope.text_message_content
        content.base_event.type = schema.text_content
        content.message_id = event["messageId"]
        content.delta = event["delta"]
        return frame(envelope.SerializeToString())
    arm = schema.arm_of_type[kind]
    rest = {k: v for k, v in event.items() if k not in ("type", "timestamp", "rawEvent", "metadata")}
    base: dict[str, Any] = {"type": kind}
    for key in ("timestamp", "rawEvent", "metadata"):
        if key in event:
            base[key] = event[key]
    _to_wire(kind, rest)
    envelope = schema.event()
    _fill(getattr(envelope, arm.name), {"baseEvent": base, **rest}, schema)
    return frame(envelope.SerializeToString())


def _to_wire(kind: str, rest: dict[str, Any]) -> None:
    """What `@ag-ui/proto`'s encode does to an event's JSON before it fills the message."""
    if kind in ("RUN_FINISHED", "SUBAGENT_FINISHED"):
        outcome = rest.pop("outcome", None)
        rest["outcome"] = outcome.get("type", "") if isinstance(outcome, dict) else ""
        if isinstance(outcome, dict):
            for key in ("pendingToolCallIds", "interrupts", "interruptIds"):
                if key in outcome:
                    rest[key] = outcome[key]
    elif kind in ("STATE_DELTA", "ACTIVITY_DELTA"):
        key = "delta" if kind == "STATE_DELTA" else "patch"
        rest[key] = [{**op, "op": str(op.get("op", "")).upper()} for op in rest.get(key) or ()]
    elif kind == "TOOL_CALL_RESULT" and isinstance(rest.get("content"), list):
        rest["contentParts"] = [p for part in rest.pop("content") if (p := _part_to_wire(part)) is not None]
    elif kind == "MESSAGES_SNAPSHOT":
        rest["messages"] = [_message_to_wire(m) for m in rest.get("messages") or ()]


def _part_to_wire(part: Any) -> dict[str, Any] | None:
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "text":
        return {"text": {k: part[k] for k in ("id", "text", "metadata") if k in part}}
    source = part.get("source")
    if kind not in ("image", "audio", "video", "document") or not isinstance(source, dict):
        return None
    arm = source.get("type")
    if arm not in ("data", "url", "file"):
        return None
    wire = {"source": {arm: {k: v for k, v in source.items() if k != "type"}}}
    wire.update({k: part[k] for k in ("id", "metadata") if k in part})
    return {kind: wire}


def _message_to_wire(message: Any) -> dict[str, Any]:
    if not isinstance(message, dict):
        return {}
    wire = dict(message)
    if isinstance(message.get("content"), list):
        wire["contentParts"] = [p for part in wire.pop("content") if (p := _part_to_wire(part)) is not None]
    elif message.get("role") == "activity":
        wire["activityContent"] = wire.pop("content", {})
    return wire


def _fill(message: Any, value: dict[str, Any], schema: _Schema) -> None:
    """A message's fields from a JSON object keyed as the proto's JSON names; keys it has no field for are left
    out, as the TypeScript encoder does."""
    fields = message.DESCRIPTOR.fields_by_camelcase_name
    for key, item in value.items():
        field = fields.get(key)
        if field is None or item is None:
            continue
        if field.message_type is not None and field.message_type.full_name.startswith("google.protobuf."):
            target = getattr(message, field.name)
            if field.is_repeated:
                for element in item:
                    schema.json_format.ParseDict(element, target.add())
            else:
                schema.json_format.ParseDict(item, target)
        elif field.message_type is not None:
            if field.is_repeated:
                for element in item:
                    _fill(getattr(message, field.name).add(), element, schema)
            else:
                _fill(getattr(message, field.name), item, schema)
        elif field.enum_type is not None:
            number = item if isinstance(item, int) else field.enum_type.values_by_name[item].number
            if field.is_repeated:
                getattr(message, field.name).append(number)
            else:
                setattr(message, field.name, number)
        elif field.is_repeated:
            getattr(message, field.name).extend(item)
        else:
            setattr(message, field.name, item)


# -- the wire to events


def decode(data: bytes) -> dict[str, Any]:
    """One `ag_ui.Event` (without its length) as the event's JSON object."""
    schema = _schema()
    envelope = schema.event()
    try:
        envelope.ParseFromString(data)
    except Exception as exc:  # the runtime's DecodeError, whose module varies by implementation
        raise ProtoError(f"not an AG-UI protobuf event: {exc}") from None
    if envelope.HasField("text_message_content"):  # most of a stream: read directly when it is only the delta
        value = envelope.text_message_content
        base = value.base_event
        if base.type == schema.text_content and not value.HasField("subagent_run_id") \
                and not (base.HasField("metadata") or base.HasField("timestamp") or base.HasField("raw_event")):
            return {"type": "TEXT_MESSAGE_CONTENT", "messageId": value.message_id, "delta": value.delta}
    set_fields = envelope.ListFields()
    if len(set_fields) != 1:
        raise ProtoError("an AG-UI protobuf event names no event of this protocol version")
    arm = set_fields[0][0].name
    decoded = _read(getattr(envelope, arm), schema)
    base = decoded.pop("baseEvent", {})
    kind = base.get("type") if isinstance(base, dict) else None
    if not isinstance(kind, str) or kind not in schema.arm_of_type or schema.arm_of_type[kind].name != arm:
        raise ProtoError("an AG-UI protobuf event whose type is not its envelope's")
    event: dict[str, Any] = {"type": kind}
    for key in ("timestamp", "rawEvent", "metadata"):
        if key in base:
            event[key] = base[key]
    event.update(decoded)
    _from_wire(kind, event)
    return event


def _from_wire(kind: str, event: dict[str, Any]) -> None:
    """What `@ag-ui/proto`'s decode does after it read the message."""
    if kind == "RUN_FINISHED":
        outcome = event.pop("outcome", "")
        pending, interrupts = event.pop("pendingToolCallIds", []), event.pop("interrupts", [])
        if outcome:
            event["outcome"] = {"type": outcome, **({"interrupts": interrupts} if interrupts or
                                                    outcome == "interrupt" else {}),
                                **({"pendingToolCallIds": pending} if pending else {})}
        if not event.get("usage"):
            event.pop("usage", None)
    elif kind == "SUBAGENT_FINISHED":
        outcome, ids = event.pop("outcome", ""), event.pop("interruptIds", [])
        if outcome:
            event["outcome"] = {"type": outcome, **({"interruptIds": ids} if ids else {})}
    elif kind == "RUN_ERROR":
        if not event.get("usage"):
            event.pop("usage", None)
    elif kind in ("STATE_DELTA", "ACTIVITY_DELTA"):
        key = "delta" if kind == "STATE_DELTA" else "patch"
        event[key] = [{**op, "op": str(op.get("op", "")).lower()} for op in event.get(key) or ()]
    elif kind == "TOOL_CALL_RESULT":
        parts = event.pop("contentParts", [])
        if "content" not in event:
            event["content"] = [p for part in parts if (p := _part_from_wire(part)) is not None]
    elif kind == "MESSAGES_SNAPSHOT":
        event["messages"] = [_message_from_wire(m) for m in event.get("messages") or ()]


def _part_from_wire(part: dict[str, Any]) -> dict[str, Any] | None:
    for kind, body in part.items():
        if kind == "text":
            return {"type": "text", **body}
        source = body.get("source") or {}
        for arm, value in source.items():
            return {"type": kind, **{k: v for k, v in body.items() if k != "source"},
                    "source": {"type": arm, **value}}
    return None


def _message_from_wire(message: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if k not in ("contentParts", "activityContent")}
    if message.get("role") in ("user", "tool") and "content" not in message:
        out["content"] = [p for part in message.get("contentParts") or () if (p := _part_from_wire(part))]
    if message.get("role") == "activity":
        out["content"] = message.get("activityContent", {})
    if not out.get("toolCalls"):
        out.pop("toolCalls", None)
    return out


def _read(message: Any, schema: _Schema) -> dict[str, Any]:
    """A message as a JSON object keyed as the proto's JSON names: every field it has a value for, and the
    singular scalars without presence at their defaults too, as the TypeScript decoder gives them; repeated fields
    left out when empty."""
    out: dict[str, Any] = {}
    for field in message.DESCRIPTOR.fields:
        name = field.camelcase_name
        value = getattr(message, field.name)
        repeated = field.is_repeated
        if repeated:
            if not value:
                continue
        elif field.has_presence and not message.HasField(field.name):
            continue
        if field.message_type is not None and field.message_type.full_name.startswith("google.protobuf."):
            convert = schema.json_format.MessageToDict
            out[name] = [convert(v) for v in value] if repeated else convert(value)
        elif field.message_type is not None:
            out[name] = [_read(v, schema) for v in value] if repeated else _read(value, schema)
        elif field.enum_type is not None:
            names = field.enum_type.values_by_number
            read = [names[v].name if v in names else str(v) for v in value] if repeated else \
                (names[value].name if value in names else str(value))
            out[name] = read
        else:
            out[name] = list(value) if repeated else value
    return out


class ProtoEncoder:
    """An AG-UI encoder's events as protobuf frames, for a client that asked for them: what the SSE encoder writes,
    each event moved to the wire. A protobuf stream has no comments, so an idle one is sent nothing."""

    __slots__ = ("_sse", "dropped", "headers", "status_code")

    streams = True

    def __init__(self, sse: Any) -> None:
        self._sse = sse
        self.status_code = 200
        self.headers = {"content-type": MEDIA_TYPE}
        self.dropped: dict[Dropped, int] = sse.dropped

    def encode(self, events: list[Any]) -> bytes:
        body = self._sse.encode(events)
        if not body:
            return b""
        return b"".join(encode(orjson.loads(frame[6:])) for frame in body.split(b"\n\n") if frame)

    def keep_alive(self) -> bytes:
        return b""

    def opening(self) -> bytes:
        return b""


class ProtoFramer:
    """Length-prefixed messages out of a byte stream cut anywhere; one past `max_bytes` is refused."""

    __slots__ = ("_buffer", "max_bytes")

    def __init__(self, max_bytes: int) -> None:
        self._buffer = bytearray()
        self.max_bytes = max_bytes

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer
        buffer += chunk
        out = []
        while len(buffer) >= 4:
            (length,) = _LENGTH.unpack_from(buffer)
            if length > self.max_bytes:
                raise ProtoError(f"a protobuf event of {length} bytes, past the {self.max_bytes} an event may be")
            if len(buffer) < 4 + length:
                break
            out.append(bytes(buffer[4:4 + length]))
            del buffer[:4 + length]
        return out

    @property
    def pending(self) -> int:
        return len(self._buffer)


def message_ends(body: bytes) -> list[int]:
    """Where each whole length-prefixed message of `body` ends, as `ProtoFramer` cuts them."""
    ends: list[int] = []
    at = 0
    while at + 4 <= len(body):
        (length,) = _LENGTH.unpack_from(body, at)
        if at + 4 + length > len(body):
            break
        at += 4 + length
        ends.append(at)
    return ends


def decoder_for(content_type: str, max_event_bytes: int) -> Any:
    """A decoder for an upstream's protobuf reply; None for any other (SSE: the dialect's own decoder)."""
    if content_type.partition(";")[0].strip().lower() != MEDIA_TYPE:
        return None
    from .proto_decode import AguiProtoDecoder

    return AguiProtoDecoder(max_event_bytes)
