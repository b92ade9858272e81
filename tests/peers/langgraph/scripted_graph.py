"""A scripted LangGraph graph that needs no model, served by `langgraph dev` (see `tests/peers_env.py`).

The graph is `agent` (a scripted chat model that streams its reply word by word, so that `messages-tuple` carries
real token chunks) and `tools` (the server's own tool). What `agent` does with the last message, first match wins:

    a resume (`Command(resume=...)`)  "Resumed with <answer as JSON>."
    a tool message (a client tool's result)  "The tool said: <content>."
    "weather"    calls its own tool get_weather(city="Paris"), then "It is sunny, 21C in Paris."
    "delete"     calls its own tool delete_file(path="notes.txt"), which asks for a human's review first as
                 LangChain's `HumanInTheLoopMiddleware` asks: `interrupt({"action_requests", "review_configs"})`,
                 answered `{"decisions": [{"type": "approve"} | {"type": "reject", "message"?}]}` (anything else
                 fails the run, as the middleware does); then "The tool said: <its result or the rejection>."
    "tool"       calls the client's first tool (`input.tools`), or get_location, and ends: the client runs it
    "interrupt"  `interrupt({"question": "Continue?", "options": ["yes", "no"]})`
    "fail", "error"  raises ValueError("scripted failure")
    "think"      reasons first (a `reasoning` content block), then "I have thought about it."
    "slow"       20 words, 0.05 s apart
    "hang"       a first word, then waits an hour (for cancels and broken connections)
    "state"      sets `count` to 1 in the state
    "custom"     writes {"progress": 50} with the stream writer
    otherwise    "You said: <text>. (turn N)", N the human messages of the thread
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.types import interrupt


class ScriptedModel(BaseChatModel):
    """Says `reply`, a word at a time, `gap` seconds apart (and waits `hang` seconds after the first word)."""

    reply: str = ""
    gap: float = 0.0
    hang: float = 0.0
    reasoning: str = ""

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply))])

    async def _astream(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
        if self.reasoning:
            thought = ChatGenerationChunk(message=AIMessageChunk(content=[{"type": "reasoning",
                                                                            "reasoning": self.reasoning}]))
            if run_manager is not None:
                await run_manager.on_llm_new_token("", chunk=thought)
            yield thought
        words = self.reply.split(" ")
        for index, word in enumerate(words):
            if index == 1 and self.hang:
                await asyncio.sleep(self.hang)
            elif index and self.gap:
                await asyncio.sleep(self.gap)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=word + ("" if index == len(words) - 1 else " ")))
            if run_manager is not None:
                await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk


class State(MessagesState):
    tools: list[dict[str, Any]]
    count: int


async def _say(state: State, text: str, **options: Any) -> dict[str, Any]:
    return {"messages": [await ScriptedModel(reply=text, **options).ainvoke(state["messages"])]}


async def agent(state: State) -> dict[str, Any]:
    last = state["messages"][-1]
    if isinstance(last, ToolMessage):
        if last.name == "get_weather":
            return await _say(state, "It is sunny, 21C in Paris.")
        return await _say(state, f"The tool said: {last.content}.")
    text = last.content if isinstance(last.content, str) else str(last.content)
    lowered = text.lower()
    if "weather" in lowered:
        return {"messages": [AIMessage("", tool_calls=[{"id": f"call_{len(state['messages'])}", "name": "get_weather",
                                                          "args": {"city": "Paris"}}])]}
    if "delete" in lowered:
        return {"messages": [AIMessage("", tool_calls=[{"id": f"call_{len(state['messages'])}", "name": "delete_file",
                                                          "args": {"path": "notes.txt"}}])]}
    if "tool" in lowered:
        offered = state.get("tools") or []
        name = offered[0]["name"] if offered else "get_location"
        return {"messages": [AIMessage("", tool_calls=[{"id": f"call_client_{len(state['messages'])}", "name": name,
                                                          "args": {"question": "Where are you?"}}])]}
    if "interrupt" in lowered:
        answer = interrupt({"question": "Continue?", "options": ["yes", "no"]})
        return await _say(state, f"Resumed with {json.dumps(answer)}.")
    if "fail" in lowered or "error" in lowered:
        raise ValueError("scripted failure")
    if "custom" in lowered:
        get_stream_writer()({"progress": 50})
    if "state" in lowered:
        return {**await _say(state, "Counted."), "count": 1}
    if "think" in lowered:
        return await _say(state, "I have thought about it.", reasoning="The user wants me to think.")
    if "slow" in lowered:
        return await _say(state, " ".join(f"w{i}" for i in range(20)), gap=0.05)
    if "hang" in lowered:
        return await _say(state, "Let me think about that", hang=3600.0)
    turn = sum(isinstance(m, HumanMessage) for m in state["messages"])
    return await _say(state, f"You said: {text}. (turn {turn})")


async def tools(state: State) -> dict[str, Any]:
    call = state["messages"][-1].tool_calls[0]
    if call["name"] == "delete_file":
        request = {"action_requests": [{"name": call["name"], "args": call["args"],
                                        "description": f"Tool execution requires approval\n\nTool: {call['name']}"
                                                       f"\nArgs: {call['args']}"}],
                   "review_configs": [{"action_name": call["name"], "allowed_decisions": ["approve", "reject"]}]}
        decision = interrupt(request)["decisions"][0]  # what the middleware reads: a KeyError otherwise
        if decision["type"] == "reject":
            return {"messages": [ToolMessage(decision.get("message") or "rejected", tool_call_id=call["id"],
                                             name=call["name"], status="error")]}
        return {"messages": [ToolMessage(f"deleted {call['args']['path']}", tool_call_id=call["id"],
                                         name=call["name"])]}
    return {"messages": [ToolMessage("sunny, 21C in Paris", tool_call_id=call["id"], name=call["name"])]}


def _next(state: State) -> str:
    last = state["messages"][-1]
    if isinstance(last, AIMessage) and any(c["name"] in ("get_weather", "delete_file") for c in last.tool_calls):
        return "tools"
    return END


builder = StateGraph(State)
builder.add_node("agent", agent)
builder.add_node("tools", tools)
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", _next, ["tools", END])
builder.add_edge("tools", "agent")
graph = builder.compile()
