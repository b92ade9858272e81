"""The pieces of a request both OpenAI APIs hold alike: the model an upstream is asked for when nobody names one,
content given by URL (a `data:` URL holds the bytes), a function's parameters, and the request an upstream is sent."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.codec import UpstreamRequest
from gateway.core.turn import ContentPart, Tool, media_kind

DEFAULT_MODEL = "agent-gateway"
"""The model an upstream is asked for when neither the route nor the client names one."""


def from_url(url: str, kind: str) -> ContentPart:
    """A part of `kind` given by URL; a `data:` URL's bytes are the part's, of the kind its media type says."""
    if url.startswith("data:") and ";base64," in url:
        media_type, _, data = url[5:].partition(";base64,")
        return ContentPart(media_kind(media_type), data=data, media_type=media_type)
    return ContentPart(kind, url=url)


def image_url(part: ContentPart) -> str:
    """An image's URL, or its bytes as a `data:` URL."""
    return part.url or f"data:{part.media_type or 'image/png'};base64,{part.data or ''}"


def file_data(part: ContentPart) -> str:
    """A file's bytes as a `data:` URL."""
    return f"data:{part.media_type};base64,{part.data}"


def parameters(tool: Tool) -> dict[str, Any]:
    """A function's parameters as a JSON schema: a function that takes none takes an empty object."""
    return tool.parameters or {"type": "object", "properties": {}}


def upstream_request(body: dict[str, Any]) -> UpstreamRequest:
    """A request to an OpenAI-compatible server: JSON, answered by a stream or, refused, an error object."""
    return UpstreamRequest(orjson.dumps(body), {"content-type": "application/json", "accept": "text/event-stream"},
                           json_reply=True)
