"""Re-record `tests/fixtures/langgraph/` from the real LangGraph server (`langgraph dev`, langgraph-api 0.16.7,
serving `tests/peers/langgraph/scripted_graph.py`).

    .venv/bin/python tests/record_langgraph_fixtures.py     # about 10 s

Every file is a run's body exactly as it crossed the wire (httpx `iter_raw`), asked for as the gateway asks: the
stream modes of `adapters.langgraph.request.UPSTREAM_MODES`, `stream_resumable` (so each frame has an `id:`), on a
thread of its own. Ids and timestamps differ on each run.

    langgraph_dev_<scenario>.sse   <scenario> is what the graph is told: echo ("hello"), weather (its own tool and
                                   the tool's message), client_tool (a call to the client's ask_user, left to the
                                   client), interrupt (`__interrupt__` with its value), resume (command.resume on
                                   the interrupted thread), think (a reasoning block first), custom_state (stream
                                   writer data and a state key), fail (an `error` frame)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from peers_env import langgraph_upstream

from adapters.langgraph.request import UPSTREAM_MODES

OUT = Path(__file__).parent / "fixtures" / "langgraph"
ASK_USER = {"name": "ask_user", "description": "Ask the human a question",
            "parameters": {"type": "object", "properties": {"question": {"type": "string"}}}}


def record(http: httpx.Client, url: str, thread: str, name: str, body: dict[str, Any]) -> None:
    body = {"assistant_id": "agent", "stream_mode": UPSTREAM_MODES, "stream_resumable": True, **body}
    with http.stream("POST", f"{url}/threads/{thread}/runs/stream", json=body) as response:
        assert response.status_code == 200, response.status_code
        assert response.headers["content-type"].startswith("text/event-stream")
        (OUT / f"langgraph_dev_{name}.sse").write_bytes(b"".join(response.iter_raw()))


def main() -> None:
    OUT.mkdir(exist_ok=True)
    with langgraph_upstream() as url, httpx.Client(timeout=30) as http:
        def thread() -> str:
            return str(http.post(f"{url}/threads", json={}).json()["thread_id"])

        for name, text in (("echo", "hello"), ("weather", "what is the weather"), ("think", "please think"),
                           ("custom_state", "custom state"), ("fail", "please fail")):
            record(http, url, thread(), name, {"input": {"messages": [{"type": "human", "content": text}]}})
        record(http, url, thread(), "client_tool",
               {"input": {"messages": [{"type": "human", "content": "use the tool"}], "tools": [ASK_USER]}})
        waiting = thread()
        record(http, url, waiting, "interrupt", {"input": {"messages": [{"type": "human", "content": "interrupt"}]}})
        record(http, url, waiting, "resume", {"command": {"resume": {"approved": True}}})


if __name__ == "__main__":
    main()
