"""`agent-gateway check`: the standard conversations, sent to any agent endpoint in its own dialect, each answer
judged by the rules a real client of that dialect holds it to.

A conversation is written once, in canonical turns, and each dialect's `build_request` says it in that dialect;
the answers are read back with the dialect's decoder, to know what the agent did (a tool call to answer, an
interrupt to resume), and judged by the dialect's `judge`, to know what a client would have rejected. A
conversation the agent shows nothing of (no tool called, no interrupt) is skipped, not failed: agents differ in
what they do, not in the rules their streams follow; so is one the dialect cannot hold (a client's tools where it
carries none, a cancel where it answers in one body).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from adapters import registry
from gateway.config import Route
from gateway.config.upstream import endpoints_below
from gateway.conversations.recorder import RunRecorder
from gateway.core import capabilities
from gateway.core.codec import Dialect, UpstreamRequest
from gateway.core.conformance import Answer, Violation
from gateway.core.errors import GatewayError
from gateway.core.events import Event, Interrupt, RunError, TextDelta, ToolCallStart, ToolResult
from gateway.core.ids import new_id
from gateway.core.transports import Unusable
from gateway.core.turn import Message, Resume, Tool, Turn
from gateway.recordings.judged import request_json
from gateway.upstream.http1 import HTTPError, Pool, Target

if TYPE_CHECKING:
    from gateway.server.request.upstream_sessions import KeptSessions

SCENARIOS: dict[str, str] = {
    "text": "a question gets an answer with text",
    "multi-turn": "a second turn on the same conversation is answered",
    "server-tool": "a tool the agent runs itself streams its call and its result",
    "client-tool": "a tool the client offers is called, and the agent goes on from the client's result",
    "interrupt": "the agent stops for a human, and goes on from the answer",
    "error": "a failing run ends with the dialect's own error",
    "cancel": "a client that leaves mid-run leaves the conversation usable",
}
"""Each conversation, and what it proves when it passes."""

PROMPTS: dict[str, str] = {
    "text": "hello",
    "multi-turn": "hello again",
    "server-tool": "what is the weather in Paris?",
    "client-tool": "use the tool to ask me a question",
    "interrupt": "please approve this first (interrupt)",
    "error": "please fail",
    "cancel": "slow: count to twenty",
}
"""What each conversation asks, in words the built-in agent and most test agents act on; `--prompt` changes them."""

CLIENT_TOOL = Tool("ask_user", "Ask the human a question",
                   {"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]})
CLIENT_TOOL_RESULT = "yes"
APPROVAL = {"approved": True}
MAX_REPLY = 32 * 1024 * 1024

Outcome = Literal["pass", "fail", "skip"]


@dataclass(slots=True)
class Step:
    """One request of a conversation and what came of it."""

    request: str
    status: int | None = None
    events: int = 0
    ms: float = 0.0
    violations: list[Violation] = field(default_factory=list)
    notes: list[Violation] = field(default_factory=list)
    """What the dialect's documents ask for and no client enforces: reported, never a failure."""
    error: str | None = None
    """The request failed outright: no connection, a timeout, an oversized reply."""


@dataclass(slots=True)
class Result:
    scenario: str
    outcome: Outcome
    detail: str
    steps: list[Step] = field(default_factory=list)


@dataclass(slots=True)
class Report:
    url: str
    dialect: str
    results: list[Result]

    @property
    def failed(self) -> bool:
        return any(result.outcome == "fail" for result in self.results)

    def counts(self) -> dict[str, int]:
        return {outcome: sum(r.outcome == outcome for r in self.results) for outcome in ("pass", "fail", "skip")}

    def as_json(self) -> dict[str, Any]:
        return {"url": self.url, "dialect": self.dialect, **self.counts(), "results": [asdict(r) for r in self.results]}

    def lines(self) -> list[str]:
        out = [f"agent-gateway check {self.url} ({self.dialect})"]
        width = max(len(name) for name in SCENARIOS)
        for result in self.results:
            out.append(f"  {result.outcome.upper():4}  {result.scenario:{width}}  {result.detail}")
            for step in result.steps:
                for v in step.violations:
                    out += _described(step, v, "")
            notes = {v.rule: (step, v) for step in result.steps for v in step.notes}  # once per rule
            for step, v in notes.values():
                out += _described(step, v, "note: ")
        counts = self.counts()
        out.append(f"{counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped")
        return out


