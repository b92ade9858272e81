"""`GET /v1/responses/{id}`, `POST /v1/responses/{id}/cancel` and `DELETE /v1/responses/{id}`: a response the
gateway served, as it stands. A response is a run (`gateway.core.queries`): the gateway finds it on whichever
replica runs it, or in the store once it has ended; a response is only ever its caller's. One still running is
`in_progress`; cancelling it stops it wherever it runs (its stream ends `incomplete`, reason `cancelled`, and the
upstream's run is cancelled) and answers it `cancelled`. Deleting one forgets it, and the conversation it left
(`previous_response_id` naming it is then a 404). On a resumable route, `GET ...?stream=true` naming a conversation
streams the run running in it (`follows`), whichever dialect's client started it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

import orjson

from gateway.core import events as canonical
from gateway.core.encoding import json_bytes
from gateway.core.errors import InvalidRequest
from gateway.core.queries import Answer, CallerRuns, Followed, RunPath, RunQueries, RunQuery, RunRecord, RunState
from gateway.core.turn import Turn

from .items import ERRORS
from .writer import ResponseWriter

RUN_PATHS = (RunPath("GET", "retrieve"), RunPath("DELETE", "delete"), RunPath("POST", "cancel", "/cancel"))
_ENDED = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponseLog:
    """A run's response as a query reads it (`gateway.core.queries.RunLog`): the response object its stream
    showed once it has ended; while it runs, each output item as it is done (a response is read, not followed)."""

    __slots__ = ("_final", "_writer")

    def __init__(self, turn: Turn) -> None:
        self._writer = ResponseWriter(turn, defaultdict(int))
        self._final: dict[str, Any] | None = None

    def feed(self, events: list[canonical.Event]) -> list[bytes]:
        updates = []
        for e in events:
            for kind, fields in self._writer.event(e):
                if kind == "response.output_item.done":
                    updates.append(json_bytes(fields["item"], self._writer.out.chars))
                elif kind in _ENDED:
                    self._final = fields["response"]
        return updates

    def document(self) -> dict[str, Any]:
        return self._final if self._final is not None else self._writer.response("in_progress")


async def answer(query: RunQuery, runs: CallerRuns) -> Answer:
    found = await runs.find(query.run_id or "")
    if found is None:
        return _not_found(query.run_id)
    if query.name == "delete":
        if found.running:  # stopped wherever it runs, then forgotten
            await runs.cancel(found.record.run_id)
        await runs.forget(found.record.run_id)
        return Answer(orjson.dumps({"id": found.record.run_id, "object": "response", "deleted": True}))
    if query.name == "cancel":
        if found.running:
            found = await runs.cancel(found.record.run_id) or found
        elif found.record.status != "interrupt":
            return _refused(found, "only a response in progress can be cancelled")
        else:  # an interrupted response waits for its client: nothing runs, it ends here
            await runs.save(replace(found.record, status="cancelled"))
        return Answer(orjson.dumps({**response_of(found), "status": "cancelled"}))
    return Answer(orjson.dumps(response_of(found)))


_STATUS = {"success": "completed", "interrupt": "incomplete", "cancelled": "cancelled", "error": "failed"}


def response_of(state: RunState) -> dict[str, Any]:
    """The response as it stands: as its stream showed it, with the run's status (a finished one cut short stays
    `incomplete`); one still running, with the items it has done so far."""
    response = dict(state.record.document)
    if state.running:
        response["status"] = "in_progress"
        response["output"] = [orjson.loads(item) for item in state.updates]
    elif state.record.status != "success" or response.get("status") != "incomplete":
        response["status"] = _STATUS.get(state.record.status, "in_progress")
    return response


def _not_found(response_id: str | None) -> Answer:
    return Answer(orjson.dumps({"error": ERRORS.object(f"Response with id '{response_id}' not found.", 404,
                                                      "response_not_found", "response_id")}), 404)


def _refused(state: RunState, why: str) -> Answer:
    status = response_of(state)["status"]
    return Answer(orjson.dumps({"error": ERRORS.object(f"Response {state.record.run_id} is {status}: {why}", 400,
                                                      "response_not_cancellable", None)}), 400)


def follows(query: RunQuery) -> Followed | None:
    """`GET /v1/responses/{id}?stream=true&starting_after=N` naming a conversation (the id another dialect's client
    gave it) rather than a response: its latest run as a response of that id streams it, from after event `N`,
    while it runs and once it has ended, while it is kept (as the API streams a stored background response again)."""
    if query.name != "retrieve" or not query.run_id or str(query.request.get("stream")).lower() not in ("true", "1"):
        return None
    after = str(query.request.get("starting_after") or "0")
    if not after.isdigit() or len(after) > 15:
        raise InvalidRequest("starting_after must be the sequence_number of an event of the stream")
    return Followed(query.run_id, Turn(conversation_id=query.run_id, run_id=query.run_id), int(after), ended=True)


def _no_query(body: dict[str, Any]) -> RunQuery | None:
    return None  # every request in a body is a new response


def _continues(turn: Turn) -> str | None:
    return None  # a response follows another (`previous_response_id`) as a new run, in the conversation it left


def _continued(turn: Turn, record: RunRecord) -> Turn:
    return turn


QUERIES_OF_RESPONSES = RunQueries(read=_no_query, answer=answer, new_log=ResponseLog, continues=_continues,
                                  continued=_continued, paths=RUN_PATHS, follows=follows)
