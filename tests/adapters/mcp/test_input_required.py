"""An agent's questions as MCP 2026-07-28's `input_required`, the dialect's parse and encoder on their own: the form
asked for each interrupt (its own flat schema, else an approval or one text field), each answer of a retry as the
canonical resume, and the judge's rules for such a result; and a failure before the reply typed as this era's results
are. Over HTTP and with the SDKs: `test_modern.py`."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from adapters import registry
from gateway.core import events as canonical
from gateway.core.conformance import Answer
from gateway.core.errors import UpstreamError
from gateway.core.turn import Resume

VERSION = "2026-07-28"



def asked_for(interrupt: canonical.Interrupt, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result a 2026 client that takes forms (unless `capabilities` say otherwise) gets for a run that ends on
    `interrupt`."""
    mcp = registry.get("mcp")
    takes = {"elicitation": {}} if capabilities is None else capabilities
    turn = mcp.parse_request({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
        "name": "helper", "arguments": {"message": "hi"}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": VERSION, "io.modelcontextprotocol/clientCapabilities": takes}}})
    encoder = mcp.new_encoder(turn)
    body = encoder.encode([canonical.RunStarted(), interrupt, canonical.RunFinished(outcome="interrupt")])
    assert mcp.judge(Answer(200, encoder.headers, body)) == []  # what the SDKs hold an answer to
    [response] = [orjson.loads(line[6:]) for line in body.splitlines() if line.startswith(b"data: ")]
    result: dict[str, Any] = response["result"]
    return result


FORM = {"type": "object", "title": "Deploy", "properties": {
    "target": {"type": "string", "enum": ["staging", "production"]}, "replicas": {"type": "integer", "minimum": 1},
    "notify": {"type": "boolean", "default": True},
    "regions": {"type": "array", "items": {"anyOf": [{"const": "eu", "title": "Europe"}]}}}, "required": ["target"]}


def test_an_interrupts_flat_schema_is_the_form_asked() -> None:
    result = asked_for(canonical.Interrupt("int-1", message="Deploy where?", response_schema=FORM))
    assert result["resultType"] == "input_required"
    params = result["inputRequests"]["int-1"]["params"]
    assert params["message"] == "Deploy where?"
    assert params["requestedSchema"] == {key: FORM[key] for key in ("type", "properties", "required")}


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"address": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "object", "properties": {"when": {"$ref": "#/$defs/when"}}},
    {"type": "object", "properties": {"mail": {"type": "string", "format": "hostname"}}},
    {"type": "object", "properties": {}},
    {"type": "boolean"},
])
def test_a_schema_no_form_can_show_is_asked_as_an_approval_or_one_text_field(schema: dict[str, Any]) -> None:
    approval = asked_for(canonical.Interrupt("int-1", tool_call_id="call-1", response_schema=schema))
    assert list(approval["inputRequests"]["int-1"]["params"]["requestedSchema"]["properties"]) == ["approve"]
    question = asked_for(canonical.Interrupt("int-2", message="Why?", response_schema=schema))
    assert list(question["inputRequests"]["int-2"]["params"]["requestedSchema"]["properties"]) == ["answer"]


def test_a_client_that_takes_only_url_elicitation_gets_a_complete_result() -> None:
    result = asked_for(canonical.Interrupt("int-1", message="Continue?"), {"elicitation": {"url": {}}})
    assert result["resultType"] == "complete" and result["structuredContent"]["interrupts"][0]["id"] == "int-1"


def test_a_retry_answers_each_interrupt_as_the_canonical_resume() -> None:
    mcp = registry.get("mcp")
    asked = asked_for(canonical.Interrupt("int-1", message="Deploy where?", response_schema=FORM))
    approval = asked_for(canonical.Interrupt("int-2", tool_call_id="call-1"))

    def resumed(result: dict[str, Any], answer: dict[str, Any]) -> list[Resume]:
        [key] = result["inputRequests"]
        turn = mcp.parse_request({"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {
            "name": "helper", "arguments": {"message": "hi"}, "inputResponses": {key: answer},
            "requestState": result["requestState"]}})
        assert turn.messages == [] and turn.conversation_id
        return turn.resume

    assert resumed(asked, {"action": "accept", "content": {"target": "staging"}}) == [
        Resume("int-1", payload={"target": "staging"})]
    assert resumed(asked, {"action": "decline"}) == [Resume("int-1", "cancelled")]
    assert resumed(approval, {"action": "accept", "content": {"approve": True}}) == [
        Resume("int-2", payload={"approved": True})]
    assert resumed(approval, {"action": "decline"}) == [Resume("int-2", payload={"approved": False})]
    assert resumed(approval, {"action": "cancel"}) == [Resume("int-2", "cancelled")]


def test_the_judge_holds_an_input_required_result_to_its_shape() -> None:
    def judged(result: dict[str, Any]) -> list[str]:
        body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "input_required", **result}})
        return [v.rule for v in registry.get("mcp").judge(Answer(200, {"content-type": "application/json"}, body))]

    assert judged({"requestState": "x"}) == []
    assert judged({}) == ["input-required"]
    assert judged({"inputRequests": {"a": {"params": {}}}, "requestState": 3}) == ["input-requests", "request-state"]


def test_a_failure_before_the_reply_is_a_typed_is_error_result_for_a_2026_call() -> None:
    call = {"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "helper", "arguments": {
        "message": "hi"}, "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION}}}
    reply = registry.get("mcp").errors_for(call)
    assert reply is not None
    status, body = reply(UpstreamError("the agent could not be reached"))
    result = orjson.loads(body)["result"]
    assert status == 200 and result["isError"] is True and result["resultType"] == "complete"
    handshake = registry.get("mcp").errors_for({**call, "params": {"name": "helper"}})
    assert handshake is not None and "resultType" not in orjson.loads(handshake(UpstreamError("x"))[1])["result"]
