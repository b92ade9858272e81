"""The benchmark's scripted upstream (`bench/upstream.py`): it paces a stream by stamping each delta as it goes out,
so it serves only the dialects whose stream carries each delta's stamp once, and every benchmark run starts it."""

from __future__ import annotations

import pytest

from adapters import registry
from bench.upstream import DIALECTS, UPSTREAMS, NotPaceable, expected, make_plan


@pytest.mark.parametrize("dialect", UPSTREAMS)
def test_every_dialect_the_bench_upstream_serves_has_a_paced_plan_its_clients_can_read(dialect: str) -> None:
    plan = make_plan(dialect, 5)
    assert plan.deltas if plan.streaming else plan.body
    for client in DIALECTS:
        assert expected(dialect, client, 5)["tokens"] >= 5  # each delta's stamp reaches every client


def test_a_dialect_whose_frames_repeat_the_text_so_far_is_a_client_only() -> None:
    """MCP's progress notifications each hold the text so far: no frame is one delta's, so none can be stamped."""
    assert "mcp" in registry.DIALECTS and "mcp" not in UPSTREAMS
    with pytest.raises(NotPaceable):
        make_plan("mcp", 5)
