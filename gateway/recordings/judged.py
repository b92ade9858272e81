"""A captured run judged by its dialects' rules, as `agent-gateway check` judges an agent: the upstream's reply by the
upstream dialect's judge, and what the gateway wrote by the client dialect's. A broken rule on the upstream's side
is the agent's; on the client's, the gateway's own.

Only a whole run is judged: one the client left, one the capture cut short, or one whose reply this request did not
run (a resumed one), would break rules their streams kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import orjson

from adapters import registry
from gateway.core.conformance import Answer, Violation
from gateway.recordings.capture import RunCapture

Side = Literal["upstream", "client"]


@dataclass(frozen=True, slots=True)
class Broken:
    """One rule a run broke, on one side, by that side's dialect."""

    side: Side
    dialect: str
    violation: Violation


def judge_run(capture: RunCapture, client_dialect: str, upstream_dialect: str) -> list[Broken] | None:
    """What each side's judge found of a run, in frame order per side; None when the capture does not hold the
    whole run. The upstream's side is left out when the gateway cut its stream (a deadline, a cancel). Slow (every
    frame is read again): called off the run's path, after its last byte."""
    upstream_head, client_head = capture.upstream_head, capture.client_head
    if capture.truncated or not capture.client_done or upstream_head is None or client_head is None:
        return None
    found: list[Broken] = []
    if not any(row.source.startswith("gateway: ") for row in capture.rows):
        upstream = Answer(upstream_head["status"], _lower(upstream_head["headers"]),
                          b"".join(row.frame for row in capture.rows if row.source == "upstream"),
                          _asked(capture.upstream_request))
        found += _judged("upstream", upstream_dialect, upstream)
    client = Answer(client_head["status"], _lower(client_head["headers"]),
                    b"".join(data for _, data in capture.client_frames), _asked(capture.client_request))
    return found + _judged("client", client_dialect, client)


def _judged(side: Side, dialect: str, answer: Answer) -> list[Broken]:
    if dialect not in registry.DIALECTS:  # a request refused before its dialect was known
        return []
    return [Broken(side, dialect, violation) for violation in registry.get(dialect).judge(answer)]


def _asked(request: dict[str, Any] | None) -> object:
    return request_json(request["body"]) if request is not None else None


def request_json(body: bytes) -> object:
    """A request's body as a judge is given it (`Answer.request`): None if it is not JSON."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return None


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {name.lower(): value for name, value in headers.items()}
