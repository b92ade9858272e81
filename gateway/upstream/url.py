"""An upstream's URL as it goes on the wire, checked once when the configuration loads.

What a person writes in a config is not always what HTTP allows: a space or a non-ASCII letter in the path, an
internationalised host name, a user and password before the host. Each is made into what httpx would send: the path
and query percent-encoded (escapes already there are kept), the host in IDNA (punycode), and the user information
as a Basic `Authorization` header rather than dropped.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import quote, unquote, urlsplit

import idna

_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
_QUERY_SAFE = _PATH_SAFE + "?"
_LONE_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_HOST_NAME = re.compile(r"[A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class UpstreamURL:
    tls: bool
    host: str
    """The name to resolve and to verify TLS against: ASCII (punycode for an internationalised name)."""
    port: int
    host_header: str
    target: str
    """The request target: the path and query, percent-encoded."""
    authorization: str | None
    """`Basic ...` from the URL's user information, if it has any."""

    @classmethod
    def parse(cls, url: str) -> UpstreamURL:
        """Raises ValueError with one line saying what is wrong."""
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ValueError(f"not a valid URL: {exc}") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("must be an http:// or https:// URL with a host")
        tls = parts.scheme == "https"
        host = _ascii_host(parts.hostname)
        port = port or (443 if tls else 80)
        name = f"[{host}]" if ":" in host else host
        host_header = name if parts.port is None else f"{name}:{port}"
        target = _encode(parts.path or "/", _PATH_SAFE) + (f"?{_encode(parts.query, _QUERY_SAFE)}" if parts.query
                                                          else "")
        authorization = None
        if parts.username is not None or parts.password is not None:
            credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
            authorization = "Basic " + base64.b64encode(credentials.encode()).decode()
        return cls(tls, host, port, host_header, target, authorization)


def _ascii_host(host: str) -> str:
    try:
        ipaddress.ip_address(host)
        return host
    except ValueError:
        pass
    if host.isascii():
        if not _HOST_NAME.fullmatch(host):
            raise ValueError(f"host {host!r} is not a valid host name")
        return host.lower()
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except idna.IDNAError as exc:
        raise ValueError(f"host {host!r} is not a valid internationalised name: {exc}") from None


def _encode(text: str, safe: str) -> str:
    return _LONE_PERCENT.sub("%25", quote(text, safe=safe))
