from __future__ import annotations

import pytest

from gateway.core.sse import DONE, FrameTooLarge, SSEDecoder, SSEEventDecoder


def frames(*chunks: bytes) -> list[bytes]:
    decoder = SSEDecoder()
    out: list[bytes] = []
    for chunk in chunks:
        out += decoder.feed(chunk)
    return out + decoder.flush()


def test_lf_crlf_and_cr_line_ends_give_the_same_frames() -> None:
    expected = [b'{"a":1}', b'{"b":2}']
    assert frames(b'data: {"a":1}\n\ndata: {"b":2}\n\n') == expected
    assert frames(b'data: {"a":1}\r\n\r\ndata: {"b":2}\r\n\r\n') == expected
    assert frames(b'data: {"a":1}\r\rdata: {"b":2}\r\r') == expected


def test_crlf_split_between_chunks_is_one_line_end() -> None:
    assert frames(b'data: {"a":1}\r', b"\n\r", b'\ndata: {"b":2}\r\n\r\n') == [b'{"a":1}', b'{"b":2}']


def test_multi_line_data_is_joined_with_lf() -> None:
    assert frames(b'data: {"a":\ndata: 1}\n\n') == [b'{"a":\n1}']


def test_comments_and_other_fields_are_read_past() -> None:
    stream = b": keep-alive\n\nevent: message\nid: 7\nretry: 100\ndata: x\n\n: ping\n\n"
    assert frames(stream) == [b"x"]


def test_no_space_or_a_tab_after_data_colon() -> None:
    assert frames(b"data:x\n\n") == [b"x"]
    # AG-Kit's document shows `data:\t{...}\t`: one space is stripped per spec, a tab stays (JSON allows it).
    assert frames(b'data:\t{"a":1}\t\n\n') == [b'\t{"a":1}\t']


def test_done_is_a_frame_like_any_other() -> None:
    assert frames(DONE) == [b"[DONE]"]


def test_utf8_character_split_across_chunks_is_whole_in_its_frame() -> None:
    payload = "data: {\"t\":\"21°C ☀\"}\n\n".encode()
    cut = payload.index("°".encode()) + 1
    assert frames(payload[:cut], payload[cut:]) == ['{"t":"21°C ☀"}'.encode()]


def test_last_frame_without_blank_line_counts_at_end_of_stream() -> None:
    assert frames(b"data: a\n\ndata: b") == [b"a", b"b"]


def test_field_that_only_starts_with_data_is_ignored() -> None:
    assert frames(b"database: x\ndata: y\n\n") == [b"y"]


def test_frame_over_the_limit_raises() -> None:
    decoder = SSEDecoder(max_frame=100)
    decoder.feed(b"data: " + b"x" * 60)
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"x" * 60)


@pytest.mark.parametrize(("chunk", "frames"), [
    (b'data: {"t":"data: x"}\n\n: comment\n\ndata: 2\n\n', [b'{"t":"data: x"}', b"2"]),
    (b"data: 1\n\ndata:2\n\n", [b"1", b"2"]),
    (b"data: a\ndata: b\n\ndata: c\n\n", [b"a\nb", b"c"]),
    (b"data: a\n\n\ndata: b\n\n", [b"a", b"b"]),
    (b"data: 1\n\nevent: x\ndata: 2\n\n", [b"1", b"2"]),
    (b"data: \n\ndata: 3\n\n", [b"3"]),
])
def test_many_frames_in_one_chunk_read_the_same_as_one_by_one(chunk: bytes, frames: list[bytes]) -> None:
    """Whole chunks of single-line `data:` frames take a fast path; anything else in them must not fool it."""
    assert SSEDecoder().feed(chunk) == frames
    one_by_one = SSEDecoder()
    assert [frame for byte in range(len(chunk)) for frame in one_by_one.feed(chunk[byte:byte + 1])] == frames


