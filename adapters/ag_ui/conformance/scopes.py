"""Steps and subagents, as `verifyEvents` follows them: scopes opened and closed by name, each by whoever opened
it, a subagent inside its parent."""

from __future__ import annotations

from .common import Event, Report, who


class Scopes:
    """The steps and subagents of one run."""

    def __init__(self, fail: Report) -> None:
        self._fail = fail
        self._steps: dict[str | None, dict[str, None]] = {}
        """Active steps by their owner (None for the parent agent), in order."""
        self._subagents: dict[str, None] = {}
        self._closed_subagents: set[str] = set()

    def step_started(self, event: Event) -> None:
        name, owner = event["stepName"], event.get("subagentRunId")
        where = "" if owner is None else f" in subagent '{owner}'"
        steps = self._steps.setdefault(owner, {})
        if name in steps:
            self._fail("step-start-duplicate", f'STEP_STARTED for step "{name}"{where}, which is already active')
            return
        steps[name] = None

    def step_finished(self, event: Event) -> None:
        name, owner = event["stepName"], event.get("subagentRunId")
        steps = self._steps.setdefault(owner, {})
        if name in steps:
            del steps[name]
            return
        others = [o for o, names in self._steps.items() if o != owner and name in names]
        if others:
            self._fail("step-owner-mismatch", f'STEP_FINISHED for step "{name}" comes from {who(owner)}, but '
                                              f"{who(others[0])} started it: a step is finished by whoever started it")
        else:
            self._fail("step-finished-without-start", f'STEP_FINISHED for step "{name}", which was never started '
                                                      f"(STEP_STARTED)")

    def subagent_started(self, event: Event) -> None:
        subagent, parent = event["subagentRunId"], event.get("parentSubagentRunId")
        if subagent in self._subagents:
            self._fail("subagent-start-duplicate", f"SUBAGENT_STARTED for subagent '{subagent}', which is already "
                                                   f"active: finish it with SUBAGENT_FINISHED first")
        elif subagent in self._closed_subagents:
            self._fail("subagent-id-reused", f"SUBAGENT_STARTED for subagent '{subagent}', which already finished in "
                                             f"this run: a subagentRunId names one invocation")
        elif parent is not None and parent not in self._subagents and parent not in self._closed_subagents:
            self._fail("subagent-parent-unknown", f"SUBAGENT_STARTED names parentSubagentRunId '{parent}', which has "
                                                  f"not started in this run")
        else:
            self._subagents[subagent] = None

    def subagent_finished(self, event: Event) -> None:
        subagent = event["subagentRunId"]
        if subagent not in self._subagents:
            self._fail("subagent-end-without-start", f"{event['type']} for subagent '{subagent}', which is not active "
                                                     f"(SUBAGENT_STARTED)")
            return
        del self._subagents[subagent]
        self._closed_subagents.add(subagent)

    def open_steps(self) -> list[str]:
        return [name if owner is None else f"{name} (subagent '{owner}')"
                for owner, names in self._steps.items() for name in names]

    def open_subagents(self) -> list[str]:
        return list(self._subagents)

    def end_run(self) -> None:
        """RUN_FINISHED: what is still open is closed (its ids stay used)."""
        self._steps.clear()
        self._subagents.clear()
