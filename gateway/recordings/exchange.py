"""The recording format: one exchange a line of JSON (JSON Lines), a file holding one conversation or a log of many.

```
{"format": "agent-gateway-recording/1", "id", "recorded_at", "route", "conversation", "key_id", "outcome",
 "error", "mapping", "truncated",
 "client":            {"dialect", "method", "path", "headers", "body"},
 "upstream":          {"dialect", "variant", "url", "path", "headers", "body", "sent_at", "discovery"},
 "upstream_response": {"status", "headers", "at", "frames": [[at, bytes], ...]},
 "client_response":   {"status", "headers", "frames": [[at, bytes], ...]},
 "attempts":          [{"upstream", "dialect", "url", "reason", "error", "status", "began", "ended"}, ...]}
```

`attempts` is there only when the run moved between a route's upstreams: those that failed it before their reply, and
why (`upstream` and `upstream_response` are the one that answered, or the last asked when none did). Replaying
ignores it.

Times are seconds from the client's request reaching the gateway. Bytes are a string when they are UTF-8, else
`{"base64": ...}`. Credentials never reach a recording: the headers that carry them, and those a route adds for
its upstream (`upstream.headers`), are left out when the exchange is captured (`safe_headers`); in the JSON of both
requests and of a one-body answer to the client, the value of each field named for one is `[redacted]`
(`safe_body`: an A2A push config's `token` and `credentials`). The upstream's replies are kept as they came, as
replaying needs them, and so are the client's SSE pieces.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import orjson

FORMAT = "agent-gateway-recording/1"

CREDENTIAL_HEADERS = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "x-auth-token",
})
_SECRET_WORDS = ("key", "token", "secret", "auth", "session", "password", "credential", "signature")
SECRET_FIELD_ENDINGS = (
    "token", "secret", "secrets", "password", "passwords", "passwd", "credential", "credentials", "authorization",
    "cookie", "cookies", "apikey", "apikeys", "privatekey", "secretkey", "accesskey", "signingkey",
)
"""How the name of a JSON field that holds a credential ends, lower-case without `-` or `_` (`accessToken`,
`client_secret`, `X-API-Key`), as error trackers' scrubbers name them; a field named `auth` is one too. Narrower
than the words a header's name is matched by (`_SECRET_WORDS`): a body's names are many, and `input_tokens`,
`max_tokens` or `author` are not secrets."""
REDACTED = "[redacted]"
MAX_LINE_BYTES = 256 * 1024 * 1024
"""The longest line a recording is read with: past it the file is refused rather than read into memory."""


class RecordingError(ValueError):
    """A file that is not a recording, or a broken one: the message names the file and line."""


def safe_headers(headers: Iterable[tuple[str, str]], configured: Iterable[str] = ()) -> dict[str, str]:
    """Headers as a recording or the inspector may keep them: those that carry credentials, and those the route's
    configuration adds (`configured`, lower-case), left out; a value whose name sounds secret, redacted."""
    dropped = CREDENTIAL_HEADERS | set(configured)
    kept: dict[str, str] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in dropped:
            continue
        kept[lowered] = REDACTED if any(word in lowered for word in _SECRET_WORDS) else value
    return kept


def safe_body(data: bytes) -> bytes:
    """A JSON body as a recording or the inspector may keep it: the value of each field whose name says it holds a
    credential (`SECRET_FIELD_ENDINGS`) is `REDACTED`, its shape kept. Anything else, or a body without such a
    field, is kept byte for byte."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return data
    if not _redacted(value):
        return data
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError:  # nested deeper than orjson writes (no route takes such a body): redacted whole
        return orjson.dumps(REDACTED)


def _secret_field(name: str) -> bool:
    normalized = name.lower().replace("-", "").replace("_", "")
    return normalized.endswith(SECRET_FIELD_ENDINGS) or normalized == "auth"


def _redacted(value: Any) -> bool:
    """Redact `value`'s credentials in place; whether it held any. Iterative: a client's body may nest as deep as
    the parser goes."""
    found = False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if child is not None and child != "" and _secret_field(key):
                    item[key] = REDACTED
                    found = True
                elif isinstance(child, dict | list):
                    stack.append(child)
        elif isinstance(item, list):
            stack.extend(child for child in item if isinstance(child, dict | list))
    return found


