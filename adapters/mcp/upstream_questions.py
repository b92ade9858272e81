"""An MCP server's question to the user, as the interrupt of a run the gateway's client answers on a later turn:
2026-07-28's `input_required` (SEP-2322: the server holds nothing while it waits), and 2025's `elicitation/create`
on the call's stream (the tool waits there: the gateway holds the call open, `HeldCalls`, and POSTs the answer as
the JSON-RPC response to it in the call's session, then reads the call on as the answering turn's reply).

```
tools/call ──▶ {resultType: "input_required", inputRequests: {KEY: elicitation/create {message, requestedSchema}},
                requestState}
           ──▶ an Interrupt per input request (message, responseSchema = the requestedSchema), the run interrupted
client's answer (a Resume per interrupt) ──▶ the same tools/call, a new JSON-RPC id, with
                inputResponses {KEY: {action: accept|decline|cancel, content}} and the requestState as it came
```

Where the call waits between the turns: in each interrupt's `upstream_state` (`{call, key, requestState}`: the
tool, the arguments it was called with, the input request's key, the state byte for byte). The conversation store
keeps it with the open interrupt, as it keeps the interrupt's response schema, so any replica that takes the answer
retries the call, and the client never sees it (an interrupt's id is shown to clients and sent back by them; the
state there would be theirs to alter, and a call's arguments, the whole history as text for a tool that keeps none,
are too large for an id). What the store drops with the interrupt once answered goes with it. The server, not
the gateway, protects the state (the spec makes it treat `requestState` as the client's, to seal or sign).

A question by URL (a link the user opens: `url_elicitation.py`) is an interrupt whose payload holds the link.
A client's answer to a form becomes an `ElicitResult`: a cancel is `cancel`; `{action, content?}` as it is; an
object of the form's fields `accept` with it as the content; a no (`false`, `{"approved": false}`, "no")
`decline`; a yes (`true`, `{"approved": true}`, "yes") or one value, for a form of one field or whose one required
field is a boolean (a confirmation), `accept` with that field.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.codec import UpstreamRequest
from gateway.core.errors import ErrorCode
from gateway.core.ids import new_id
from gateway.core.turn import Resume, approves, yes_or_no

from .url_elicitation import asked_by_url, by_url, interrupt_of, url_result
from .wire import ACCEPT

ELICIT = "elicitation/create"
ACTIONS = ("accept", "decline", "cancel")
REASON = "elicitation"
MAX_INPUT_REQUESTS = 16
"""Questions of one result turned into interrupts: a server that asks more is failed, not relayed."""
MAX_STATE_CHARS = 1 << 16
"""The longest `requestState` kept with an interrupt in the conversation store: a longer one fails the run."""


def interrupts_of(result: dict[str, Any], call: dict[str, Any] | None) -> list[canonical.Event]:
    """An `input_required` result's questions as interrupts that end the run, or the run's error when the gateway
    cannot ask them (not a form, or no call to retry)."""
    asked = result.get("inputRequests")
    state = result.get("requestState")
    if not isinstance(asked, dict) or not asked:
        return [_failed("the MCP server asked for input without saying what")]
    if call is None:
        return [_failed("the MCP server asked for input on a call the gateway cannot retry")]
    if len(asked) > MAX_INPUT_REQUESTS:
        return [_failed(f"the MCP server asked {len(asked)} questions at once; the gateway relays at most "
                        f"{MAX_INPUT_REQUESTS}")]
    if state is not None and (not isinstance(state, str) or len(state) > MAX_STATE_CHARS):
        return [_failed(f"the MCP server's requestState is not a string of at most {MAX_STATE_CHARS} characters")]
    out: list[canonical.Event] = []
    for key, input_request in asked.items():
        params = input_request.get("params") if isinstance(input_request, dict) else None
        method = input_request.get("method") if isinstance(input_request, dict) else None
        if method == ELICIT and isinstance(params, dict) and asked_by_url(params):
            by_link = interrupt_of(params, {"call": call, "key": key, "requestState": state})
            if by_link is None:
                return [_failed("the MCP server asked the gateway to have a link opened, but gave no http(s) URL")]
            out.append(by_link)
            continue
        if method != ELICIT or not isinstance(params, dict) or params.get("mode", "form") != "form":
            what = method if method != ELICIT else f"an elicitation of mode {params.get('mode')!r}" \
                if isinstance(params, dict) else "an elicitation without params"
            return [_failed(f"the MCP server asked the gateway {what!r}, which it does not answer "
                            "(it asks its client for forms and links only)")]
        message = params.get("message")
        schema = params.get("requestedSchema")
        out.append(canonical.Interrupt(new_id("elicit"), reason=REASON,
                                       message=message if isinstance(message, str) else None,
                                       response_schema=schema if isinstance(schema, dict) else None,
                                       upstream_state={"call": call, "key": key, "requestState": state}))
    out.append(canonical.RunFinished(outcome="interrupt"))
    return out


def pushed(frame: dict[str, Any]) -> list[canonical.Event]:
    """A 2025 server's `elicitation/create` on the call's stream (the tool waits there for the answer) as the
    interrupt that ends the run while the call is held open (`HeldCalls`); the run's error for any other request."""
    method, params = frame.get("method"), frame.get("params")
    if method == ELICIT and isinstance(params, dict) and asked_by_url(params):
        by_link = interrupt_of(params, {HELD: frame.get("id")})
        if by_link is None:
            return [_failed("the MCP server asked the gateway to have a link opened, but gave no http(s) URL")]
        return [by_link, canonical.RunFinished(outcome="interrupt")]
    if method != ELICIT or not isinstance(params, dict) or params.get("mode", "form") != "form":
        what = f"an elicitation of mode {params.get('mode')!r}" if method == ELICIT and isinstance(params, dict) \
            else method
        return [_failed(f"the MCP server asked the gateway {what!r}, which it does not answer (it asks its client "
                        "for forms and links only)")]
    message, schema = params.get("message"), params.get("requestedSchema")
    return [canonical.Interrupt(new_id("elicit"), reason=REASON, message=message if isinstance(message, str) else None,
                                response_schema=schema if isinstance(schema, dict) else None,
                                upstream_state={HELD: frame.get("id")}),
            canonical.RunFinished(outcome="interrupt")]


