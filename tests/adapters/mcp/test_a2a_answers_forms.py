"""An A2A client answering an MCP server's form: `a2a-sdk`'s own client (`tests/peers/a2a_client.py`) in front of
the real MCPServer (`mcp` 2.3.0, `tests/peers/mcp_server.py`), whose `confirm` tool asks a form of two fields (`ok`,
a required boolean, and `note`) and whose `greet` tool asks one (`name`), in both eras (2026-07-28's
`input_required`, and the 2025-only server under `/legacy`, whose call is held open). The task's input-required
is answered by a message: a data part that fits the form is its content; a text fills a form of one field, and a
yes or a no a confirmation's one required boolean; a text that fills nothing is asked again, the task still waiting
and the question still open for an answer that fits.
Install first: `.venv/bin/python tests/peers_env.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from peers_env import A2AClientRun, mcp_upstream, run_a2a_client
from servers import Served

from gateway.config import GatewayConfig
from gateway.server.app import create_app

ROUTES = ["confirm", "legacy-confirm"]


@pytest.fixture(scope="module")
def gateway() -> Iterator[str]:
    with mcp_upstream() as server:
        routes = [{"name": f"{era}{tool}", "paths": [f"/{era}{tool}"], "client_dialects": ["a2a"],
                   "upstream": {"url": f"{server}{path}", "dialect": "mcp", "agent": tool}}
                  for era, path in (("", "/mcp"), ("legacy-", "/legacy/mcp")) for tool in ("confirm", "greet")]
        config = GatewayConfig.model_validate({"routes": routes, "store": {"url": "memory://"}})
        with Served(create_app(config)) as served:
            yield served.url


def status(run: A2AClientRun) -> dict[str, Any]:
    """The task's last status the client was told."""
    assert run.error is None, run.error
    updates = [r["statusUpdate"]["status"] for r in run.responses if "statusUpdate" in r]
    return updates[-1]


def said(run: A2AClientRun) -> str:
    """The task's answer (its artifacts' text)."""
    return "".join(part.get("text", "") for r in run.responses if "artifactUpdate" in r
                   for part in r["artifactUpdate"]["artifact"]["parts"])


def asked(url: str, text: str) -> tuple[str, str, dict[str, Any]]:
    """A new task that asks its form: its id, its context, and the status that asks."""
    run = run_a2a_client(url, text)
    question = status(run)
    assert question["state"] == "TASK_STATE_INPUT_REQUIRED", run.responses
    task = next(r["statusUpdate"] for r in run.responses if "statusUpdate" in r)
    return task["taskId"], task["contextId"], question


def text_of(question: dict[str, Any]) -> str:
    return " ".join(part.get("text", "") for part in question["message"]["parts"])


@pytest.mark.parametrize("route", ROUTES)
def test_a_data_part_that_fits_the_form_is_its_content(gateway: str, route: str) -> None:
    task, context, question = asked(f"{gateway}/{route}", "deploy")
    assert "Really deploy?" in text_of(question)
    done = run_a2a_client(f"{gateway}/{route}", "", task_id=task, context_id=context,
                          data={"ok": True, "note": "right now"})
    assert status(done)["state"] == "TASK_STATE_COMPLETED"
    assert said(done) == "deploy: done (right now)"


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize(("answer", "answered"), [("yes", "deploy: done"), ("no", "deploy: not confirmed")])
def test_a_yes_or_no_fills_a_confirmations_one_required_boolean(gateway: str, route: str, answer: str,
                                                                answered: str) -> None:
    task, context, _ = asked(f"{gateway}/{route}", "deploy")
    done = run_a2a_client(f"{gateway}/{route}", answer, task_id=task, context_id=context)
    assert status(done)["state"] == "TASK_STATE_COMPLETED"
    assert said(done) == answered


@pytest.mark.parametrize("era", ["", "legacy-"])
def test_a_text_fills_a_form_of_one_field(gateway: str, era: str) -> None:
    task, context, question = asked(f"{gateway}/{era}greet", "hello")
    assert "Who is asking?" in text_of(question)
    done = run_a2a_client(f"{gateway}/{era}greet", "Ada", task_id=task, context_id=context)
    assert status(done)["state"] == "TASK_STATE_COMPLETED"
    assert said(done) == "hello, Ada"


@pytest.mark.parametrize("route", ROUTES)
def test_a_text_that_fills_no_field_is_asked_again_and_the_form_still_answered_after(gateway: str,
                                                                                    route: str) -> None:
    task, context, _ = asked(f"{gateway}/{route}", "deploy")
    again = run_a2a_client(f"{gateway}/{route}", "ship it", task_id=task, context_id=context)
    question = status(again)
    assert question["state"] == "TASK_STATE_INPUT_REQUIRED"
    words = text_of(question)
    assert '"ok" (boolean, required: Go ahead?)' in words and '"note"' in words and "data part" in words
    done = run_a2a_client(f"{gateway}/{route}", "", task_id=task, context_id=context, data={"ok": True})
    assert status(done)["state"] == "TASK_STATE_COMPLETED"
    assert said(done) == "deploy: done"
