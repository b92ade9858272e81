"""An AG-UI upstream's protobuf reply into canonical events: each length-prefixed event read back as the JSON
object the SSE binding carries, then mapped as that one is (`decode.AguiDecoder`)."""

from __future__ import annotations

from gateway.core import events as canonical
from gateway.core.errors import ErrorCode
from gateway.core.sse import DEFAULT_MAX_FRAME

from .decode import AguiDecoder
from .proto import ProtoError, ProtoFramer, available, decode


class AguiProtoDecoder(AguiDecoder):
    __slots__ = ("_framer",)

    def __init__(self, max_event_bytes: int = DEFAULT_MAX_FRAME) -> None:
        super().__init__(max_event_bytes)
        self._framer = ProtoFramer(max_event_bytes)

    def feed(self, chunk: bytes) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        repair = self.repair
        if repair.done:
            return out
        repair.out = out
        if not available():
            repair.fail("upstream answered in protobuf, and the gateway has no protobuf runtime (install "
                        "agent-gateway[proto])", ErrorCode.UPSTREAM_BAD_EVENT, out)
            return out
        try:
            for message in self._framer.feed(chunk):
                if repair.done:
                    break
                self.on_frame(decode(message), repair)
        except ProtoError as exc:
            repair.fail(f"upstream sent an invalid protobuf event: {exc}", ErrorCode.UPSTREAM_BAD_EVENT, out)
        return out

    def close(self) -> list[canonical.Event]:
        out: list[canonical.Event] = []
        if not self.repair.done and self._framer.pending:
            self.repair.fail("upstream cut a protobuf event short", ErrorCode.UPSTREAM_TRUNCATED, out)
        self.repair.end_of_stream(out)
        return out