def _described(step: Step, violation: Violation, label: str) -> list[str]:
    where = f", frame {violation.index}" if violation.index is not None else ""
    lines = [f"          {label}{step.request}{where}: {violation.rule}: {violation.message}"]
    if violation.frame is not None:
        lines.append(f"            {violation.frame}")
    return lines


@dataclass(slots=True)
class Reply:
    """An answer read back: the dialect's view of it (events) and what a client would keep of it (recorder)."""

    step: Step
    events: list[Event]
    recorder: RunRecorder
    left_early: bool = False

    @property
    def broken(self) -> bool:
        return bool(self.step.error or self.step.violations)

    @property
    def text(self) -> str:
        return "".join(e.delta for e in self.events if isinstance(e, TextDelta))

    @property
    def run_error(self) -> RunError | None:
        return next((e for e in self.events if isinstance(e, RunError)), None)


class Checker:
    """Talks to one endpoint: a connection pool, the dialect, the headers every request carries."""

    def __init__(self, url: str, dialect: Dialect, *, headers: Mapping[str, str] | None = None,
                 variant: str | None = None, agent: str | None = None, timeout: float = 60.0,
                 prompts: Mapping[str, str] | None = None, target: Target | None = None) -> None:
        self.url = url
        self.dialect = dialect
        self.headers = dict(headers or {})
        self.variant = variant
        self.agent = agent
        """Which of the agents a server hosts each request asks for (an MCP tool, a LangGraph assistant); None for
        the dialect's default."""
        self.timeout = timeout
        self.prompts = {**PROMPTS, **(prompts or {})}
        self.target = target or Target(url, connect_timeout=min(timeout, 10.0))
        """Where requests go: the URL, or a route's upstream as the gateway reaches it (its proxy, its TLS)."""
        self.pool = Pool(user_agent="agent-gateway-check")
        self.unusable: str | None = None
        """Why the upstream's discovery document leaves nothing to call as the gateway is installed."""
        self.sessions: KeptSessions | None = None
        """The conversations' sessions, for a dialect whose servers serve runs only in one (MCP's)."""

    async def run(self, scenarios: Sequence[str] = tuple(SCENARIOS)) -> Report:
        results: list[Result] = []
        try:
            await self._discover()
            for name in scenarios:
                result = await _SCENARIOS[name](self, Conversation(self, name))
                results.append(result)
                if name == scenarios[0] and any(step.status in (None, 404) for step in result.steps):
                    break  # not even a response head, or not the endpoint: nothing else would get further
        finally:
            if self.sessions is not None:  # the sessions it opened, ended at the upstream as the gateway's are
                await self.sessions.close()
            await self.pool.close()
        return Report(self.url, self.dialect.name, results)

    async def _discover(self) -> None:
        """For a dialect whose agents describe themselves (A2A's card), call the endpoint the description names, as
        the gateway does: a base URL is then enough. Without a readable description, the URL as given."""
        from gateway.config import Upstream
        from gateway.server.request.discovery import Discovery

        if self.variant is not None or self.dialect.capability(capabilities.Discovery) is None:
            return
        route = Route(name="check", upstream=Upstream(url=self.url, dialect=self.dialect.name))
        discovery = Discovery(route, self.dialect, self.pool)
        discovery.target = discovery.configured = self.target
        try:
            self.target, self.variant = await discovery.endpoint()
        except Unusable as exc:
            self.unusable = exc.message

    async def exchange(self, turn: Turn, label: str, leave_after_first_event: bool = False) -> Reply:
        step = Step(label)
        if self.unusable is not None:
            step.error = self.unusable
            return Reply(step, [], RunRecorder(), False)
        try:
            session, variant = await self._in_session(turn)
        except GatewayError as error:  # the conversation could not even begin
            step.error = f"opening a session: {error.message}"
            return Reply(step, [], RunRecorder(), False)
        request = self.dialect.build_request(turn, variant)
        headers = {**request.headers, **self.headers, **session}
        decoder = self.dialect.new_decoder()
        decoder.sent(request)
        other_format = False
        """The answer came in another wire format than the dialect's usual one (`WireFormats`): read, not judged."""
        events: list[Event] = []
        body = bytearray()
        answer_headers: dict[str, str] = {}
        left_early = False
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.timeout):
                response = await self.pool.post(self.target, request.body, headers, request.path)
                step.status, answer_headers = response.status, response.headers
                formats = self.dialect.capability(capabilities.WireFormats)
                other = formats.decoder_for(response.headers.get("content-type", ""), MAX_REPLY) \
                    if formats is not None else None
                if other is not None:
                    decoder, other_format = other, True
                    decoder.sent(request)
                try:
                    decoding = _read_as_the_dialect(request, response.status, response.headers)
                    while chunk := await response.read():
                        body += chunk
                        if len(body) > MAX_REPLY:
                            raise _TooLarge
                        if decoding:
                            events += decoder.feed(chunk)
                        if leave_after_first_event and events:
                            left_early = not response.complete
                            break
                finally:
                    response.release()
        except TimeoutError:
            step.error = f"no whole answer within {self.timeout:g} s"
        except _TooLarge:
            step.error = f"the answer exceeded {MAX_REPLY} bytes"
        except HTTPError as exc:
            if step.status is None:
                step.error = f"{type(exc).__name__}: {exc}"
            else:  # what came is judged too: a client would have shown it
                step.error = f"the connection closed before the answer ended ({len(body)} bytes in): {exc}"
        step.ms = round((time.monotonic() - started) * 1000, 1)
        if step.status == 404 and step.error is None:
            step.error = self._not_found(request.path)
        if step.status is not None and not left_early:
            if step.error is None and _read_as_the_dialect(request, step.status, answer_headers):
                events += decoder.close()
            answer = Answer(step.status, answer_headers, bytes(body), request_json(request.body))
            for found in () if other_format else self.dialect.judge(answer):
                (step.notes if found.convention else step.violations).append(found)
        step.events = len(events)
        recorder = RunRecorder()
        recorder.record(events)
        return Reply(step, events, recorder, left_early)

    async def _in_session(self, turn: Turn) -> tuple[dict[str, str], str | None]:
        """For a dialect whose servers serve runs only in a session (MCP's): the conversation's, opened as the
        gateway opens one; the headers its requests carry and the variant the server showed."""
        from gateway.server.request.upstream_sessions import kept_for

        if self.sessions is None:
            self.sessions = kept_for(self.dialect, self.pool, self.target.connect_timeout, self.timeout, True)
        if self.sessions is None:
            return {}, self.variant
        opened = (await self.sessions.opened(turn.conversation_id or "", turn, self.target, self.headers)).opened
        return dict(opened.headers), opened.variant or self.variant

    def _not_found(self, path: str | None) -> str:
        """A 404 says the URL is not the endpoint: what to try, for a base URL (an OpenAI one, `.../v1`, for
        `.../v1/chat/completions` or `.../v1/responses`) or a server's root (the dialect's usual paths)."""
        asked = self.target.url
        url = asked.rstrip("/") + path if path else asked
        meant = endpoints_below(asked, [self.dialect.name, *registry.DIALECTS])
        if not meant and urlsplit(asked).path in ("", "/"):
            meant = [f"{asked.rstrip('/')}{own} ({self.dialect.name})" for own in self.dialect.paths]
        return f"HTTP 404: nothing answers at {url}" + (f"; try {' or '.join(meant)}" if meant else "")


