"""Request ids: the client's `X-Request-Id` when it is one worth keeping, else a new one."""

from __future__ import annotations

import re

from starlette.datastructures import Headers

from gateway.core.ids import new_id

REQUEST_ID = re.compile(r"[A-Za-z0-9._:/+=-]{1,128}")
"""A client's `X-Request-Id` that is kept: echoed, logged and sent upstream, so only a short, plain one."""


def request_id_of(headers: Headers) -> str:
    """The client's `X-Request-Id` when short and plain, else a new one."""
    request_id = headers.get("x-request-id", "")
    return request_id if REQUEST_ID.fullmatch(request_id) else new_id("req")
