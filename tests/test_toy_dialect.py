"""A sixth dialect is one package plus one registry line: the toy JSON-lines dialect in `tests/toy_dialect/`,
registered by its plugin, joins the property tests, the translation matrix and the gateway's end-to-end pairs
(every client dialect in front of every upstream dialect, the built-in agent speaking each) with no other file
touched. Those test files are run as they are, in a pytest of their own, selecting the cases that name the toy."""

from __future__ import annotations

import os
import subprocess
import sys

from helpers import ROOT

SUITES = ["tests/test_properties.py", "tests/test_translation_matrix.py", "tests/test_proxy.py"]


def test_a_toy_dialect_joins_the_matrix_and_the_property_tests_with_no_other_file_touched() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "toy_dialect.plugin", "-k", "toy", "-p", "no:cacheprovider",
         *SUITES], cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])})
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    passed = int(summary.split(" passed")[0].split()[-1])
    # Pairs with every other dialect both ways, the toy's own round trips, and every recorded stream re-encoded
    # into it and judged.
    assert passed >= 70, summary
