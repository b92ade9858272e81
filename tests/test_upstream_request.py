"""What an upstream request holds while its run lasts."""

from __future__ import annotations

import tracemalloc

import orjson

from gateway.core.codec import UpstreamRequest


def test_an_upstream_requests_body_costs_its_own_size_not_the_buffer_orjson_wrote_it_in() -> None:
    """The request lives as long as its run (a call held open, a failover); orjson's output of a few hundred bytes
    sits in 4 KiB."""
    body = {"threadId": "t" * 36, "runId": "r" * 36, "messages": [{"role": "user", "content": "count for me"}]}
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        kept = [UpstreamRequest(orjson.dumps(body)) for _ in range(50)]
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    assert kept[0].body == orjson.dumps(body)
    assert grown / len(kept) < 1024, grown / len(kept)
