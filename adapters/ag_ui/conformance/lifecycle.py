"""Where a stream is in its runs, as `verifyEvents` follows them: one state, and every transition in `_NEXT`.

The client stops at the first mistake; the judge goes on as if it had not happened, to report the rest. An event
after a run's end takes the stream back to where it was before that end: in a run, or in none if no run has started
(the stream began with another event). So the ends of a stream with no run started are states of their own.
"""

from __future__ import annotations

from enum import Enum

RUN_STARTED, RUN_FINISHED, RUN_ERROR = "RUN_STARTED", "RUN_FINISHED", "RUN_ERROR"


class Run(Enum):
    NO_EVENT = "no event yet"
    ACTIVE = "a run is active"
    FINISHED = "the run finished"
    ERRORED = "the run errored"
    FINISHED_ERRORED = "the run finished, then errored"
    NO_RUN = "events, but no run started"
    NO_RUN_FINISHED = "RUN_FINISHED, but no run started"
    NO_RUN_ERRORED = "RUN_ERROR, but no run started"
    NO_RUN_FINISHED_ERRORED = "RUN_FINISHED then RUN_ERROR, but no run started"


_NEXT: dict[Run, tuple[Run, Run, Run]] = {
    # state: (after RUN_FINISHED, after RUN_ERROR, after any other event); RUN_STARTED always leads to ACTIVE
    Run.NO_EVENT: (Run.NO_RUN_FINISHED, Run.NO_RUN_ERRORED, Run.NO_RUN),
    Run.ACTIVE: (Run.FINISHED, Run.ERRORED, Run.ACTIVE),
    Run.FINISHED: (Run.FINISHED, Run.FINISHED_ERRORED, Run.ACTIVE),
    Run.ERRORED: (Run.FINISHED, Run.ERRORED, Run.ACTIVE),
    Run.FINISHED_ERRORED: (Run.FINISHED, Run.FINISHED_ERRORED, Run.ACTIVE),
    Run.NO_RUN: (Run.NO_RUN_FINISHED, Run.NO_RUN_ERRORED, Run.NO_RUN),
    Run.NO_RUN_FINISHED: (Run.NO_RUN_FINISHED, Run.NO_RUN_FINISHED_ERRORED, Run.NO_RUN),
    Run.NO_RUN_ERRORED: (Run.NO_RUN_FINISHED, Run.NO_RUN_ERRORED, Run.NO_RUN),
    Run.NO_RUN_FINISHED_ERRORED: (Run.NO_RUN_FINISHED, Run.NO_RUN_FINISHED_ERRORED, Run.NO_RUN),
}

_AFTER_ERROR = frozenset({Run.ERRORED, Run.FINISHED_ERRORED, Run.NO_RUN_ERRORED, Run.NO_RUN_FINISHED_ERRORED})
_AFTER_FINISH = frozenset({Run.FINISHED, Run.FINISHED_ERRORED, Run.NO_RUN_FINISHED, Run.NO_RUN_FINISHED_ERRORED})
OVER = _AFTER_ERROR | _AFTER_FINISH
"""States a RUN_STARTED leaves for a new run, whose ids start afresh."""


def after(state: Run, kind: str) -> Run:
    """The state an event of type `kind` leads to."""
    if kind == RUN_STARTED:
        return Run.ACTIVE
    finished, errored, other = _NEXT[state]
    return finished if kind == RUN_FINISHED else errored if kind == RUN_ERROR else other


def mistakes(state: Run, kind: str) -> list[tuple[str, str]]:
    """What is wrong with an event of type `kind` in `state`, as (rule, message)."""
    found = []
    if state in _AFTER_ERROR and kind != RUN_STARTED:
        found.append(("event-after-run-error", f"{kind} after RUN_ERROR: a run that errored is over, and only a new "
                                               f"RUN_STARTED may follow"))
    if state in _AFTER_FINISH and kind not in (RUN_STARTED, RUN_ERROR):
        found.append(("event-after-run-finished", f"{kind} after RUN_FINISHED: the run is over; start a new one "
                                                  f"with RUN_STARTED first"))
    if state is Run.NO_EVENT and kind not in (RUN_STARTED, RUN_ERROR):
        found.append(("first-event-not-run-started", f"the first event must be RUN_STARTED (or RUN_ERROR), "
                                                     f"got {kind}"))
    if state is Run.ACTIVE and kind == RUN_STARTED:
        found.append(("run-started-while-active", "RUN_STARTED while a run is still active: end it with "
                                                  "RUN_FINISHED or RUN_ERROR first"))
    return found
