"""What every section of the configuration shares: a key nobody reads is a mistake, and the checks more than one
section makes (a header name, a dialect's name)."""

from __future__ import annotations

import difflib
import re

from pydantic import BaseModel, ConfigDict

from adapters import registry
from gateway.core.validation import listed

TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
"""An HTTP header name (RFC 9110's token)."""


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


def known_dialect(name: str) -> str:
    if name not in registry.DIALECTS:
        close = difflib.get_close_matches(name, registry.DIALECTS, n=1)
        guess = f"; did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"Input should be {listed([repr(name) for name in registry.DIALECTS])}{guess}")
    return name
