"""Server-sent events framing: bytes in, frames out; frames in, bytes out.

Parsing follows the WHATWG rules that matter to agent streams: LF, CRLF and CR line ends, multi-line `data:`
joined with LF, comments, an event whose data is empty dispatching nothing (MCP's priming event only sets an id and
`retry`), and the `event:`/`id:`/`retry:` fields: `SSEDecoder` reads past them, for the dialects
that name nothing; `SSEEventDecoder` keeps `event:` and `id:`, for those whose frames are named (LangGraph's stream
modes) and resumed from an id.
It works on bytes and splits only on ASCII line ends, so a UTF-8 character cut across two chunks is whole again
by the time its frame is handed on; JSON decoding validates the UTF-8.

Emitting uses LF only: `@ag-ui/client` splits frames on a literal blank LF line and fails on CRLF.
"""

from __future__ import annotations

DONE = b"data: [DONE]\n\n"
KEEP_ALIVE = b": ping\n\n"

DEFAULT_MAX_FRAME = 16 * 1024 * 1024


class FrameTooLarge(ValueError):
    """A frame grew past the limit without ending: the upstream sent too big an event, or no framing at all."""


class SSEDecoder:
    """Incremental parser. `feed()` returns the `data` of every frame completed by the chunk, but for empty data."""

    __slots__ = ("_buffer", "_max_frame", "_pending_cr", "_scanned")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._buffer = bytearray()
        self._max_frame = max_frame
        self._pending_cr = False
        self._scanned = 0

    def feed(self, chunk: bytes) -> list[bytes]:
        buffer = self._buffer
        if not buffer and not self._pending_cr and chunk.endswith(b"\r\n\r\n"):
            # Fast path: one whole frame with CRLF line ends, as servers on `sse-starlette` write them (the MCP and
            # A2A SDKs'), read without rewriting its line ends first.
            body = _one_crlf_frame(chunk)
            if body is not None:
                return [body] if body else []
        # 13 is "\r"; an int needle skips the substring-search setup a bytes one pays on every chunk
        if self._pending_cr or 13 in chunk:
            chunk = self._lf_only(chunk)
        if not buffer and chunk.endswith(b"\n\n") and chunk.count(b"\n\n") == 1:
            # Fast path: one whole frame per chunk, the usual shape of a paced stream, of one `data: ` line, or of
            # one after the `event: ` line that names it (Open Responses names every event).
            if chunk.startswith(b"data: "):
                body = chunk[6:-2]
                if 10 not in body:  # "\n"
                    return [body] if body else []
            elif chunk.startswith(b"event: "):
                line_end = chunk.find(b"\n")
                if chunk.startswith(b"data: ", line_end + 1):
                    body = chunk[line_end + 7:-2]
                    if 10 not in body:
                        return [body] if body else []
        complete = self._complete(chunk)
        if complete is None:
            return []
        blocks = complete.split(b"\n\n")
        separators = len(blocks) - 1
        if (complete.startswith(b"data: ") and complete.count(b"\n") == 2 * separators
                and complete.count(b"\n\ndata: ") == separators):
            # Fast path: every frame is one `data: ` line (the only line breaks are the separators, and each is
            # followed by `data: `), the shape every agent server writes. Checked in C, sliced in one pass.
            return [body for block in blocks if (body := block[6:])]
        return [data for block in blocks if (data := _frame_data(block)) is not None]

    def idle(self) -> bool:
        """Whether nothing is held between frames: the next byte begins a frame."""
        return not self._buffer and not self._pending_cr

    def feed_blocks(self, chunk: bytes) -> list[bytes]:
        """The whole frames (their lines, LF-separated) completed by this chunk, fields and all."""
        if self._pending_cr or 13 in chunk:
            chunk = self._lf_only(chunk)
        complete = self._complete(chunk)
        if complete is None:
            return []
        return [block for block in complete.split(b"\n\n") if block]

    def flush_blocks(self) -> list[bytes]:
        """The last frame when the stream ends without its blank line."""
        rest = self._rest()
        return [rest] if rest else []

    def flush(self) -> list[bytes]:
        """Frames left when the stream ends: a last frame whose blank line never came still counts."""
        data = _frame_data(self._rest())
        return [] if data is None else [data]

    def _lf_only(self, chunk: bytes) -> bytes:
        """The chunk with every line end made LF. A CR that ends it may be the first half of a CRLF: it waits for
        the next chunk."""
        if self._pending_cr:
            chunk = b"\r" + chunk
            self._pending_cr = False
        if chunk.endswith(b"\r"):
            chunk = chunk[:-1]
            self._pending_cr = True
        return chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

    def _complete(self, chunk: bytes) -> bytes | None:
        """The chunk added to the buffer, and the whole frames the buffer now holds taken out of it (without the
        last one's blank line); None while no frame is whole."""
        buffer = self._buffer
        buffer += chunk
        end = buffer.rfind(b"\n\n", max(self._scanned - 1, 0))
        if end < 0:
            self._scanned = len(buffer)
            if self._scanned > self._max_frame:
                raise FrameTooLarge(f"an event exceeded {self._max_frame} bytes")
            return None
        complete = bytes(buffer[:end])
        del buffer[: end + 2]
        self._scanned = 0
        return complete

    def _rest(self) -> bytes:
        """What the buffer holds when the stream ends (without blank lines at either end); the decoder starts anew."""
        rest = bytes(self._buffer).strip(b"\n")
        self._buffer.clear()
        self._scanned = 0
        self._pending_cr = False
        return rest


