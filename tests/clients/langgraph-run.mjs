// One conversation with a LangGraph server (or the gateway) through the real @langchain/langgraph-sdk 1.15.0
// Client, the calls useStream makes: the JS twin of tests/peers/langgraph_client.py.
//
//   node langgraph-run.mjs <apiUrl> '<plan JSON>'
//
// The plan is a list of steps, run in order on one thread (the first `thread` step creates it):
//   {"op": "assistants"}                                   client.assistants.search()
//   {"op": "thread"}                                       client.threads.create()
//   {"op": "stream", "text": "...", "modes": [...]}        client.runs.stream(thread, assistant, {input, streamMode})
//   {"op": "stream", "resume": <any>}                      ... {command: {resume}}
//   {"op": "stream", "text": "...", "tools": [...]}        ... offering client tools ({name, description, parameters}
//                                                          as input.tools, which the gateway reads)
//   {"op": "stream", "toolResult": "..."}                  ... answering the last call the previous run streamed
//                                                          with a tool message (a client tool's result)
//   {"op": "stream", "text": "...", "cancelAfter": N}      cancels the run (client.runs.cancel) after N parts
//   {"op": "state"} / {"op": "history"}                    client.threads.getState / getHistory (useStream's)
//
// stdout: one JSON line per step, {"op", "result"} or {"op", "parts": [{event, data}]}; a step that throws is
// {"op", "error": "<Name>: <message>"} and the plan goes on. Exit status 0.
import { Client } from "@langchain/langgraph-sdk";

const [apiUrl, planText] = process.argv.slice(2);
const client = new Client({ apiUrl });
let threadId;
let assistantId = "agent";
let lastCall;

async function stream(step) {
  const payload = { streamMode: step.modes ?? ["values", "messages-tuple", "updates"] };
  if (step.resume !== undefined) payload.command = { resume: step.resume };
  else if (step.toolResult !== undefined) {
    payload.input = { messages: [{ type: "tool", tool_call_id: lastCall, content: step.toolResult }] };
  } else payload.input = { messages: [{ type: "human", content: step.text ?? "" }] };
  if (step.tools) payload.input = { ...payload.input, tools: step.tools };
  const parts = [];
  let runId;
  for await (const part of client.runs.stream(threadId, assistantId, payload)) {
    parts.push({ event: part.event, data: part.data });
    if (part.event === "metadata") runId = part.data.run_id;
    if (part.event === "messages") {
      for (const chunk of part.data[0]?.tool_call_chunks ?? []) if (chunk.id) lastCall = chunk.id;
    }
    if (step.cancelAfter && parts.length === step.cancelAfter) {
      await client.runs.cancel(threadId, runId);
      parts.push({ event: "cancelled", data: runId });
    }
  }
  return parts;
}

for (const step of JSON.parse(planText)) {
  try {
    if (step.op === "assistants") {
      const result = await client.assistants.search();
      assistantId = result[0]?.graph_id ?? assistantId;
      console.log(JSON.stringify({ op: step.op, result }));
    } else if (step.op === "thread") {
      const result = await client.threads.create();
      threadId = result.thread_id;
      console.log(JSON.stringify({ op: step.op, result }));
    } else if (step.op === "stream") {
      console.log(JSON.stringify({ op: step.op, parts: await stream(step) }));
    } else if (step.op === "state") {
      console.log(JSON.stringify({ op: step.op, result: await client.threads.getState(threadId) }));
    } else if (step.op === "history") {
      console.log(JSON.stringify({ op: step.op, result: await client.threads.getHistory(threadId) }));
    }
  } catch (error) {
    console.log(JSON.stringify({ op: step.op, error: `${error?.name}: ${error?.message}` }));
  }
}
