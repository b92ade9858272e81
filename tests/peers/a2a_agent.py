"""A real A2A server (`a2a-sdk` 1.3.0, the official Python SDK) over a scripted agent.

Runs in its own venv (`tests/peers/requirements-a2a.txt`), never in the gateway's:

    .peers/a2a/bin/python -m uvicorn --app-dir tests/peers a2a_agent:app --host 127.0.0.1 --port 0

Everything but `/healthz` is the SDK's own: `AgentExecutor`, `DefaultRequestHandler` (`DefaultRequestHandlerV2`),
`InMemoryTaskStore`, and the Starlette routes of `create_agent_card_routes`, `create_jsonrpc_routes` and
`create_rest_routes`, both with `enable_v0_3_compat=True`. Routes:

    GET  /.well-known/agent-card.json   the card (streaming agent); its interface URLs name the host of the request
    POST /                              JSON-RPC: 1.0 methods (SendMessage, SendStreamingMessage, CancelTask, GetTask,
                                        SubscribeToTask, ListTasks, ...) and, the compat layer, 0.3's (message/send,
                                        message/stream, tasks/get, tasks/cancel, tasks/resubscribe, ...)
    POST /message:send, /message:stream, /tasks/{id}:cancel, GET /tasks/{id}, ...   HTTP+JSON 1.0
    POST /v1/message:send, /v1/message:stream, ...                                  HTTP+JSON 0.3 (compat)
    /plain/...                          the same agent, same routes under /plain, with `capabilities.streaming`
                                        false: SendStreamingMessage is refused there, SendMessage works
    /rest-only/...                      the same agent on HTTP+JSON only: no JSON-RPC route, and a card listing
                                        HTTP+JSON alone
    GET  /healthz                       ours, for the launcher
    GET  /bindings                      ours: how many calls each binding got ({"jsonrpc", "rest", "grpc"}), but
                                        those a test makes to look (with an `x-test-probe` header)

With `A2A_PEER_GRPC=1` in its environment it also serves gRPC (`lf.a2a.v1.A2AService`, the SDK's `GrpcHandler`
on a `grpc.aio` server, plaintext on a port of its own), and the card lists GRPC 1.0 first (`127.0.0.1:<port>`).

With `A2A_CARD_SIGNING_KEY` (a PEM private key, EC P-256) in its environment, each card it serves is signed by the
SDK's own signer (`create_agent_card_signer`, ES256, kid `peer-key`) after its interfaces are set; with
`A2A_CARD_TAMPERED=1` too, its description is changed after signing, as a card altered on the way would be.

The card lists four interfaces, in this order: JSONRPC 1.0 (`<base>/`), HTTP+JSON 1.0 (`<base>`), JSONRPC 0.3 and
HTTP+JSON 0.3 (same URLs). The SDK client picks the first interface of a binding it speaks, at version 1.0 if listed.

The SDK keeps the conversation: tasks, each with its `history` (the user messages and the agent's earlier status
messages), in the task store. "history" below counts the messages of every task of the request's `contextId` in
the store, the current one included, when the agent starts on the turn (the task's first save and the executor run
concurrently, so the current task's own message is added by hand when the store does not have it yet).

What the agent does with the last user message's text, first match wins:

    a message to a task in INPUT_REQUIRED or AUTH_REQUIRED (same taskId)
                 WORKING, then "Resumed with <text>" as artifact chunks, then COMPLETED
    "hang"       WORKING, one chunk "Let me think about that" (not the last chunk), then waits to be cancelled:
                 `cancel()` enqueues CANCELED with the status message "Cancelled at the client's request.", so
                 CancelTask's answer and the open stream both carry it
    "crash"      WORKING, one chunk "partial answer...", then the executor raises RuntimeError("scripted crash"):
                 the SDK records FAILED (with no status message) and ends the stream with an `event: error` frame
                 (JSON-RPC -32603, the exception's text) instead of a status update
    "fail"       WORKING, one chunk "partial answer...", then FAILED with the status message
                 "scripted upstream failure"
    "approve"    WORKING, then INPUT_REQUIRED whose status message holds the text "Delete /tmp/demo? (approve/deny)"
                 and the long-running call as a DataPart: data {id, name: delete_file, args: {path: /tmp/demo}},
                 metadata {adk_type: function_call, adk_is_long_running: true}
    "interrupt"  WORKING, then INPUT_REQUIRED with the status message "Continue? (yes/no)"
    "auth"       WORKING, then AUTH_REQUIRED with the status message "Please sign in, then say done."
    "weather"    Google ADK's convention for tool activity: WORKING status messages, the first with a DataPart
                 data {id, name: get_weather, args: {city: Paris}}, metadata {adk_type: function_call}, the second
                 data {id, name: get_weather, response: {result: "sunny, 21C in Paris"}}, metadata
                 {adk_type: function_response}; then "Tool get_weather said: sunny, 21C in Paris." as artifact
                 chunks, then COMPLETED
    "message"    no task: a single agent Message "echo: <text> | context=<contextId>" (with no taskId; the SDK
                 stores no task for it, so it counts in no later "history")
    "slow"       WORKING, 40 artifact chunks "chunk <i> ", 0.1 s apart, then COMPLETED
    anything else  WORKING, "echo: <text> | context=<contextId> | history=<n>" as artifact chunks, then COMPLETED

A new task's stream starts with the Task (SUBMITTED, enqueued by the agent), a resumed one with the WORKING status
update. Text is one artifact ("response") per turn, sent in chunks: the first with `append` false, the rest with
`append` true, the last with `lastChunk` true.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import Any

from a2a.helpers import new_data_part, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    ListTasksRequest,
    Part,
    TaskState,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route

STEP = 0.01  # seconds between chunks: enough for them to leave in separate writes
SLOW_GAP = 0.1
HANG = 3600.0
WAITING = (TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED)
KEYWORDS = ("hang", "crash", "fail", "approve", "interrupt", "auth", "weather", "message", "slow")
"""In priority order."""

BASE_URL: contextvars.ContextVar[str] = contextvars.ContextVar("BASE_URL", default="http://127.0.0.1")
"""The origin the current request was sent to (`http://<Host header>`), for the card's interface URLs."""


