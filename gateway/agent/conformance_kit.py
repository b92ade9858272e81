"""The A2A project's conformance kit (a2aproject/a2a-tck) asks the agent it tests for a behaviour through the id of
the message it sends: `tck-input-required-<session>` wants the task to wait for input, `tck-artifact-file-...` a
file artifact, and so on (its `scenarios/*.feature`). The built-in agent plays each, in every dialect, so that the
kit can be run against the gateway in front of it. An answer to an interrupt is played by the id of the message it
came in (`Resume.message_id`): a follow-up that asks for input again waits again."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.core.events import Data, Interrupt, RunError, RunFinished
from gateway.core.ids import new_id

if TYPE_CHECKING:
    from .script import Script

RESUBSCRIBE = "test-resubscribe-message-id"
"""The one scenario whose prefix is not `tck-`: a task that works for a while (to subscribe to)."""

TEXT = {
    "complete-task": "Hello from TCK",
    "artifact-text": "Generated text content",
    "message-response": "Direct message response",
    "stream-001": "Stream hello from TCK",
    "stream-003": "Stream task lifecycle",
    "stream-ordering-001": "Ordered output",
    "stream-artifact-text": "Streamed text content",
}
FILE = {"raw": "dGNr", "mediaType": "text/plain", "filename": "output.txt"}
FILE_URL = {"url": "https://example.com/output.txt", "mediaType": "text/plain", "filename": "output.txt"}
NAMES = sorted([*TEXT, "input-required", "artifact-file", "artifact-file-url", "artifact-data", "reject-task",
                "stream-002", "stream-artifact-file", "stream-artifact-chunked"], key=len, reverse=True)
"""Longest first: `artifact-file-url` before `artifact-file`."""


def scenario(message_id: str | None) -> str | None:
    """The kit's scenario a message id asks for, if any."""
    if not message_id:
        return None
    if message_id.startswith(RESUBSCRIBE):
        return RESUBSCRIBE
    if not message_id.startswith("tck-"):
        return None
    return next((name for name in NAMES if message_id.startswith(f"tck-{name}")), None)


def play(s: Script, name: str) -> RunFinished | RunError:
    """The scenario's events, after the run's start; its last event."""
    if name in TEXT:
        s.say(TEXT[name])
    elif name == "input-required":
        s.emit(Interrupt(new_id("int").replace("_", "-", 1), reason="input_required",
                         message="The conformance kit's task needs more input."))
        return RunFinished(outcome="interrupt")
    elif name in ("artifact-file", "stream-artifact-file"):
        s.emit(Data("file", dict(FILE)))
    elif name == "artifact-file-url":
        s.emit(Data("file", dict(FILE_URL)))
    elif name == "artifact-data":
        s.emit(Data("data", {"key": "value", "count": 42}))
    elif name == "reject-task":
        return RunError("rejected", code="agent_rejected")
    elif name == "stream-artifact-chunked":
        s.say("chunk-1 chunk-2", deltas=["chunk-1 ", "chunk-2"])
    elif name == RESUBSCRIBE:
        s.pause(4.0)
    return RunFinished()
