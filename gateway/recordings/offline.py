"""Recordings read with no agent and no gateway running: each reply judged by its dialect's rules
(`agent-gateway check --recording`), and the upstream's replies translated again (`agent-gateway translate`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from adapters import registry
from gateway.core.conformance import Answer, Violation
from gateway.core.events import Event
from gateway.core.turn import Turn
from gateway.recordings.exchange import Frames, Recorded
from gateway.recordings.judged import request_json


@dataclass(slots=True)
class Judged:
    """One reply of a recording, as its dialect's judge saw it."""

    where: str
    side: str
    """"upstream" (what the agent sent the gateway) or "client" (what the gateway sent its client)."""
    dialect: str
    events: int
    """The events the reply holds, read with its dialect's decoder."""
    violations: list[Violation] = field(default_factory=list)
    skipped: str | None = None

    @property
    def failed(self) -> bool:
        return any(not v.convention for v in self.violations)

    def lines(self) -> list[str]:
        label = f"{self.where} {self.side} ({self.dialect})"
        if self.skipped:
            return [f"  SKIP  {label}: {self.skipped}"]
        broken = [v for v in self.violations if not v.convention]
        notes = [v for v in self.violations if v.convention]
        head = (f"  FAIL  {label}: {len(broken)} violation{'s' * (len(broken) != 1)} of the {self.dialect} rules"
                if broken else f"  PASS  {label}: {self.events} event{'s' * (self.events != 1)}")
        lines = [head]
        for violation in broken + notes:
            where = f"frame {violation.index + 1}: " if violation.index is not None else ""
            kind = "note: " if violation.convention else ""
            lines.append(f"          {kind}{where}{violation.rule}: {violation.message}")
            if violation.frame:
                lines.append(f"            {violation.frame}")
        return lines


def judge(recorded: list[Recorded]) -> list[Judged]:
    """Every reply of every exchange, the upstream's and the client's, judged by its own dialect's rules."""
    found: list[Judged] = []
    for exchange in recorded:
        found.append(_judge(exchange.where, "upstream", exchange.upstream_dialect, exchange.upstream_response,
                            exchange.upstream_body))
        found.append(_judge(exchange.where, "client", exchange.client_dialect, exchange.client_response,
                            exchange.client_body))
    return found


def _judge(where: str, side: str, dialect: str, response: Frames, request: bytes) -> Judged:
    if dialect not in registry.DIALECTS:
        return Judged(where, side, dialect, 0, skipped=f"{dialect} is not a dialect this gateway knows")
    if response.status == 0:
        return Judged(where, side, dialect, 0, skipped="no reply was recorded (the exchange ended before one)")
    answer = Answer(response.status, {k.lower(): v for k, v in response.headers.items()}, response.body,
                    request_json(request))
    return Judged(where, side, dialect, len(_events(dialect, response)), registry.get(dialect).judge(answer))


def upstream_events(exchange: Recorded) -> list[Event]:
    """The canonical events of a recorded upstream reply, read as the gateway read it."""
    return _events(exchange.upstream_dialect, exchange.upstream_response)


def _events(dialect: str, response: Frames) -> list[Event]:
    decoder = registry.get(dialect).new_decoder()
    events: list[Event] = []
    for _, data in response.frames:
        events += decoder.feed(data)
    return events + decoder.close()


def translate(recorded: list[Recorded], target: str, variant: str | None = None) -> tuple[bytes, list[Event]]:
    """Each exchange's upstream reply re-encoded for a client of `target`, one after the other; and every event."""
    out = bytearray()
    every: list[Event] = []
    for exchange in recorded:
        events = upstream_events(exchange)
        encoder = registry.get(target).new_encoder(Turn(variant=variant))
        out += encoder.encode(events)
        if not encoder.streams:
            out += b"\n"
        every += events
    return bytes(out), every
