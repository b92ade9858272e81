"""Which A2A a request speaks: its `A2A-Version` header (or query parameter), `Major.Minor` (a patch number is not
considered). The gateway speaks 1.0 and 0.3; another version is `VersionNotSupportedError` (-32009), and a method
of the other version than the one stated is not found (-32601).

No version stated means 0.3 in the specification; a 1.0 method name, which 0.3 does not have, is served as 1.0
all the same (clients that send no header, curl, earlier gateways' own requests), and so is an HTTP+JSON call (0.3's
is at other paths).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import MethodNotFound, VersionNotSupported
from .wire import BINDING, METHODS, QUERIES, REST, V03

SPOKEN = {"1.0": None, "0.3": V03}
"""Each version the gateway speaks, and its variant name."""
HEADER = "a2a-version"
ASKED_VERSION = "agent_gateway_a2a_version"
"""The key of an HTTP+JSON request read from a GET (`rest.py`) holding its `A2A-Version` query parameter: a client
that can only be given a URL states its version so, as for the card."""

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?")


def stated(asked: Mapping[str, str]) -> str | None:
    """The version a request states, as `Major.Minor` (`1.0.1` is `1.0`), None if none; raises
    `VersionNotSupported` for one the gateway does not speak."""
    value = (asked.get(HEADER) or "").strip()
    if not value:
        return None
    found = _VERSION.fullmatch(value)
    version = f"{int(found[1])}.{int(found[2])}" if found else value
    if version not in SPOKEN:
        raise VersionNotSupported(f"A2A-Version {value[:32]} is not supported: this agent speaks A2A "
                                  f"{' and '.join(SPOKEN)}")
    return version


def check_request(body: dict[str, Any], headers: Mapping[str, str]) -> None:
    """Refuse a request stating a version the gateway does not speak, or calling a method of another version."""
    rest = body.get(BINDING) == REST
    version = stated(headers) or (stated({HEADER: str(body.get(ASKED_VERSION) or "")}) if rest else None)
    if version is None:
        return
    if rest and version != "1.0":  # 0.3's HTTP+JSON has other paths (`/v1/message:send`), not served
        raise VersionNotSupported(f"A2A-Version {version} is not supported on HTTP+JSON: this agent speaks A2A 1.0 "
                                  "there (and 0.3 on JSON-RPC)")
    method = body.get("method")
    belongs = METHODS[method][1] if method in METHODS else QUERIES.get(method, ...) if isinstance(method, str) else ...
    if belongs is not ... and belongs != SPOKEN[version]:
        names = [name for name, (_, v) in METHODS.items() if v == SPOKEN[version]]
        raise MethodNotFound(f"{method} is not an A2A {version} method (A2A-Version: {version}): send "
                             f"{' or '.join(names)}, or state the version the method belongs to")
