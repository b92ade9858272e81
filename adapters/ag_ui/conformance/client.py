"""One `runAgent` over one answer: the stages in the client's order, and the judge."""

from __future__ import annotations

import json

from gateway.core.conformance import MAX_VIOLATIONS, Answer, Violation, json_type, preview, sse_head

from .. import proto
from .chunks import Chunks, Rejected
from .common import MAX_BUFFER, PROTOBUF, Event, dotted, frames, no_constant
from .compat import Legacy
from .events import SCHEMAS
from .reducer import Reducer
from .schema import Issue, Stripped
from .verify import Verifier


class Findings:
    """What the client's stages reject or warn about, each with the frame it was found in. Apart from the client,
    which holds the stages: a stage holding the client's own methods would make each judged run a reference cycle."""

    def __init__(self, found: list[Violation]) -> None:
        self.found = found
        self.failed = False
        """The real client would have stopped by now."""
        self._said: set[tuple[str, str]] = set()
        self.index: int | None = None
        self.frame: str | None = None

    @property
    def full(self) -> bool:
        return len(self.found) >= MAX_VIOLATIONS

    def warn(self, rule: str, message: str) -> None:
        if self.full or (rule, message) in self._said:
            return
        self._said.add((rule, message))
        self.found.append(Violation(rule, message, None if self.frame is None else preview(self.frame), self.index))

    def fail(self, rule: str, message: str) -> None:
        self.warn(rule, message)
        self.failed = True


class AguiClient:
    """One `runAgent` over one answer's frames: parse, upgrade, enforce, expand, verify, apply, in the client's
    order, collecting what each stage rejects or warns about."""

    def __init__(self, found: list[Violation] | None = None) -> None:
        findings = self.findings = Findings(found if found is not None else [])
        self._last: str | None = None
        self._legacy = Legacy(findings.warn)
        self._chunks = Chunks()
        self._verifier = Verifier(findings.fail)
        self._reducer = Reducer(findings.warn)

    @property
    def found(self) -> list[Violation]:
        return self.findings.found

    @property
    def full(self) -> bool:
        return self.findings.full

    def fail(self, rule: str, message: str) -> None:
        self.findings.fail(rule, message)

    def frame(self, index: int, data: str) -> None:
        self.findings.index, self.findings.frame = index, data
        if len(data) > MAX_BUFFER:
            self.fail("sse-buffer", f"an event of {len(data)} characters: the client's SSE buffer holds at most "
                                     f"{MAX_BUFFER // (1024 * 1024)} MB and the run fails")
            return
        try:
            value = json.loads(data, parse_constant=no_constant)
        except ValueError as exc:
            hint = ""
            if "\r" in data:
                hint = " (this stream has CR line ends: the client splits events only on a blank LF line, so CRLF " \
                       "events run together)"
            elif data.strip() == "[DONE]":
                hint = " ([DONE] ends an OpenAI or Vercel stream; an AG-UI stream ends with RUN_FINISHED)"
            self.fail("json", f"an event's data is not JSON: {exc}{hint}")
            return
        if not isinstance(value, dict):
            self.fail("event-not-object", f"an event must be a JSON object, got {json_type(value)}")
            return
        if not isinstance(value.get("type"), str) or not value["type"]:
            self.fail("event-without-type", "an event must carry its type as a non-empty string")
            return
        event = self._enforce(self._legacy.upgrade(value))
        if event is None:
            return
        try:
            expanded = self._chunks.expand(event)
        except Rejected as exc:
            self.fail(exc.rule, exc.message)
            return
        for item in expanded:
            self._last = item["type"]
            self._verifier.check(item)
            if not self.findings.failed:
                self._reducer.apply(item)

    def _enforce(self, event: Event) -> Event | None:
        """The event as the schema leaves it, or None when the client drops it. An event with a malformed field
        goes on without that field, so later stages judge the rest; without a required one it goes no further."""
        kind, warn = event["type"], self.findings.warn
        schema = SCHEMAS.get(kind)
        if schema is None:
            warn("unknown-event-type", f"unknown event type '{kind}': AG-UI 1.0 has no such event, so the "
                                       f"client drops it with a warning")
            return None
        stripped: list[Stripped] = []
        value = schema.strip(event, (), stripped)
        for item in stripped:
            if item.why is None:
                warn("unknown-field", f"{kind} carries '{dotted(item.path)}', which the AG-UI 1.0 schema does "
                                      f"not describe: the client strips it with a warning")
            else:
                warn("unknown-union-member", f"{kind} '{dotted(item.path)}' is dropped with a warning: "
                                             f"{item.why}")
        issues: list[Issue] = []
        schema.check(value, (), issues)
        for issue in issues:
            where = f"{kind}.{dotted(issue.path)}"
            self.fail("missing-field" if issue.missing else "invalid-field", f"{where} {issue.problem}")
        if not issues:
            return dict(value)
        bad = {issue.path[0] for issue in issues if issue.path}
        if bad & schema.required:
            return None
        return {key: item for key, item in value.items() if key not in bad}

    def finish(self) -> None:
        self.findings.index = self.findings.frame = None
        if self._last not in ("RUN_FINISHED", "RUN_ERROR"):
            self.fail("no-terminal-event", f"the stream ended without RUN_FINISHED or RUN_ERROR (last event: "
                                            f"{self._last or 'none'}): nothing tells the client the run is over "
                                            f"rather than cut off")


def judge(answer: Answer) -> list[Violation]:
    """Every rule of `@ag-ui/client` 1.0.0 the answer breaks, first broken first, at most `MAX_VIOLATIONS`."""
    protobuf = answer.headers.get("content-type", "") == PROTOBUF  # the client's exact test
    found = [v for v in sse_head(answer) if not (protobuf and v.rule == "convention-content-type")]
    if not 200 <= answer.status < 300:
        return found  # the client rejects the response before it reads a byte of the body
    client = AguiClient(found)
    for index, data in enumerate(_protobuf_frames(answer.body, client) if protobuf else frames(answer.body)):
        if client.full:
            break
        client.frame(index, data)
    client.finish()
    return client.found


def frame_ends(answer: Answer) -> list[int]:
    """Where each frame the judge numbers ends in the body: each protobuf event, or each event as the client frames it
    (`frames`: split on a literal "\\n\\n", an event being a block with a `data:` line)."""
    if answer.headers.get("content-type", "") == PROTOBUF:
        return proto.message_ends(answer.body)
    body = answer.body
    at = 3 if body.startswith(b"\xef\xbb\xbf") else 0  # the byte order mark the client drops
    ends: list[int] = []
    for block in body[at:].split(b"\n\n"):
        at += len(block)
        if any(line.startswith(b"data:") for line in block.split(b"\n")):
            ends.append(min(at + 2, len(body)))
        at += 2
    return ends


def _protobuf_frames(body: bytes, client: AguiClient) -> list[str]:
    """Each protobuf event as the JSON object `@ag-ui/proto`'s decode gives the rest of the pipeline."""
    if not proto.available():
        client.fail("protobuf-unread", "the answer is protobuf and the judge has no protobuf runtime to read it "
                                       "(install agent-gateway[proto])")
        return []
    framer = proto.ProtoFramer(MAX_BUFFER)
    out = []
    try:
        for message in framer.feed(body):
            out.append(json.dumps(proto.decode(message)))
    except proto.ProtoError as exc:
        client.fail("protobuf", f"an event the client cannot read: {exc}")
    if framer.pending:
        client.fail("protobuf-truncated", f"the answer ends in the middle of a protobuf event ({framer.pending} "
                                          f"bytes of it): the client fails the run")
    return out
