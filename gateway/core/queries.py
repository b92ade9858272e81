"""Runs a client asks about after starting them: get one as it stands, cancel it, delete it, list them, follow one
as it goes (A2A's `GetTask`, `CancelTask`, `ListTasks`, `SubscribeToTask`; Responses' `GET`, `DELETE` and `cancel`
of a response). The server keeps the runs (this process's, every replica's over Redis, and the store's); the
client's dialect says what a query is, what a run looks like to its clients, and how an answer is written.

```
run's events ──RunLog.feed──▶ updates (what a watcher is sent) ──▶ the run's feed, read on any replica
                    └──────document──▶ RunRecord in the store ──▶ later queries and listings
client's query ──read (a body), or paths (a run's id in the path)──▶ RunQuery ──answer(query, CallerRuns)──▶
    one body, or a stream of frames
```

A run may take several requests: one that stops for its client (an interrupt) is continued by a later request
naming it (`continued`), and the run's record and feed carry on across them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from gateway.core.capabilities import Capability
from gateway.core.events import Event
from gateway.core.turn import Message, Turn

RunStatus = Literal["running", "success", "interrupt", "cancelled", "error"]
ENDED: frozenset[RunStatus] = frozenset({"success", "cancelled", "error"})
"""A run in one of these takes no more requests; one that is `interrupt` waits for its client."""


@dataclass(slots=True)
class RunRecord:
    """A run as the store keeps it: written when it starts and when it stops."""

    run_id: str
    conversation_id: str | None
    status: RunStatus
    document: dict[str, Any] = field(default_factory=dict)
    """The run as the dialect's clients see it (A2A: the task), as of this record."""
    requests: int = 1
    """How many requests the run has taken: the one that started it, and each that continued it."""
    cursor: str | None = None
    """Where a listing goes on after this record; set on records a listing returned."""


@dataclass(slots=True)
class RunState:
    """A run as it stands: its record, and the updates it has made since (while it runs, on any replica)."""

    record: RunRecord
    updates: list[bytes] = field(default_factory=list)
    running: bool = False


class RunLog(Protocol):
    """One run (or one request of it) as its watchers see it, made from its events by the client's dialect."""

    def feed(self, events: list[Event]) -> list[bytes]:
        """The updates these events make, each as a watcher is sent it (the dialect frames it per watcher)."""
        ...

    def document(self) -> dict[str, Any]:
        """The run as it stands, for its record."""
        ...


@dataclass(slots=True)
class Webhook:
    """Where a client asked for a run's updates to be pushed (A2A's push notification config)."""

    id: str
    url: str
    headers: dict[str, str] = field(default_factory=dict)
    """What each delivery carries beside the update: the client's token and credentials, as its dialect says."""
    document: dict[str, Any] = field(default_factory=dict)
    """The webhook as the client registered it, to read back."""


class Webhooks(Protocol):
    """The webhooks of one caller's runs on a route that pushes updates (kept in the store, so any replica reads
    them; the replica running a run delivers its updates)."""

    async def add(self, run_id: str, webhook: Webhook) -> None:
        """Register (or replace, by id) a webhook of the run; raises `InvalidRequest` for a host the route does not
        call, or for one webhook more than a run may have."""
        ...

    async def get(self, run_id: str, webhook_id: str) -> Webhook | None: ...

    async def all(self, run_id: str) -> list[Webhook]: ...

    async def delete(self, run_id: str, webhook_id: str) -> bool:
        """Remove it; False if there was none."""
        ...


@dataclass(slots=True)
class KeptConversation:
    """A conversation as the gateway keeps it for its caller: what a dialect whose clients read a thread's state
    (LangGraph's `GET /threads/{id}/state`) answers with."""

    messages: list[Message]
    state: Any = None
    interrupts: list[str] = field(default_factory=list)
    """The ids of the interrupts it waits on."""


