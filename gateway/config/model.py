"""What every section of the configuration shares: a key nobody reads is a mistake, and the checks more than one
section makes (a header name, a dialect's name)."""

from __future__ import annotations

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
        raise ValueError(f"Input should be {listed([repr(name) for name in registry.DIALECTS])}")
    return name