def _read_as_the_dialect(request: UpstreamRequest, status: int, headers: Mapping[str, str]) -> bool:
    """Whether an answer is the dialect's to read, as the gateway reads an upstream's: a 2xx, a one-body reply, or
    a JSON error body where the dialect may answer in one (an MCP server's JSON-RPC error with a 4xx)."""
    if 200 <= status < 300 or not request.streams:
        return True
    return request.json_reply and "json" in headers.get("content-type", "")


class _TooLarge(Exception):
    pass


class Conversation:
    """One conversation's history as a client of the dialect keeps it: the whole of it for a dialect whose servers
    want the whole history, only what is new for one whose servers keep it."""

    def __init__(self, checker: Checker, scenario: str) -> None:
        self.checker = checker
        self.scenario = scenario
        self.id = new_id("check")
        self.history: list[Message] = []
        dialect = checker.dialect
        self.mode = dialect.history_of(checker.variant)
        self.steps: list[Step] = []

    async def send(self, label: str, new: list[Message], *, tools: Sequence[Tool] = (),
                   resume: Sequence[Resume] = (), leave_after_first_event: bool = False) -> Reply:
        messages = new if self.mode == "delta" else [*self.history, *new]
        turn = Turn(messages=list(messages), history=self.mode, conversation_id=self.id, run_id=new_id("run"),
                    tools=list(tools), resume=list(resume), agent=self.checker.agent)
        reply = await self.checker.exchange(turn, label, leave_after_first_event)
        self.steps.append(reply.step)
        self.history += [*new, *reply.recorder.close()]
        return reply

    async def ask(self, label: str, text: str, **options: Any) -> Reply:
        return await self.send(label, [Message("user", text, id=new_id("msg"))], **options)

    def result(self, outcome: Outcome, detail: str) -> Result:
        return Result(self.scenario, outcome, detail, self.steps)

    def broken(self, reply: Reply) -> Result:
        """A request failed or broke the rules: that is the conversation's result, whatever else it showed."""
        if reply.step.error:
            return self.result("fail", f"{reply.step.request}: {reply.step.error}")
        count = sum(len(step.violations) for step in self.steps)
        return self.result("fail", f"{count} violation{'s' * (count != 1)} of the {self.checker.dialect.name} rules")

    def answered(self, reply: Reply, what: str) -> Result | None:
        """Why a reply that should carry on the conversation does not, or None when it does."""
        if reply.broken:
            return self.broken(reply)
        if reply.run_error is not None:
            return self.result("fail", f"{what}: the agent answered with an error: {reply.run_error.message}")
        return None