class CallerRuns(Protocol):
    """One caller's runs on one route, wherever they run: what a dialect answers a query with."""

    @property
    def webhooks(self) -> Webhooks | None:
        """The runs' webhooks, on a route that pushes updates; else None."""
        ...

    async def find(self, run_id: str) -> RunState | None:
        """The run as it stands, or None if the caller has no such run."""
        ...

    async def cancel(self, run_id: str) -> RunState | None:
        """Stop the run if it is running (on whichever replica), and the run once it has stopped (or as it stands
        after a few seconds); a run that is not running, as it stands."""
        ...

    async def wait_end(self, run_id: str, seconds: float) -> None:
        """Until the run's running request has ended and its conversation is stored, or `seconds` have passed; at
        once for a run that is not running."""
        ...

    async def save(self, record: RunRecord) -> None:
        """Keep a changed record (a run that waited, cancelled)."""
        ...

    async def forget(self, run_id: str) -> bool:
        """Delete what the gateway keeps of a run that is not running: its record, and the conversation as the run
        left it (`Turn.chains_runs`); False if the caller had no such run."""
        ...

    async def newest(self, after: str | None, limit: int, *, conversation: str | None = None) -> list[RunRecord]:
        """The caller's runs, most recently changed first, after the cursor of an earlier answer's last record; only
        those of `conversation` (a client's conversation id) when it is given. Raises `ListingNeedsCaller` for a
        listing of every conversation on a route whose callers cannot be told apart."""
        ...

    def follow(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        """The run's updates from the `after`-th on, as they come, and those of the requests that continue it while
        it waits for its client, until it ends (or nothing comes for as long as a run may last)."""
        ...

    @property
    def agent(self) -> str:
        """The agent the route runs, as a listing of agents names it (the route's `upstream.agent`, or its name)."""
        ...

    async def conversation(self, conversation_id: str) -> KeptConversation | None:
        """The caller's conversation of that (client's) id, as the gateway keeps it; None if it keeps none."""
        ...


@dataclass(frozen=True, slots=True)
class RunQuery:
    """A request about runs rather than a new run."""

    name: str
    """What it asks, in the dialect's words (A2A's method; a `RunPath`'s name)."""
    run_id: str | None
    """The run it is about, if one (for the access log)."""
    request: dict[str, Any]
    """The query's JSON body, or a `RunPath` query's query string parameters."""
    streams: bool = False
    """Whether the answer is a stream (a watcher): it takes a stream slot like a run."""


@dataclass(frozen=True, slots=True)
class RunPath:
    """A query at a path under the dialect's own, the run's id in the path (Responses' `GET /v1/responses/{id}`,
    `POST /v1/responses/{id}/cancel`): read as a `RunQuery` named `name`, whose request is the query string's
    parameters."""

    method: str
    name: str
    suffix: str = ""
    """What follows the run's id in the path ("" or "/cancel")."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A query's answer in one body."""

    body: bytes
    status: int = 200
    headers: Mapping[str, str] = field(default_factory=lambda: {"content-type": "application/json"})


class FinalFrame(bytes):
    """A streamed answer's frame that ends it: written as the answer's last piece rather than before an empty one,
    so that an endpoint that chains runs after the answer (`Answered.then`) is given it."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class StreamedAnswer:
    """A query's answer as a stream: the frames as they come (a `FinalFrame` ends it), a keep-alive when none
    does."""

    frames: AsyncIterator[bytes]
    headers: Mapping[str, str]
    keep_alive: bytes


@dataclass(frozen=True, slots=True)
class Followed:
    """A query that follows a run by the conversation it runs in (A2A's `SubscribeToTask`, Responses'
    `GET /v1/responses/{id}?stream=true`): on a resumable route, a run of that conversation that a client of any
    dialect started is sent to it as its own dialect writes it (`gateway.server.stream.translated`)."""

    conversation: str
    turn: Turn
    """What the follower's reply is written for: its encoder's request (the JSON-RPC id it answers, the ids it names
    the run by)."""
    after: int = 0
    """The pieces of that reply the follower has already (Responses' `starting_after`): it is sent the rest."""
    ended: bool = False
    """Whether a run that has ended is followed too, while its reply is kept: the follower named a position in it
    (the rest is its, as for the run's own client), or its dialect streams ended runs again (Responses' retrieve).
    Else only a running run is (a subscriber of A2A's, as its own tasks, has nothing to subscribe to once it ended)."""


@dataclass(frozen=True, slots=True)
class RunQueries(Capability):
    """What a dialect whose clients ask about their runs says about them."""

    read: Callable[[dict[str, Any]], RunQuery | None]
    """A request about runs, or None for a new run."""
    answer: Callable[[RunQuery, CallerRuns], Awaitable[Answer | StreamedAnswer]]
    new_log: Callable[[Turn], RunLog]
    """A log for a run (or the request that continues it) that `turn` starts."""
    continues: Callable[[Turn], str | None]
    """The run a request continues, if it names one: the run must exist and wait for its client."""
    continued: Callable[[Turn, RunRecord], Turn]
    """A request that continues a run, given the run's record: its conversation the run's when it named none, and
    what its reply builds on."""
    resumes: Callable[[Turn], bool] = lambda turn: False
    """Whether the run's feed keeps all its client is sent, for the client to come back to (MCP's call stream, by
    `Last-Event-ID`): the run goes on when its client leaves, as on a resumable route."""
    left_tools_wait: bool = False
    """Whether a run that ends on calls of the client's own tools waits for their results, sent on the run (A2A's
    input-required task, continued by a `function_response`), rather than having ended (a Responses response that
    ends on function calls is completed; the next response carries the outputs)."""
    webhooks: Callable[[Turn], list[Webhook]] = lambda turn: []
    """The webhooks a request registers for its run as it starts it (A2A's `configuration.pushNotificationConfig`)."""
    paths: tuple[RunPath, ...] = ()
    """Queries at paths under the dialect's own, the run's id in the path (Responses'); `read` reads those that come
    in a body (A2A's)."""
    follows: Callable[[RunQuery], Followed | None] = lambda query: None
    """A query that may follow a conversation's run started by any dialect's client (see `Followed`); on a
    resumable route, one whose conversation has a run running is answered so, any other as the dialect answers it."""
