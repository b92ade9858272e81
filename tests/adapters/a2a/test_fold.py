"""A task folded from its stream responses: `Folded`, which holds appended text in pieces, makes the task that
`fold` makes response by response, whatever the responses and whenever the task is read; and a long answer's
chunks are not each joined onto the text before them."""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from adapters.a2a.fold import Folded, fold

_parts = st.lists(st.one_of(
    st.builds(lambda t: {"text": t}, st.text(max_size=3)),
    st.builds(lambda t: {"kind": "text", "text": t}, st.text(max_size=3)),
    st.just({"kind": "data", "data": {"n": 1}}),
    st.builds(lambda t: {"text": t, "metadata": {"m": 1}}, st.text(max_size=3)),
), max_size=2)
_artifact_updates = st.builds(
    lambda artifact_id, parts, append: ("artifact-update", {"artifact": {"artifactId": artifact_id, "parts": parts},
                                                            "append": append}),
    st.sampled_from(["a", "b"]), _parts, st.booleans())
_chunks = st.builds(  # what a streamed answer is made of
    lambda artifact_id, text: ("artifact-update", {"artifact": {"artifactId": artifact_id,
                                                                "parts": [{"kind": "text", "text": text}]},
                                                   "append": True}),
    st.sampled_from(["a", "b"]), st.text(max_size=3))
_others = st.sampled_from([
    ("status-update", {"taskId": "t", "contextId": "c", "status": {"state": "working",
                                                                   "message": {"parts": [{"text": "s"}]}}}),
    ("message", {"role": "agent", "parts": [{"text": "m"}]}),
    ("task", {"id": "t", "status": {"state": "submitted"}}),
])
_steps = st.lists(st.one_of(_chunks, _chunks, _artifact_updates, _others, st.just(("read", {}))), max_size=40)


@given(_steps)
def test_the_task_folded_with_its_text_held_in_pieces_is_the_task_fold_makes(steps: list[tuple[str, Any]]) -> None:
    expected: dict[str, Any] = {}
    folded = Folded({})
    for kind, value in steps:
        if kind == "read":
            assert folded.task() == expected
            continue
        fold(expected, kind, copy.deepcopy(value))
        folded.add(kind, copy.deepcopy(value))
    assert folded.task() == expected


def test_a_long_answers_chunks_are_held_at_about_their_characters() -> None:
    folded = Folded({"id": "t"})
    folded.add("artifact-update", {"artifact": {"artifactId": "a", "parts": [{"kind": "text", "text": ""}]}})
    tracemalloc.start()
    try:
        for k in range(2000):
            folded.add("artifact-update", {"artifact": {"artifactId": "a", "parts": [{"kind": "text",
                                                                                        "text": f"t{k:03} "}]},
                                           "append": True})
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 30_000
    assert folded.task()["artifacts"][0]["parts"][0]["text"] == "".join(f"t{k:03} " for k in range(2000))
