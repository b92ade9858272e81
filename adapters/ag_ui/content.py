"""AG-UI content parts (a user message's, a tool result's): text, or media from inline data, a URL or a file
uploaded to a provider beforehand; and the `binary` part clients before 1.0 still send."""

from __future__ import annotations

from typing import Any

from gateway.core.codec import drop_none
from gateway.core.decoding import str_at
from gateway.core.turn import ContentPart, media_kind

MEDIA = frozenset({"image", "audio", "video", "document"})


def part_from_agui(part: Any) -> ContentPart | None:
    """One part as an upstream or a client sent it; None for one that is not a part."""
    if not isinstance(part, dict):
        return None
    kind = part.get("type")
    if kind == "text":
        text = part.get("text")
        return ContentPart("text", text=text) if isinstance(text, str) else None
    if kind == "binary":
        mime = str_at(part, "mimeType")
        return ContentPart(media_kind(mime), url=str_at(part, "url"), data=str_at(part, "data"), media_type=mime,
                           filename=str_at(part, "filename"))
    source = part.get("source")
    if kind not in MEDIA or not isinstance(source, dict) or not isinstance(source.get("value"), str):
        return None
    value, mime = source["value"], str_at(source, "mimeType")
    if source.get("type") == "data":
        return ContentPart(kind, data=value, media_type=mime)
    if source.get("type") == "file":
        return ContentPart(kind, media_type=mime, file_id=value, provider=str_at(source, "provider"))
    return ContentPart(kind, url=value, media_type=mime)


def parts_from_agui(parts: list[Any]) -> list[ContentPart]:
    return [p for part in parts if (p := part_from_agui(part)) is not None]


def part_to_agui(part: ContentPart) -> dict[str, Any] | None:
    if part.type == "text":
        return {"type": "text", "text": part.text or ""}
    kind = part.type if part.type in MEDIA else "document"
    if part.data is not None:
        source = drop_none({"type": "data", "value": part.data, "mimeType": part.media_type or
                            "application/octet-stream"})
    elif part.url is not None:
        source = drop_none({"type": "url", "value": part.url, "mimeType": part.media_type})
    elif part.file_id is not None:
        source = drop_none({"type": "file", "value": part.file_id, "provider": part.provider,
                            "mimeType": part.media_type})
    else:
        return None
    return {"type": kind, "source": source}


def content_to_agui(content: str | list[ContentPart] | None) -> str | list[dict[str, Any]]:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return [p for part in content if (p := part_to_agui(part)) is not None]