def safe_url(url: str) -> str:
    """A URL without its user information and query, either of which may hold a secret."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def wire(data: bytes) -> str | dict[str, str]:
    """Bytes as a recording holds them."""
    try:
        return data.decode()
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode()}


def unwire(value: Any) -> bytes:
    """Bytes back from a recording."""
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, dict) and isinstance(value.get("base64"), str):
        return base64.b64decode(value["base64"])
    raise ValueError("expected a string, or {\"base64\": ...}")


@dataclass(frozen=True, slots=True)
class Frames:
    """One side's response as recorded: its head, and each piece with when it came."""

    status: int
    headers: Mapping[str, str]
    frames: tuple[tuple[float, bytes], ...]
    at: float = 0.0
    """When the head came (the upstream's side)."""

    @property
    def body(self) -> bytes:
        return b"".join(data for _, data in self.frames)


@dataclass(frozen=True, slots=True)
class Recorded:
    """One exchange read back from a recording."""

    raw: Mapping[str, Any]
    where: str
    """The file and line it was read from, for messages."""

    @property
    def upstream_dialect(self) -> str:
        return str(self.raw["upstream"]["dialect"])

    @property
    def client_dialect(self) -> str:
        return str(self.raw["client"]["dialect"])

    @property
    def upstream_body(self) -> bytes:
        return unwire(self.raw["upstream"]["body"])

    @property
    def client_body(self) -> bytes:
        return unwire(self.raw["client"]["body"])

    @property
    def sent_at(self) -> float:
        return float(self.raw["upstream"].get("sent_at") or 0.0)

    @property
    def upstream_response(self) -> Frames:
        return _frames(self.raw["upstream_response"])

    @property
    def client_response(self) -> Frames:
        return _frames(self.raw["client_response"])


def _frames(side: Mapping[str, Any]) -> Frames:
    return Frames(int(side["status"]), dict(side.get("headers") or {}),
                  tuple((float(at), unwire(data)) for at, data in side.get("frames") or ()),
                  float(side.get("at") or 0.0))


def dumps(exchange: Mapping[str, Any]) -> bytes:
    """One exchange as a line of a recording."""
    return orjson.dumps(exchange) + b"\n"


def read(paths: Iterable[str | Path]) -> list[Recorded]:
    """Every exchange of the recordings at `paths`, in order; a `RecordingError` naming the file and line for
    anything that is not one."""
    found: list[Recorded] = []
    for path in paths:
        found += _read_one(Path(path))
    return found


def _read_one(path: Path) -> Iterator[Recorded]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise RecordingError(f"{path}: cannot read it: {exc.strerror}") from None
    with handle:
        number = 0
        for number, line in enumerate(handle, 1):
            if len(line) > MAX_LINE_BYTES:
                raise RecordingError(f"{path}:{number}: a line longer than {MAX_LINE_BYTES} bytes")
            if not line.strip():
                continue
            yield parse(line, f"{path}:{number}")
        if number == 0:
            raise RecordingError(f"{path}: the file is empty, not a recording")


def parse(line: bytes, where: str) -> Recorded:
    """One line of a recording, checked for what replaying and judging it read."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise RecordingError(f"{where}: not JSON: not a recording (agent-gateway records JSON lines)") from None
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise RecordingError(f"{where}: not an agent-gateway recording (no \"format\": \"{FORMAT}\")")
    try:
        recorded = Recorded(value, where)
        for side in (recorded.upstream_response, recorded.client_response):
            side.body  # noqa: B018 (read to check it)
        recorded.upstream_body  # noqa: B018
        recorded.client_body  # noqa: B018
        if not isinstance(value["upstream"]["dialect"], str) or not isinstance(value["client"]["dialect"], str):
            raise TypeError("dialect")
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordingError(f"{where}: a recording missing or mangling {exc}") from None
    return recorded


def is_recording(data: bytes) -> bool:
    """Whether bytes are a recording's (its first line says so), rather than a stream."""
    first = data.lstrip()[:200]
    return first.startswith(b"{") and b'"format":"' + FORMAT.encode() in first.replace(b" ", b"")
