"""`bench/run.py --decompose`'s arithmetic (`bench/decompose.py`): a row's CPU an event split into a delta's part
and a request's part by a fit over the deltas a request."""

from __future__ import annotations

import pytest

from bench.decompose import fit, report


def test_a_fit_over_one_over_n_gives_back_a_delta_s_and_a_request_s_cost() -> None:
    per_delta, per_request = 12.0, 2500.0
    found = fit([(n, per_delta + per_request / n) for n in (100, 200, 400)])
    assert found is not None
    assert found.per_delta == pytest.approx(per_delta)
    assert found.per_request == pytest.approx(per_request)


def test_one_n_measured_fits_nothing() -> None:
    assert fit([(100, 60.0), (100, 62.0)]) is None
    assert fit([]) is None


def test_the_report_gives_the_gateway_s_excess_over_nginx_its_own_fit() -> None:
    measured = {("paced", "nginx", n): [20.0 + 200 / n] for n in (100, 400)}
    measured |= {("paced", "gateway", n): [30.0 + 2200 / n, 40.0 + 2200 / n] for n in (100, 400)}
    text = report(measured, [100, 400], "ag-ui", "ag-kit", 2)
    excess = next(line for line in text.splitlines() if line.startswith("| paced | gateway - nginx |"))
    assert excess.endswith("| 15.0 | 2000 |")  # the medians' excess: 15 µs a delta, 2,000 a request
    warm = next(line for line in text.splitlines() if line.startswith("| warm | gateway |"))
    assert warm == "| warm | gateway | - | - | - | - |"  # nothing measured: no figure made up
