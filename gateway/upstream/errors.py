"""How an upstream call fails. Every failure is one of these, and nothing else escapes a call:

```
HTTPError
 ├── ConnectError            no connection could be made (refused, unresolvable, TLS, proxy)
 │    └── ConnectTimeout     ... within the connect timeout
 ├── ConnectionBroken        the connection closed or failed before the response was whole
 ├── ProtocolError           the bytes are not an HTTP/1.1 response we can read (framing, limits, encoding)
 └── InvalidRequestHead      a header or path the caller passed cannot be written in a request; nothing sent
```
"""

from __future__ import annotations


class HTTPError(Exception):
    """Any failure of an upstream call: connecting, the connection breaking, or an answer that is not HTTP."""


class ConnectError(HTTPError):
    """No connection could be made."""


class ConnectTimeout(ConnectError):
    """No connection could be made within the connect timeout."""


class ConnectionBroken(HTTPError):
    """The connection closed, or failed, before the response was whole."""

    def __init__(self, cause: Exception | None) -> None:
        super().__init__("the upstream closed the connection" if cause is None else f"the connection failed: {cause}")
        self.clean = cause is None


class ProtocolError(HTTPError):
    """The upstream's bytes are not a valid HTTP/1.1 response."""


class InvalidRequestHead(HTTPError, ValueError):
    """The request's head cannot be written as asked: a header with a line break, or a colon in its name, would end
    the head early or add headers nobody set, and a head is Latin-1. Nothing was sent. Still a ValueError, as it was
    before it joined the tree, for callers that catch that."""
