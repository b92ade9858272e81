// Drive the real @ag-ui/client 1.0.0 HttpAgent against a live AG-UI endpoint, step by step, on ONE agent object
// (so the history accumulates client-side exactly as in an app), and report what the client ended up with.
//
// stdin (the "plan"):
//   {
//     "url": "http://127.0.0.1:PORT/agui",
//     "threadId": "thread-1",
//     "headers"?: {...},                 // extra request headers
//     "tools"?: [...],                   // default `tools` for every step (a step's own `tools` wins)
//     "timeoutMs"?: 20000,               // per step; on expiry the run is aborted (agent.abortRun())
//     "proto"?: true,                    // ask for protobuf (Accept: application/vnd.ag-ui.event+proto), as an
//                                        //   app does with the package's own requestInit override; the client
//                                        //   picks its reader by the reply's content type
//     "steps": [{
//       "edit"?: {index, content},       // an app editing a message: agent.setMessages with the messages before
//                                        //   it and it, its content replaced (what came after it is dropped)
//       "messages"?: [{id?, role, content, ...}],  // added (agent.addMessages) before the run; id generated if absent
//       "tools"?: [{name, description, parameters}],
//       "state"?: {...},                 // agent.setState(state) before the run
//       "resume"?: [{interruptId?, status, payload?}],  // an entry without interruptId takes the id of
//                                        //   agent.pendingInterrupts[same index] (ids are not known in advance)
//       "forwardedProps"?: {...},
//       "context"?: [...],
//       "runId"?: "run-1",
//       "toolResults"?: {"<toolName>": "<result>"}  // after the run: a role "tool" message for every pending
//                                        //   (unanswered) call of that tool in the run's new messages
//     }, ...]
//   }
//
// stdout: {"steps": [{
//   "types": [...],                      // event types after the client's pipeline (subscriber onEvent)
//   "events": [...],                     // the events themselves
//   "terminal": bool,                    // a RUN_FINISHED or RUN_ERROR came (the client does not check this)
//   "finished": {outcome, result?, interrupts?, pendingToolCallIds?} | null,   // onRunFinishedEvent
//   "runError": {...RUN_ERROR event} | null,                                   // onRunErrorEvent
//   "error": "AGUIError: ..." | null,    // runAgent rejected (protocol violation, HTTP error, pending interrupt)
//   "timedOut": bool,
//   "warnings": [...],                   // console.warn from the client during the step
//   "requests": [{...RunAgentInput}],    // the POST bodies the agent sent in this step
//   "contentTypes": [...],               // the replies' content types
//   "newMessages": [...],                // messages the run added (runAgent's newMessages, or by id on failure)
//   "toolMessages": [...],               // role "tool" messages added by toolResults
//   "messages": [...], "state": ..., "pendingInterrupts": [...]   // agent.* after the step
// }]}
// Always exits 0; the Python caller decides.
import { format } from "node:util";
import { randomUUID } from "node:crypto";
import { HttpAgent } from "@ag-ui/client";
import { AGUI_MEDIA_TYPE } from "@ag-ui/proto";

// Must not be set, or the compatibility layer silences its warnings.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

let warnings = [];
console.warn = (...args) => warnings.push(format(...args));
// runAgent logs "Agent execution failed:" before rejecting; the rejection is reported instead.
console.error = () => {};

const describe = (e) => `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`;
const clone = (x) => (x === undefined ? null : JSON.parse(JSON.stringify(x)));

let input = "";
for await (const chunk of process.stdin) input += chunk;
const plan = JSON.parse(input);

let requests = [];
let contentTypes = [];
// HttpAgent asks for SSE; an app that wants protobuf overrides requestInit, as @ag-ui/proto's docs show.
class ProtoHttpAgent extends HttpAgent {
  requestInit(input) {
    const init = super.requestInit(input);
    return { ...init, headers: { ...init.headers, Accept: `${AGUI_MEDIA_TYPE}, text/event-stream;q=0.5` } };
  }
}
const Agent = plan.proto ? ProtoHttpAgent : HttpAgent;
const agent = new Agent({
  url: plan.url,
  threadId: plan.threadId ?? "thread-1",
  headers: plan.headers ?? {},
  initialMessages: [],
  initialState: {},
  fetch: (url, init) => {
    try {
      requests.push(JSON.parse(init.body));
    } catch {
      requests.push(init.body ?? null);
    }
    return fetch(url, init).then((response) => {
      contentTypes.push(response.headers.get("content-type"));
      return response;
    });
  },
});