Scenario = Callable[[Checker, Conversation], Awaitable[Result]]


async def _text(checker: Checker, conversation: Conversation) -> Result:
    reply = await conversation.ask("request 1", checker.prompts["text"])
    if (failed := conversation.answered(reply, "request 1")) is not None:
        return failed
    if not reply.text:
        return conversation.result("fail", "the answer has no text")
    return conversation.result("pass", f"{reply.step.events} events, {len(reply.text)} characters of text")


async def _multi_turn(checker: Checker, conversation: Conversation) -> Result:
    first = await conversation.ask("turn 1", checker.prompts["text"])
    if (failed := conversation.answered(first, "turn 1")) is not None:
        return failed
    second = await conversation.ask("turn 2", checker.prompts["multi-turn"])
    if (failed := conversation.answered(second, "turn 2")) is not None:
        return failed
    if not second.text:
        return conversation.result("fail", "turn 2 has no text")
    sent = "only what is new" if conversation.mode == "delta" else "the whole history"
    return conversation.result("pass", f"turn 2 answered on conversation {conversation.id} (sent {sent})")


async def _server_tool(checker: Checker, conversation: Conversation) -> Result:
    reply = await conversation.ask("request 1", checker.prompts["server-tool"])
    if (failed := conversation.answered(reply, "request 1")) is not None:
        return failed
    names = {e.tool_call_id: e.name for e in reply.events if isinstance(e, ToolCallStart)}
    ran = [names[e.tool_call_id] for e in reply.events if isinstance(e, ToolResult) and e.tool_call_id in names]
    if not ran:
        return conversation.result("skip", "the agent ran no tool of its own (--prompt server-tool=... to ask "
                                           "for one)")
    return conversation.result("pass", f"{', '.join(ran)} called and answered in the stream")


