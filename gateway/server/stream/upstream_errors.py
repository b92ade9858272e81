"""What the client is told when the upstream gives no reply to relay, in one place: the send's failures mapped
to the gateway's errors (as httpx maps the layer below it), an answer refused by its status or content type."""

from __future__ import annotations

from gateway.core.codec import UpstreamRequest
from gateway.core.errors import GatewayError, UpstreamError, UpstreamRefused, UpstreamTimeout
from gateway.upstream.http1 import ConnectError, ConnectTimeout, HTTPError, Response

_ERROR_BODY_LIMIT = 64 * 1024


def failure_line(exc: BaseException) -> str:
    """An upstream failure in a line short enough for a client's error message and the log."""
    text = str(exc) or type(exc).__name__
    return text if len(text) < 300 else text[:300] + "..."


def send_failure(exc: HTTPError, connect_timeout: float, debug_errors: bool) -> tuple[GatewayError, str | None]:
    """The error for an upstream that could not be asked, and what the operator's log says of it beyond that."""
    match exc:
        case ConnectTimeout():
            return UpstreamTimeout(f"upstream did not accept a connection within {connect_timeout:g}s"), None
        case ConnectError() if not debug_errors:  # where it failed to connect names an internal address
            return UpstreamError("upstream unreachable"), failure_line(exc)
        case _:
            return UpstreamError(f"upstream unreachable: {failure_line(exc)}"), failure_line(exc)


def refusal_to_read(outbound: UpstreamRequest, status: int, content_type: str, upstream: str
                    ) -> tuple[bool, str | None]:
    """Whether an answer is refused rather than relayed, and why when its status does not say: a failure status
    but for a JSON body its dialect reads (a one-body reply's error), or a 2xx whose body cannot be the dialect's."""
    if status >= 300:
        return (outbound.streams and not outbound.json_reply) or "json" not in content_type, None
    wrong = wrong_content_type(upstream, outbound, content_type)
    return wrong is not None, wrong


async def refused(response: Response, wrong: str | None, debug_errors: bool) -> tuple[UpstreamRefused, str]:
    """A 502 that names the upstream's status, and the detail for the operator's log. Its body, which may hold
    secrets, goes to the log, and to the client only with `debug_errors`."""
    body = b""
    try:
        while len(body) < _ERROR_BODY_LIMIT and (chunk := await response.read()):
            body += chunk
    except HTTPError:
        pass  # what came before the break is what there is to show
    shown = body[:2000].decode("utf-8", "replace").strip()
    detail = f"HTTP {response.status}: {shown}" if shown else f"HTTP {response.status}"
    details = [{"status": response.status, "body": shown}] if debug_errors else []
    return UpstreamRefused(response.status, wrong, details), detail


def wrong_content_type(upstream: str, outbound: UpstreamRequest, content_type: str) -> str | None:
    """Why a 2xx body cannot be what the upstream's dialect sends, or None. Only what is surely not a run is
    refused: an HTML page (a misrouted proxy or login wall), or JSON where an event stream belongs (an error body
    sent as 200) unless the dialect reads one there. No content type, or text/plain (older Vercel data streams),
    is read as the dialect."""
    media = content_type.partition(";")[0].strip().lower()
    json_refused = outbound.streams and not outbound.json_reply
    if media in ("text/html", "application/xhtml+xml") or (json_refused and media == "application/json"):
        expected = "text/event-stream" if outbound.streams else "application/json"
        return f"content-type {media}, not the {expected} of {upstream}"
    return None