function resumeEntries(resume) {
  if (resume === undefined) return undefined;
  return resume.map((entry, index) =>
    entry.interruptId === undefined
      ? { ...entry, interruptId: agent.pendingInterrupts[index]?.id ?? `missing-interrupt-${index}` }
      : entry,
  );
}

function answerTools(toolResults, newMessages) {
  const answered = new Set(agent.messages.filter((m) => m.role === "tool").map((m) => m.toolCallId));
  const added = [];
  for (const message of newMessages) {
    if (message.role !== "assistant") continue;
    for (const call of message.toolCalls ?? []) {
      const name = call.function?.name;
      if (!Object.hasOwn(toolResults, name) || answered.has(call.id)) continue;
      const result = toolResults[name];
      const tool = {
        id: `tool-result-${randomUUID()}`,
        role: "tool",
        toolCallId: call.id,
        content: typeof result === "string" ? result : JSON.stringify(result),
      };
      answered.add(call.id);
      added.push(tool);
    }
  }
  if (added.length) agent.addMessages(added);
  return added;
}

async function runStep(step) {
  warnings = [];
  requests = [];
  contentTypes = [];
  const events = [];
  let finished = null;
  let runError = null;
  let error = null;
  let timedOut = false;

  if (step.edit) {
    const { index, content } = step.edit;
    agent.setMessages([...agent.messages.slice(0, index), { ...agent.messages[index], content }]);
  }
  if (step.messages?.length) {
    agent.addMessages(step.messages.map((m) => ({ id: m.id ?? `msg-${randomUUID()}`, ...m })));
  }
  if (step.state !== undefined) agent.setState(step.state);
  const known = new Set(agent.messages.map((m) => m.id));

  const parameters = { tools: step.tools ?? plan.tools ?? [] };
  for (const key of ["runId", "forwardedProps", "context"]) {
    if (step[key] !== undefined) parameters[key] = step[key];
  }
  const resume = resumeEntries(step.resume);
  if (resume !== undefined) parameters.resume = resume;

  const subscriber = {
    onEvent: ({ event }) => void events.push(clone(event)),
    onRunFinishedEvent: ({ outcome, result, interrupts, pendingToolCallIds }) => {
      finished = { outcome };
      if (result !== undefined) finished.result = clone(result);
      if (interrupts !== undefined) finished.interrupts = clone(interrupts);
      if (pendingToolCallIds !== undefined) finished.pendingToolCallIds = clone(pendingToolCallIds);
    },
    onRunErrorEvent: ({ event }) => void (runError = clone(event)),
  };

  let newMessages;
  const timer = setTimeout(() => {
    timedOut = true;
    agent.abortRun();
  }, step.timeoutMs ?? plan.timeoutMs ?? 20000);
  try {
    const outcome = await agent.runAgent(parameters, subscriber);
    newMessages = outcome.newMessages;
  } catch (e) {
    error = describe(e);
  } finally {
    clearTimeout(timer);
  }
  newMessages ??= agent.messages.filter((m) => !known.has(m.id));

  const toolMessages = step.toolResults ? answerTools(step.toolResults, newMessages) : [];
  const types = events.map((e) => e.type);
  return {
    types,
    events,
    terminal: types.includes("RUN_FINISHED") || types.includes("RUN_ERROR"),
    finished,
    runError,
    error,
    timedOut,
    warnings,
    requests,
    contentTypes,
    newMessages: clone(newMessages),
    toolMessages,
    messages: clone(agent.messages),
    state: clone(agent.state),
    pendingInterrupts: clone(agent.pendingInterrupts),
  };
}

const steps = [];
for (const step of plan.steps ?? []) steps.push(await runStep(step));
process.stdout.write(JSON.stringify({ steps }), () => process.exit(0));
