"""An A2A agent's gRPC stream into canonical events: each `StreamResponse` (as the gateway's gRPC calls hand it on,
`grpc_calls`: length-prefixed, the call's final status last when it failed) read as the JSON object the other
bindings carry, then mapped as that one is (`decode.A2ADecoder`). A text chunk of an artifact already being
written, most of a stream, is read off the message directly.

The call's status, when it is not OK, is a frame whose length has its top bit set, holding a `google.rpc.Status`:
its `ErrorInfo` reason is the run's error code, as a JSON-RPC error's is.
"""

from __future__ import annotations

import struct
from typing import Any

from gateway.core import events as canonical
from gateway.core.codec import UpstreamRequest
from gateway.core.decoding import str_or
from gateway.core.errors import ErrorCode
from gateway.core.sse import DEFAULT_MAX_FRAME

from . import proto
from .decode import A2ADecoder
from .proto import varint

SERVICE_PATH = "/" + proto.SERVICE + "/"
STATUS_FRAME = 0x8000_0000
"""The top bit of a frame's length: the frame is the call's final status."""
_LENGTH = struct.Struct(">I")
_CODES = ("OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
          "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
          "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED")
_ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"
_WELL_KNOWN = "google.protobuf."


def status_frame(status: bytes) -> bytes:
    """A call's final status (a serialized `google.rpc.Status`) as the frame that ends its answer."""
    return _LENGTH.pack(STATUS_FRAME | len(status)) + status


def rpc_request(method: str, task_id: str, *, streams: bool) -> UpstreamRequest:
    """A call about a task (`CancelTaskRequest`, `GetTaskRequest`, `SubscribeToTaskRequest`: the id is field 2 of
    each), its tenant added by the call."""
    data = task_id.encode()
    body = b"\x12" + varint(len(data)) + data
    return UpstreamRequest(body, {"a2a-version": "1.0"}, streams=streams, path=SERVICE_PATH + method)


class _Chunks:
    """The bytes of one artifact's text chunks around their text, learnt from chunks read whole: what comes after
    the text is the same for every chunk, what comes before it the same for chunks of the same size (the lengths of
    the messages that hold it). A chunk that has both is that chunk with other text, read without a parse."""

    __slots__ = ("artifact_id", "heads", "message_id", "tail")

    def __init__(self, artifact_id: str, message_id: str, tail: bytes) -> None:
        self.artifact_id = artifact_id
        self.message_id = message_id
        self.tail = tail
        self.heads: dict[int, bytes] = {}
        """By the message's size: its bytes before the text."""


_KEPT_SIZES = 256


