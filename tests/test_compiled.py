"""The optional compiled build (scripts/compile, AGENT_GATEWAY_COMPILE=1) does what the Python it is made from does.

Compiled, a module trusts its annotations: a value that contradicts them raises `TypeError` where Python would
pass it on. The gateway's own values keep to them (mypy --strict), but an upstream's do not, so the same odd streams
go through the compiled modules and through their `.py` (tests/compiled_diff.py) and must come out the same.
Skipped when nothing is compiled: the rest of the suite runs whichever build is in place.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers import ROOT

from gateway import compiled

CASES = 4000


def test_the_version_says_which_build_runs() -> None:
    out = subprocess.run([sys.executable, "-m", "gateway", "--version"], capture_output=True, text=True, check=True,
                         cwd=ROOT).stdout
    assert out.startswith("agent-gateway ") and (" codecs compiled with mypyc " in out) == bool(compiled.compiled())


@pytest.mark.skipif(not compiled.compiled(), reason="the codecs are not compiled (scripts/compile)")
def test_odd_upstream_streams_come_out_of_the_compiled_codecs_as_out_of_their_python() -> None:
    def run(*flags: str) -> list[str]:
        done = subprocess.run([sys.executable, str(ROOT / "tests" / "compiled_diff.py"), "1", str(CASES), *flags],
                              capture_output=True, text=True, check=True, cwd=ROOT)
        return done.stdout.splitlines()

    native, pure = run(), run("--pure")
    assert native[0].startswith("codecs compiled with mypyc") and pure[0] == "codecs pure Python"
    assert len(native) > CASES
    differing = [(a, b) for a, b in zip(native[1:], pure[1:], strict=True) if a != b]
    assert differing == [], differing[:3]
