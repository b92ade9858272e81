"""IP addresses written as text: a host that parses as one is an address, not a name to look up or match."""

from __future__ import annotations

import ipaddress


def ip_address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """`text` as an IPv4 or IPv6 address; None when it is not one (a host name, or nothing)."""
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None