@pytest.mark.parametrize(("chunk", "frames"), [
    (b'event: response.output_text.delta\ndata: {"d":"x"}\n\n', [b'{"d":"x"}']),
    (b"event: x\ndata: a\ndata: b\n\n", [b"a\nb"]),
    (b"event: x\nid: 3\ndata: a\n\n", [b"a"]),
    (b"event: x\n\n", []),
    (b"event: x\ndata:a\n\n", [b"a"]),
    (b"event: x\r\ndata: a\r\n\r\n", [b"a"]),
    (b"event: data: x\ndata: a\n\n", [b"a"]),
])
def test_a_whole_frame_named_by_its_event_line_reads_the_same_as_byte_by_byte(chunk: bytes, frames: list[bytes]
                                                                               ) -> None:
    """A chunk of one frame after its `event:` line takes a fast path (Open Responses' streams): only that shape."""
    assert SSEDecoder().feed(chunk) == frames
    one_by_one = SSEDecoder()
    assert [frame for byte in range(len(chunk)) for frame in one_by_one.feed(chunk[byte:byte + 1])] == frames


@pytest.mark.parametrize(("chunk", "frames"), [
    (b'event: message\r\ndata: {"jsonrpc":"2.0"}\r\n\r\n', [b'{"jsonrpc":"2.0"}']),
    (b"data: a\r\n\r\n", [b"a"]),
    (b"data: \r\n\r\n", []),
    (b"data: a\r\n\r\ndata: b\r\n\r\n", [b"a", b"b"]),
    (b"data: a\r\ndata: b\r\n\r\n", [b"a\nb"]),
    (b"data: a\rb\r\n\r\n", [b"a"]),
    (b"event: x\r\nid: 3\r\ndata: a\r\n\r\n", [b"a"]),
    (b"event: x\ry\r\ndata: a\r\n\r\n", [b"a"]),
    (b"event: x\r\n\r\n", []),
    (b"event: x\r\ndata:a\r\n\r\n", [b"a"]),
    (b"data: a\n\r\n\r\n", [b"a"]),
])
def test_a_whole_crlf_frame_reads_the_same_as_byte_by_byte(chunk: bytes, frames: list[bytes]) -> None:
    """A chunk of one frame with CRLF line ends takes a fast path (the MCP SDK's servers): only that shape."""
    assert SSEDecoder().feed(chunk) == frames
    one_by_one = SSEDecoder()
    assert [frame for byte in range(len(chunk)) for frame in one_by_one.feed(chunk[byte:byte + 1])] == frames


@pytest.mark.parametrize("chunk", [
    b"data: \n\n", b"data:\n\n", b"data: \r\n\r\n", b"event: message\r\ndata: \r\n\r\n", b"event: x\ndata: \n\n",
    b"id: 7\nretry: 1000\ndata: \n\n", b"id: 7\r\ndata:\r\n\r\n",
])
def test_an_event_with_empty_data_dispatches_nothing(chunk: bytes) -> None:
    """The WHATWG rule: a frame whose data buffer is empty is not an event (MCP's priming event only sets an id and
    `retry`); whole, split byte by byte, or followed by another frame."""
    assert SSEDecoder().feed(chunk) == []
    one_by_one = SSEDecoder()
    assert [frame for byte in range(len(chunk)) for frame in one_by_one.feed(chunk[byte:byte + 1])] == []
    assert SSEDecoder().feed(chunk + b"data: 1\n\n") == [b"1"]
    named = SSEEventDecoder()
    assert named.feed(chunk) == [] and named.flush() == []


def test_an_empty_event_s_id_is_still_where_a_client_resumes_from() -> None:
    decoder = SSEEventDecoder()
    assert decoder.feed(b"id: 1\nevent: x\ndata: {}\n\n")[0].id == "1"
    assert decoder.feed(b"id: 2\nevent: message\ndata: \n\n") == []
    assert decoder.last_id == "2"
    assert decoder.feed(b"id: 3\r\ndata:\r\nretry: 5\r\n\r\n") == []
    assert decoder.last_id == "3"


def test_two_empty_data_lines_are_one_line_break_not_nothing() -> None:
    assert SSEDecoder().feed(b"data:\ndata:\n\n") == [b"\n"]