def links_required(error: dict[str, Any], call: dict[str, Any] | None) -> list[canonical.Event]:
    """A `-32042` error's links (URL elicitations the call needs first) as interrupts that end the run; once they
    are answered the same call is made again (`AGAIN`). The run's error when there is nothing to open or no call."""
    data = error.get("data")
    asked = data.get("elicitations") if isinstance(data, dict) else None
    if call is None or not isinstance(asked, list) or not asked or len(asked) > MAX_INPUT_REQUESTS:
        return [_failed(f"the MCP server said the call needs links opened first, but named no more than "
                        f"{MAX_INPUT_REQUESTS} of them on a call the gateway can make again: "
                        f"{str(error.get('message'))[:200]}")]
    out: list[canonical.Event] = []
    for params in asked:
        by_link = interrupt_of(params, {AGAIN: call}) if isinstance(params, dict) else None
        if by_link is None:
            return [_failed("the MCP server asked the gateway to have a link opened, but gave no http(s) URL")]
        out.append(by_link)
    out.append(canonical.RunFinished(outcome="interrupt"))
    return out


AGAIN = "again"
"""The key of the interrupt state of a link a call needed opened (`-32042`): the call, made again once answered."""


def called_again(resumes: list[Resume]) -> dict[str, Any] | None:
    """The params of the call answered links were needed for, as it was; None when no answer is to such a link.
    Any answer makes it again: the server, not the gateway, knows whether the link was followed."""
    call = next((r.upstream_state[AGAIN] for r in resumes
                 if isinstance(r.upstream_state, dict) and isinstance(r.upstream_state.get(AGAIN), dict)), None)
    return dict(call) if call is not None else None