class A2AProtoDecoder(A2ADecoder):
    __slots__ = ("_buffer", "_chunks", "_max_event_bytes", "_schema")

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._buffer = b""
        self._max_event_bytes = max_event_bytes
        self._schema = proto.schema()
        self._chunks: _Chunks | None = None

    def task_call(self, method: str, task_id: str, *, streams: bool, accept: str | None = None,
                  json_reply: bool = False) -> UpstreamRequest:
        return rpc_request(method, task_id, streams=streams)

    def restart(self) -> None:
        super().restart()
        self._buffer = b""
        self._chunks = None

    def reattach_request(self, broke: bool = True) -> UpstreamRequest | None:
        request = super().reattach_request(broke)
        self._whole_task = False  # GetTask's task comes as the StreamResponse holding it (`grpc_calls`)
        return request

    def feed(self, chunk: bytes) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        repair = self.repair
        if repair.done:
            return out
        repair.out = out
        if self._schema is None:
            repair.fail("upstream answered in protobuf, and the gateway has no protobuf runtime (install "
                        "agent-gateway[grpc])", ErrorCode.UPSTREAM_BAD_EVENT, out)
            return out
        data = self._buffer + chunk if self._buffer else chunk
        end, at = len(data), 0
        while end - at >= 4 and not repair.done:
            (length,) = _LENGTH.unpack_from(data, at)
            size = length & ~STATUS_FRAME
            if size > self._max_event_bytes:
                repair.fail(f"upstream sent an oversized event: {size} bytes, past the {self._max_event_bytes} an "
                            "event may be", ErrorCode.UPSTREAM_EVENT_TOO_LARGE, out)
                break
            if end - at < 4 + size:
                break
            message = data[at + 4:at + 4 + size]
            at += 4 + size
            if length & STATUS_FRAME:
                self._status_frame(message, out)
            elif not self._known_chunk(message):
                self._message(message, out)
        self._buffer = data[at:] if at < end else b""
        return out

    def close(self) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        repair = self.repair
        repair.out = out
        if not repair.done:
            if self._buffer:
                repair.fail("upstream cut a protobuf message short", ErrorCode.UPSTREAM_TRUNCATED, out)
            else:
                self.on_end(repair)
        repair.end_of_stream(out)
        return out

    def _known_chunk(self, data: bytes) -> bool:
        """A text chunk of the artifact being written, known by its bytes around the text (`_Chunks`): its text
        added."""
        chunks = self._chunks
        if chunks is None:
            return False
        head = chunks.heads.get(len(data))
        tail = chunks.tail
        if head is None or not data.startswith(head) or not data.endswith(tail) or self._attempts or \
                self._open_text.get(chunks.artifact_id) != chunks.message_id:
            return False
        try:
            text = data[len(head):len(data) - len(tail)].decode()
        except UnicodeDecodeError:
            return False
        self.repair.append(canonical.TextDelta(chunks.message_id, text))
        self._said[chunks.artifact_id].append(text)
        return True

    def _message(self, data: bytes, out: list[canonical.Event]) -> None:
        schema = self._schema
        assert schema is not None
        try:
            response = schema.StreamResponse.FromString(data)
        except Exception:  # protobuf's DecodeError, whichever runtime
            self.repair.fail("upstream sent a message that is not a StreamResponse", ErrorCode.UPSTREAM_BAD_EVENT,
                             out)
            return
        kind = response.WhichOneof("payload")
        if kind == "artifact_update" and self._text_chunk(response.artifact_update):
            self._learn(data, response)
            return
        if kind is None:
            self.on_frame({}, self.repair)
            return
        self.on_frame({_ARMS[kind]: _read(getattr(response, kind), schema)}, self.repair)

    def _learn(self, data: bytes, response: Any) -> None:
        """Keep the bytes around a text chunk's text, read whole, for the next chunks of its size: checked by
        reading the same bytes around other text, which must be the same message but for its text."""
        schema = self._schema
        assert schema is not None
        artifact = response.artifact_update.artifact
        artifact_id, text = artifact.artifact_id, artifact.parts[0].text
        size = len(text.encode())
        chunks = self._chunks
        if chunks is None or chunks.artifact_id != artifact_id or len(chunks.heads) >= _KEPT_SIZES:
            tail_at = data.rfind(text.encode()) + size
            if tail_at < size:
                return
            chunks = _Chunks(artifact_id, self._open_text[artifact_id], data[tail_at:])
        cut = len(data) - len(chunks.tail)
        if not data.endswith(chunks.tail) or cut < size:
            return
        head = data[:cut - size]
        other = ("b" if text[:1] == "a" else "a") * size
        artifact.parts[0].text = other
        try:
            same = schema.StreamResponse.FromString(head + other.encode() + chunks.tail) == response
        except Exception:
            same = False
        if same:
            chunks.heads[len(data)] = head
            self._chunks = chunks

    def _text_chunk(self, update: Any) -> bool:
        """An update of this task's text artifact already open, of one text part and not its last chunk: its text
        added, nothing else read (`steady_text` for a JSON frame)."""
        if not update.append or update.last_chunk or self._attempts or self._context_id is None:
            return False
        artifact = update.artifact
        parts = artifact.parts
        if len(parts) != 1 or parts[0].WhichOneof("content") != "text":
            return False
        message_id = self._open_text.get(artifact.artifact_id)
        task_id, context_id = update.task_id, update.context_id
        if message_id is None or (task_id and task_id != self._task_id) or \
                (context_id and context_id != self._context_id):
            return False
        text = parts[0].text
        if text:
            self.repair.append(canonical.TextDelta(message_id, text))
            self._said[artifact.artifact_id].append(text)
        return True

    def _status_frame(self, data: bytes, out: list[canonical.Event]) -> None:
        """The call's failure: the run's error, unless it answered a re-attach (the next is tried)."""
        if self._attempts:
            return
        schema = self._schema
        assert schema is not None
        try:
            status = schema.Status.FromString(data)
        except Exception:
            status = schema.Status(code=2, message="upstream's call failed")
        reason = ""
        for detail in status.details:
            if detail.type_url == _ERROR_INFO:
                reason = schema.ErrorInfo.FromString(detail.value).reason
                break
        code = _CODES[status.code] if 0 <= status.code < len(_CODES) else str(status.code)
        message = str_or(status.message, "upstream error")
        self.repair.append(canonical.RunError(f"{message} (gRPC {code})",
                                              code=reason.lower() or ErrorCode.UPSTREAM_ERROR))


_ARMS = {"task": "task", "message": "message", "status_update": "statusUpdate", "artifact_update": "artifactUpdate"}


def _read(message: Any, schema: proto.Schema) -> dict[str, Any]:
    """A message as its JSON object, keyed by the proto's JSON names, as `json_format` writes it (fields at their
    defaults left out), but for the well-known types read by hand where the decoder reads them."""
    out: dict[str, Any] = {}
    for field, value in message.ListFields():
        kind = field.message_type
        if kind is not None and kind.full_name.startswith(_WELL_KNOWN):
            if kind.full_name == "google.protobuf.Timestamp":
                out[field.camelcase_name] = value.ToJsonString()
            else:
                convert = schema.json_format.MessageToDict
                out[field.camelcase_name] = [convert(v) for v in value] if field.is_repeated else convert(value)
        elif kind is not None and kind.GetOptions().map_entry:
            out[field.camelcase_name] = dict(value)
        elif kind is not None:
            out[field.camelcase_name] = [_read(v, schema) for v in value] if field.is_repeated else \
                _read(value, schema)
        elif field.enum_type is not None:
            names = field.enum_type.values_by_number
            out[field.camelcase_name] = [names[v].name if v in names else v for v in value] if field.is_repeated \
                else (names[value].name if value in names else value)
        elif field.type == field.TYPE_BYTES:
            import base64

            out[field.camelcase_name] = base64.b64encode(value).decode()
        else:
            out[field.camelcase_name] = list(value) if field.is_repeated else value
    return out