def _one_crlf_frame(chunk: bytes) -> bytes | None:
    """The data of a chunk that is one frame of one `data: ` line, maybe after the `event: ` line that names it,
    with CRLF line ends; None for any other chunk."""
    if chunk.startswith(b"data: "):
        start = 6
    elif chunk.startswith(b"event: "):
        line_end = chunk.find(b"\r\n")
        if 10 in chunk[:line_end] or 13 in chunk[:line_end] or not chunk.startswith(b"data: ", line_end + 2):
            return None
        start = line_end + 8
    else:
        return None
    body = chunk[start:-4]
    return None if 10 in body or 13 in body else body


class SSEEvent:
    """One frame with its fields: `event` (empty when unnamed), `data` and the last `id` seen so far."""

    __slots__ = ("data", "event", "id")

    def __init__(self, event: str, data: bytes, id: str | None) -> None:
        self.event = event
        self.data = data
        self.id = id


class SSEEventDecoder:
    """Incremental parser for named frames. `feed()` returns every frame completed by the chunk, with its fields, but
    for those whose data is empty (their `id` still counts)."""

    __slots__ = ("_last_id", "_lines")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self._lines = SSEDecoder(max_frame)
        self._last_id: str | None = None

    @property
    def last_id(self) -> str | None:
        """The last event id the stream gave: where a client that reconnects asks it to go on from."""
        return self._last_id

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        lines = self._lines
        if not lines._buffer and not lines._pending_cr and chunk.endswith(b"\n\n") and 13 not in chunk \
                and chunk.find(b"\n\n") == len(chunk) - 2:
            return self._events([chunk[:-2]])  # one whole frame, the usual read of a paced stream: no buffering
        return self._events(lines.feed_blocks(chunk))

    def flush(self) -> list[SSEEvent]:
        return self._events(self._lines.flush_blocks())

    def _events(self, blocks: list[bytes]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for block in blocks:
            lines = block.split(b"\n")
            if len(lines) == 3:  # the shapes servers write: `id`, `event`, `data` (or `event`, `data`, `id`)
                first, second, third = lines
                if first.startswith(b"id: ") and second.startswith(b"event: ") and third.startswith(b"data: ") \
                        and b"\0" not in first:
                    self._last_id = first[4:].decode("utf-8", "replace")
                    if len(third) > 6:
                        events.append(SSEEvent(_name(second[7:]), third[6:], self._last_id))
                    continue
                if first.startswith(b"event: ") and second.startswith(b"data: ") and third.startswith(b"id: ") \
                        and b"\0" not in third:
                    self._last_id = third[4:].decode("utf-8", "replace")
                    if len(second) > 6:
                        events.append(SSEEvent(_name(first[7:]), second[6:], self._last_id))
                    continue
            event = self._fields(lines)
            if event is not None:
                events.append(event)
        return events

    def _fields(self, lines: list[bytes]) -> SSEEvent | None:
        """A frame of any other shape, field by field as the WHATWG rules read it."""
        event = ""
        data: list[bytes] = []
        for line in lines:
            name, colon, value = line.partition(b":")
            if not colon or not name:
                continue  # a comment, or a line without a field
            if value[:1] == b" ":
                value = value[1:]
            if name == b"data":
                data.append(value)
            elif name == b"event":
                event = value.decode("utf-8", "replace")
            elif name == b"id" and b"\0" not in value:
                self._last_id = value.decode("utf-8", "replace")
        joined = b"\n".join(data)
        return SSEEvent(event, joined, self._last_id) if joined else None


_NAMES: dict[bytes, str] = {}


def _name(raw: bytes) -> str:
    """An event's name as text: the few a stream uses, decoded once."""
    name = _NAMES.get(raw)
    if name is None:
        name = raw.decode("utf-8", "replace")
        if len(_NAMES) < 256:
            _NAMES[raw] = name
    return name


def _frame_data(block: bytes) -> bytes | None:
    if block.startswith(b"data: ") and b"\n" not in block:
        return block[6:] or None
    data: list[bytes] = []
    for line in block.split(b"\n"):
        if line.startswith(b"data"):
            value = line[4:]
            if not value:
                data.append(b"")
            elif value[0] == 0x3A:  # ":"
                data.append(value[2:] if value[1:2] == b" " else value[1:])
            # else: a field whose name only starts with "data" (e.g. "database:"), ignored per spec
    return b"\n".join(data) or None
