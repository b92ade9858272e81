"""What the MCP SDKs' clients hold an answer to a `tools/call` to: JSON-RPC 2.0 messages on the call's SSE stream (or
one JSON body), and a response whose result has a `content` list of blocks with a `type` (a text block's `text` a
string) and, when it says, a boolean `isError`; or, in 2026-07-28, an `input_required` result, with `inputRequests`
(each a request with a `method`) or a `requestState` string. A violation is what either client fails on (the
TypeScript SDK takes a result without `content`, the Python SDK `isError: "yes"` or a message that is not JSON-RPC;
the other does not); that progress is a number that increases and that nothing follows the response, the spec asks
and both let pass (a progress they cannot read is dropped): notes. tests/adapters/mcp/test_judge.py holds the judge
to both clients."""

from __future__ import annotations

from typing import Any

import orjson

from gateway.core.conformance import (
    Answer,
    Violation,
    each_frame,
    in_frame_order,
    json_type,
    preview,
    sse_head,
    sse_json_frames,
)


def judge(answer: Answer) -> list[Violation]:
    if "application/json" in answer.headers.get("content-type", ""):
        try:
            value = orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            return [Violation("not-json", "the body is not JSON", preview(answer.body))]
        found: list[Violation] = []
        _response(value, preview(answer.body), 0, found)
        return found
    found = sse_head(answer)
    frames = sse_json_frames(answer, found)
    progress: float | None = None
    responded: int | None = None
    for index, shown, value in each_frame(frames, found):
        if not isinstance(value, dict) or value.get("jsonrpc") != "2.0":
            found.append(Violation("not-json-rpc", "every message is a JSON-RPC 2.0 object", shown, index))
            continue
        if responded is not None:
            found.append(Violation("convention-after-response", "nothing follows the call's response", shown, index))
        if value.get("method") == "notifications/progress":
            params = value.get("params")
            at = params.get("progress") if isinstance(params, dict) else None
            if not isinstance(at, int | float) or isinstance(at, bool):
                found.append(Violation("convention-progress-number", f"progress is a number; got {json_type(at)}",
                                       shown, index))
                continue
            if progress is not None and at <= progress:
                found.append(Violation("convention-progress-increases",
                                       f"progress increases with each notification; {at:g} came after {progress:g}",
                                       shown, index))
            progress = at
        elif "method" not in value:
            responded = index
            _response(value, shown, index, found)
    if responded is None and not found:
        found.append(Violation("no-response", "the stream ended without the call's response"))
    return in_frame_order(found)


def _response(value: Any, shown: str, index: int, found: list[Violation]) -> None:
    if not isinstance(value, dict) or ("result" not in value) == ("error" not in value):
        found.append(Violation("response-shape", "a response has a result or an error, not both", shown, index))
        return
    result = value.get("result")
    if result is None:
        return
    if isinstance(result, dict) and result.get("resultType") == "input_required":
        _input_required(result, shown, index, found)
        return
    content = result.get("content") if isinstance(result, dict) else None
    if not isinstance(content, list):
        found.append(Violation("result-content", f"a CallToolResult's content is a list; got {json_type(content)}",
                               shown, index))
        return
    for block in content:
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            found.append(Violation("content-block", "each content block has a type", shown, index))
        elif block["type"] == "text" and not isinstance(block.get("text"), str):
            found.append(Violation("text-block", "a text block's text is a string", shown, index))
    if "isError" in result and not isinstance(result["isError"], bool):
        found.append(Violation("is-error", f"isError is a boolean; got {json_type(result['isError'])}", shown, index))


def _input_required(result: dict[str, Any], shown: str, index: int, found: list[Violation]) -> None:
    requests, state = result.get("inputRequests"), result.get("requestState")
    if requests is None and state is None:
        found.append(Violation("input-required", "an input_required result has inputRequests or requestState",
                               shown, index))
    if requests is not None and not (isinstance(requests, dict) and all(
            isinstance(asked, dict) and isinstance(asked.get("method"), str) for asked in requests.values())):
        found.append(Violation("input-requests", "inputRequests maps each key to a request with a method", shown,
                               index))
    if state is not None and not isinstance(state, str):
        found.append(Violation("request-state", f"requestState is a string; got {json_type(state)}", shown, index))