def _chunks(text: str, pieces: int = 3) -> list[str]:
    """`text` in about `pieces` runs of whole words; joined they give back the text exactly."""
    words = re.findall(r"\S+\s*|\s+", text) or [text]
    size = max(1, -(-len(words) // pieces))
    return ["".join(words[start:start + size]) for start in range(0, len(words), size)]


def _adk_call(name: str, call_id: str, *, args: dict[str, Any] | None = None,
              response: dict[str, Any] | None = None, long_running: bool = False) -> Part:
    """A function call or response as Google ADK's A2A executor sends it: a DataPart tagged in its metadata."""
    data: dict[str, Any] = {"id": call_id, "name": name}
    if response is None:
        data["args"] = args or {}
    else:
        data["response"] = response
    part = new_data_part(data)
    part.metadata.update({"adk_type": "function_call" if response is None else "function_response"})
    if long_running:
        part.metadata.update({"adk_is_long_running": True})
    return part


class ScriptedAgent(AgentExecutor):
    """Picks its behaviour from keywords in the user's text; see the module docstring."""

    def __init__(self, store: TaskStore) -> None:
        self.store = store

    async def _history(self, context: RequestContext) -> int:
        listed = await self.store.list(ListTasksRequest(context_id=context.context_id or ""), context.call_context)
        count = sum(len(task.history) for task in listed.tasks)
        if context.task_id not in {task.id for task in listed.tasks}:
            count += 1  # the task of this turn is not saved yet: its one message, this turn's
        return count

    async def _say(self, updater: TaskUpdater, chunks: list[str], gap: float = STEP) -> None:
        """One artifact, "response", in `chunks`: the first creates it, the others append, the last says so."""
        artifact_id = str(uuid.uuid4())
        for index, chunk in enumerate(chunks):
            await updater.add_artifact([new_text_part(chunk)], artifact_id=artifact_id, name="response",
                                       append=index > 0, last_chunk=index == len(chunks) - 1)
            await asyncio.sleep(gap)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None and context.message is not None
        text = context.get_user_input()
        keyword = next((k for k in KEYWORDS if k in text.lower()), None)
        task = context.current_task
        # Read now: the SDK updates this very object in place as the events below are saved.
        resuming = task is not None and task.status.state in WAITING
        if task is None and keyword == "message":
            await event_queue.enqueue_event(new_text_message(f"echo: {text} | context={context.context_id}",
                                                             context_id=context.context_id))
            return
        history = await self._history(context)
        if task is None:
            await event_queue.enqueue_event(new_task_from_user_message(context.message))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        await asyncio.sleep(STEP)
        if resuming:
            await self._say(updater, _chunks(f"Resumed with {text}"))
            await updater.complete()
        elif keyword == "hang":
            await updater.add_artifact([new_text_part("Let me think about that")], name="response")
            await asyncio.sleep(HANG)
        elif keyword == "crash":
            await self._say(updater, ["partial answer..."])
            raise RuntimeError("scripted crash")
        elif keyword == "fail":
            await self._say(updater, ["partial answer..."])
            await updater.failed(updater.new_agent_message([new_text_part("scripted upstream failure")]))
        elif keyword == "approve":
            call = _adk_call("delete_file", f"call_{uuid.uuid4().hex[:8]}", args={"path": "/tmp/demo"},
                             long_running=True)
            await updater.requires_input(updater.new_agent_message(
                [new_text_part("Delete /tmp/demo? (approve/deny)"), call]))
        elif keyword == "interrupt":
            await updater.requires_input(updater.new_agent_message([new_text_part("Continue? (yes/no)")]))
        elif keyword == "auth":
            await updater.requires_auth(updater.new_agent_message([new_text_part("Please sign in, then say done.")]))
        elif keyword == "weather":
            call_id = f"call_{uuid.uuid4().hex[:8]}"
            result = "sunny, 21C in Paris"
            await updater.start_work(updater.new_agent_message(
                [_adk_call("get_weather", call_id, args={"city": "Paris"})]))
            await asyncio.sleep(STEP)
            await updater.start_work(updater.new_agent_message(
                [_adk_call("get_weather", call_id, response={"result": result})]))
            await asyncio.sleep(STEP)
            await self._say(updater, _chunks(f"Tool get_weather said: {result}."))
            await updater.complete()
        elif keyword == "slow":
            await self._say(updater, [f"chunk {i} " for i in range(40)], SLOW_GAP)
            await updater.complete()
        else:
            await self._say(updater, _chunks(f"echo: {text} | context={context.context_id} | history={history}"))
            await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([new_text_part("Cancelled at the client's request.")]))


GRPC_PORT: list[int] = []
"""The port gRPC is served on, once it is (`A2A_PEER_GRPC=1`)."""
CALLS = {"jsonrpc": 0, "rest": 0, "grpc": 0}


def _interfaces(base: str, jsonrpc: bool = True, grpc: bool = False) -> list[AgentInterface]:
    """JSON-RPC at `<base>/` (unless not `jsonrpc`) and HTTP+JSON under `<base>`, each in 1.0 and (the compat
    layer) 0.3; gRPC first when it is served (the streaming agent's only)."""
    first = [AgentInterface(url=f"127.0.0.1:{GRPC_PORT[0]}", protocol_binding="GRPC", protocol_version="1.0")] \
        if grpc and GRPC_PORT else []
    bindings = (("JSONRPC", f"{base}/"), ("HTTP+JSON", base)) if jsonrpc else (("HTTP+JSON", base),)
    return first + [AgentInterface(url=url, protocol_binding=binding, protocol_version=version)
                    for version in ("1.0", "0.3") for binding, url in bindings]


def _card(streaming: bool) -> AgentCard:
    return AgentCard(
        name="scripted" if streaming else "scripted-plain",
        description="A scripted A2A agent for the agent-gateway tests" + ("" if streaming else " (no streaming)"),
        version="1.0.0",
        supported_interfaces=_interfaces(BASE_URL.get()),  # replaced per request by `_card_modifier`
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[AgentSkill(id="script", name="Scripted replies",
                           description="echo, slow, crash, fail, interrupt, approve, auth, weather, hang, message",
                           tags=["test"], examples=["hello", "what is the weather in Paris?"])],
    )


def _signer() -> Callable[[AgentCard], AgentCard]:
    """The SDK's card signer when the environment gives a key; else the card as it is."""
    key = os.environ.get("A2A_CARD_SIGNING_KEY")
    if not key:
        return lambda card: card
    from a2a.utils.signing import create_agent_card_signer

    sign = create_agent_card_signer(key, {"alg": "ES256", "kid": "peer-key", "typ": "JOSE"})
    tampered = os.environ.get("A2A_CARD_TAMPERED") == "1"

    def signed(card: AgentCard) -> AgentCard:
        sign(card)
        if tampered:
            card.description += "!"
        return card

    return signed


def _card_modifier(prefix: str, jsonrpc: bool) -> Callable[[AgentCard], Awaitable[AgentCard]]:
    signed = _signer()

    async def modify(card: AgentCard) -> AgentCard:
        served = AgentCard()
        served.CopyFrom(card)
        del served.supported_interfaces[:]
        served.supported_interfaces.extend(_interfaces(BASE_URL.get() + prefix, jsonrpc, grpc=not prefix))
        return signed(served)

    return modify


HANDLERS: list[DefaultRequestHandler] = []
"""The root agent's request handler, which gRPC serves too."""


def _agent_routes(prefix: str, streaming: bool, jsonrpc: bool = True) -> list[BaseRoute]:
    card = _card(streaming)
    store = InMemoryTaskStore()
    handler = DefaultRequestHandler(agent_executor=ScriptedAgent(store), task_store=store, agent_card=card)
    if not prefix:
        HANDLERS.append(handler)
    rpc = create_jsonrpc_routes(handler, "/", enable_v0_3_compat=True) if jsonrpc else []
    return [*create_agent_card_routes(card, card_modifier=_card_modifier(prefix, jsonrpc)), *rpc,
            *create_rest_routes(handler, enable_v0_3_compat=True)]


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def bindings(request: Request) -> Response:
    return JSONResponse(CALLS)


@asynccontextmanager
async def serve_grpc(app: Starlette) -> AsyncIterator[None]:
    """gRPC beside HTTP, with `A2A_PEER_GRPC=1`: the SDK's own `GrpcHandler` over the streaming agent's handler."""
    if os.environ.get("A2A_PEER_GRPC") != "1":
        yield
        return
    import grpc.aio
    from a2a.server.request_handlers.grpc_handler import GrpcHandler
    from a2a.types import a2a_pb2_grpc

    class Counted(grpc.aio.ServerInterceptor):  # type: ignore[misc]
        async def intercept_service(self, continuation: Any, details: Any) -> Any:
            CALLS["grpc"] += 1
            return await continuation(details)

    server = grpc.aio.server(interceptors=[Counted()])
    GRPC_PORT.append(server.add_insecure_port("127.0.0.1:0"))
    a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(HANDLERS[0]), server)
    await server.start()
    try:
        yield
    finally:
        await server.stop(0)


Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class RememberOrigin:
    """Sets `BASE_URL` from the request's Host header (the card route's modifier gets no request)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path = scope["path"]
            if scope["method"] == "POST" and b"x-test-probe" not in dict(scope["headers"]):
                binding = "jsonrpc" if path in ("/", "/plain/") else "rest" if ":" in path else None
                if binding is not None:
                    CALLS[binding] += 1
            host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if re.fullmatch(r"[\w.\-\[\]:]+", host):
                BASE_URL.set(f"http://{host}")
        await self.app(scope, receive, send)


# The REST routes end with a catch-all `/{tenant}` mount, so /healthz and /plain come first.
app = RememberOrigin(Starlette(lifespan=serve_grpc, routes=[Route("/healthz", healthz), Route("/bindings", bindings),
                                       Mount("/plain", routes=_agent_routes("/plain", streaming=False)),
                                       Mount("/rest-only", routes=_agent_routes("/rest-only", True, jsonrpc=False)),
                                       *_agent_routes("", streaming=True)]))