HELD = "elicitation"
"""The key of a held call's interrupt state: the JSON-RPC id of the server's `elicitation/create`."""


def waits(state: Any) -> bool:
    """Whether an interrupt's state is a question asked on a call held open."""
    return isinstance(state, dict) and HELD in state and isinstance(state[HELD], (str, int))


def answers(resumes: list[Resume]) -> list[UpstreamRequest]:
    """The JSON-RPC responses to the server's `elicitation/create`s, POSTed in the call's session (202)."""
    return [UpstreamRequest(orjson.dumps({"jsonrpc": "2.0", "id": r.upstream_state[HELD], "result": elicit_result(r)}),
                            {"content-type": "application/json", "accept": ACCEPT}, streams=False)
            for r in resumes if waits(r.upstream_state)]


def retried_call(resumes: list[Resume]) -> dict[str, Any] | None:
    """The params of the call the answered interrupts retry: the call as it was, with an `ElicitResult` for each
    answered question and the server's `requestState` unchanged; None when no answer is to an MCP question."""
    answered = [(r, r.upstream_state) for r in resumes if _is_ours(r.upstream_state)]
    if not answered:
        return None
    first = answered[0][1]
    same = [(r, state) for r, state in answered if state["requestState"] == first["requestState"]
            and state["call"] == first["call"]]
    params: dict[str, Any] = {**first["call"],
                              "inputResponses": {state["key"]: elicit_result(r) for r, state in same}}
    if first["requestState"] is not None:
        params["requestState"] = first["requestState"]
    return params


def elicit_result(resume: Resume) -> dict[str, Any]:
    """A client's answer to a form, as MCP's `ElicitResult` (see the module)."""
    payload = resume.payload
    if by_url(resume.upstream_state):
        return url_result(resume)
    if resume.status == "cancelled":
        return {"action": "cancel"}
    if isinstance(payload, dict) and payload.get("action") in ACTIONS:
        content = payload.get("content")
        return {"action": payload["action"], **({"content": content} if isinstance(content, dict) else {})}
    schema: dict[str, Any] = resume.response_schema if isinstance(resume.response_schema, dict) else {}
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    if isinstance(payload, dict) and payload and payload.keys() <= properties.keys():
        return {"action": "accept", "content": payload}  # the form filled in
    if not approves(resume):  # a no in words among them
        return {"action": "decline"}
    approval = isinstance(payload, dict) and payload.keys() <= {"approved", "reason"}  # useChat's, AG-UI's yes
    if isinstance(payload, dict) and not approval:
        return {"action": "accept", "content": payload}
    field = _only_field(schema)
    if field is None or payload is None:
        return {"action": "accept", "content": {}}
    name, kind = field
    if kind == "boolean":
        return {"action": "accept", "content": {name: payload is True or approval or yes_or_no(str(payload)) is True}}
    return {"action": "accept", "content": {} if approval or payload is True else {name: payload}}


def _only_field(schema: Any) -> tuple[str, str] | None:
    """The field a single value answers: the form's one field, else its one required boolean (a confirmation)."""
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict) or not properties:
        return None
    if len(properties) == 1:
        name, field = next(iter(properties.items()))
        kind = field.get("type") if isinstance(field, dict) else None
        return str(name), kind if isinstance(kind, str) else ""
    required = [name for name in schema.get("required") or () if isinstance(properties.get(name), dict)]
    if len(required) == 1 and properties[required[0]].get("type") == "boolean":
        return required[0], "boolean"
    return None


def _is_ours(state: Any) -> bool:
    return isinstance(state, dict) and isinstance(state.get("call"), dict) and isinstance(state.get("key"), str) \
        and "requestState" in state


def _failed(message: str) -> canonical.RunError:
    return canonical.RunError(message, code=ErrorCode.UPSTREAM_BAD_EVENT)
