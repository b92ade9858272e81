"""The encoding base's shared pieces."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gateway.core.encoding import HOLE, DeltaFrames, sse_frame


@given(st.lists(st.tuples(st.sampled_from(["m1", "m2", "q\"\\\n\x00"]), st.text()), max_size=20))
def test_delta_frames_are_byte_for_byte_what_sse_frame_makes(deltas: list[tuple[str, str]]) -> None:
    frames = DeltaFrames(lambda id: sse_frame({"type": "TEXT_MESSAGE_CONTENT", "messageId": id, "delta": HOLE}))
    for message_id, delta in deltas:
        assert frames.frame(delta, message_id) == sse_frame(
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": delta})


@given(st.text())
def test_delta_frames_without_an_id_field(delta: str) -> None:
    frames = DeltaFrames(lambda _: sse_frame({"type": "text", "content": HOLE}))
    assert frames.frame(delta) == sse_frame({"type": "text", "content": delta})