async def _client_tool(checker: Checker, conversation: Conversation) -> Result:
    if "client_tools" not in checker.dialect.carries:
        return conversation.result("skip", f"{checker.dialect.name} cannot carry a client's tools: a run never ends "
                                           "on a tool call for its client to run, nor takes its result")
    reply = await conversation.ask("request 1", checker.prompts["client-tool"], tools=[CLIENT_TOOL])
    if (failed := conversation.answered(reply, "request 1")) is not None:
        return failed
    pending = dict(reply.recorder.pending_tools)
    if not pending:
        return conversation.result("skip", f"the agent left no tool call for the client (offered: "
                                           f"{CLIENT_TOOL.name})")
    results = [Message("tool", CLIENT_TOOL_RESULT, id=new_id("msg"), tool_call_id=call, name=name)
               for call, name in pending.items()]
    after = await conversation.send("request 2 (tool results)", results, tools=[CLIENT_TOOL])
    if (failed := conversation.answered(after, "request 2")) is not None:
        return failed
    return conversation.result("pass", f"{', '.join(pending.values())} called; the agent went on from its result "
                                       f"({after.step.events} events)")


async def _interrupt(checker: Checker, conversation: Conversation) -> Result:
    reply = await conversation.ask("request 1", checker.prompts["interrupt"])
    if (failed := conversation.answered(reply, "request 1")) is not None:
        return failed
    interrupts: list[Interrupt] = reply.recorder.interrupts
    if not interrupts:
        return conversation.result("skip", "the agent did not stop for a human (--prompt interrupt=... to ask for "
                                           "it)")
    resume = [Resume(i.id, payload=APPROVAL, tool_call_id=i.tool_call_id) for i in interrupts]
    after = await conversation.send("request 2 (resume)", [], resume=resume)
    if (failed := conversation.answered(after, "request 2")) is not None:
        return failed
    reasons = ", ".join(i.reason or i.id for i in interrupts)
    return conversation.result("pass", f"stopped for {reasons}; went on from the answer ({after.step.events} events)")


async def _error(checker: Checker, conversation: Conversation) -> Result:
    reply = await conversation.ask("request 1", checker.prompts["error"])
    if reply.broken:
        return conversation.broken(reply)
    if reply.run_error is None:
        return conversation.result("skip", "the agent did not fail (--prompt error=... to make it)")
    return conversation.result("pass", f"the run ended with the dialect's error: {reply.run_error.message}")


async def _cancel(checker: Checker, conversation: Conversation) -> Result:
    if not checker.dialect.build_request(Turn(), checker.variant).streams:
        return conversation.result("skip", f"{checker.dialect.name} answers in one body: nothing to leave mid-run")
    first = await conversation.ask("request 1 (left after its first event)", checker.prompts["cancel"],
                                   leave_after_first_event=True)
    if first.step.error:
        return conversation.broken(first)
    after = await conversation.ask("request 2", checker.prompts["text"])
    if (failed := conversation.answered(after, "request 2, after leaving request 1")) is not None:
        return failed
    if not first.left_early:
        return conversation.result("skip", "the whole answer came before the checker could leave; the next turn "
                                           "was answered")
    return conversation.result("pass", f"left after the first event; the next turn was answered in "
                                       f"{after.step.ms:g} ms")


_SCENARIOS: dict[str, Scenario] = {
    "text": _text, "multi-turn": _multi_turn, "server-tool": _server_tool, "client-tool": _client_tool,
    "interrupt": _interrupt, "error": _error, "cancel": _cancel,
}


async def check(url: str, dialect: str, scenarios: Sequence[str] = tuple(SCENARIOS), **options: Any) -> Report:
    """Run the conversations against `url` and judge every answer."""
    return await Checker(url, registry.get(dialect), **options).run(scenarios)


async def ask_upstream(route: Route) -> tuple[bool, str]:
    """`serve --check --send-request`: one real request ("hello") to a route's upstream, as the gateway reaches it,
    and its reply judged by the dialect's rules, so that a wrong `upstream.dialect` fails here rather than reaching
    clients as RAW events. Whether it passed, and a line saying why."""
    upstream = route.upstream
    report = await check(upstream.url, upstream.dialect, ["text"], headers=upstream.headers,
                         variant=upstream.variant, agent=upstream.agent, timeout=min(route.timeouts.first_event, 30.0),
                         target=upstream.target(route.timeouts.connect))
    [result] = report.results
    problems = [f"{v.rule}: {v.message}" for step in result.steps for v in step.violations]
    problems += [step.error for step in result.steps if step.error and step.error not in result.detail]
    return result.outcome == "pass", "; ".join([result.detail, *problems[:3]])
