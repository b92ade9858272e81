"""URL-mode elicitation (2025-11-25): a question whose answer the user gives at a link, not through the client (a
sign-in, a payment), both ways.

```
upstream: elicitation/create {mode: url, message, url, elicitationId}
    ──▶ an Interrupt: its message, payload {url, message, elicitationId} (any client dialect shows the link), no
        response schema; upstream_state marks it `url`
    client's answer ──▶ ElicitResult {action} with no content: a cancel `cancel`; {action} as it is; a no
        (`false`, {"approved": false}, "no") `decline`; anything else (a yes, "done") `accept`: "I opened it"
client face: an interrupt whose payload is a URL to open (a string, or an object's `url`), http or https
    ──▶ a client that declared elicitation.url (2025-11-25): elicitation/create {mode: url, message, url,
        elicitationId}; its answer resolves the interrupt with {action} (accept, decline), or cancels it
    ──▶ any other client: the form or the text it gets today, the link written into the question
```
"""

from __future__ import annotations

from typing import Any

from gateway.core import events as canonical
from gateway.core.ids import new_id
from gateway.core.turn import Resume, approves

MODE = "url"
ACTIONS = ("accept", "decline", "cancel")
MAX_URL_CHARS = 8192
"""The longest link relayed: a server that sends a longer one fails the run."""


def link(value: Any) -> str | None:
    """An http(s) URL a person can open, or None."""
    if isinstance(value, str) and len(value) <= MAX_URL_CHARS and value.startswith(("https://", "http://")) \
            and value.isprintable() and " " not in value:
        return value
    return None


def asked_by_url(params: dict[str, Any]) -> bool:
    return params.get("mode") == MODE


def interrupt_of(params: dict[str, Any], upstream_state: dict[str, Any]) -> canonical.Interrupt | None:
    """A URL-mode question as the interrupt that asks the gateway's client to open the link; None when it names no
    link to open."""
    url = link(params.get("url"))
    if url is None:
        return None
    message = params.get("message") if isinstance(params.get("message"), str) else None
    elicitation = params.get("elicitationId")
    payload = {"url": url, "message": message,
               "elicitationId": elicitation if isinstance(elicitation, str) else None}
    return canonical.Interrupt(new_id("elicit"), reason="elicitation", message=message,
                               payload={k: v for k, v in payload.items() if v is not None},
                               upstream_state={**upstream_state, MODE: True})


def by_url(state: Any) -> bool:
    """Whether an interrupt's upstream state is a URL-mode question's."""
    return isinstance(state, dict) and state.get(MODE) is True


def url_result(resume: Resume) -> dict[str, Any]:
    """A client's answer to a link as the `ElicitResult` URL mode takes: an action, no content."""
    payload = resume.payload
    if resume.status == "cancelled":
        return {"action": "cancel"}
    if isinstance(payload, dict) and payload.get("action") in ACTIONS:
        return {"action": payload["action"]}
    return {"action": "accept" if approves(resume) else "decline"}


def url_to_open(interrupt: canonical.Interrupt) -> str | None:
    """The link an interrupt asks its user to open: its payload when that is a URL, or its payload's `url`."""
    payload = interrupt.payload
    return link(payload.get("url") if isinstance(payload, dict) else payload)


def link_of(interrupt: canonical.Interrupt) -> dict[str, str]:
    """What the MCP face reports of an interrupt's link (`structuredContent.interrupts`): its `url`, and the
    upstream's `elicitationId` when an MCP server asked it (so its `notifications/elicitation/complete` names the
    same)."""
    url = url_to_open(interrupt)
    if url is None:
        return {}
    payload = interrupt.payload
    elicitation = payload.get("elicitationId") if isinstance(payload, dict) else None
    return {"url": url, **({"elicitationId": elicitation} if isinstance(elicitation, str) else {})}


def takes_urls(capabilities: Any, version: Any) -> bool:
    """Whether a session's client declared URL-mode elicitation (2025-11-25 has it; 2025-06-18 had none)."""
    declared = capabilities.get("elicitation") if isinstance(capabilities, dict) else None
    return version != "2025-06-18" and isinstance(declared, dict) and isinstance(declared.get(MODE), dict)


def url_request(interrupt: dict[str, Any]) -> dict[str, Any] | None:
    """The URL-mode `elicitation/create` params that ask an interrupt the MCP face reported (its `url`), or None
    for an interrupt that has no link."""
    url = interrupt.get("url")
    if not isinstance(url, str):
        return None
    elicitation = interrupt.get("elicitationId")
    return {"mode": MODE, "message": interrupt.get("message") or "Open this link to go on", "url": url,
            "elicitationId": elicitation if isinstance(elicitation, str) else new_id("elicitation")}


def with_link(message: str | None, url: str | None) -> str | None:
    """A question as a client that cannot open links by elicitation reads it: the link written in."""
    if url is None:
        return message
    return f"{message}\n{url}" if message else f"Open {url}"


def url_answer(interrupt_id: Any, result: dict[str, Any]) -> dict[str, Any]:
    """A URL-mode elicitation's result as the answer to its interrupt: accept and decline resolve it with the
    action (an MCP upstream takes it back as is), cancel cancels it."""
    action = result.get("action")
    if action in ("accept", "decline"):
        return {"interruptId": interrupt_id, "status": "resolved", "payload": {"action": action}}
    return {"interruptId": interrupt_id, "status": "cancelled"}
