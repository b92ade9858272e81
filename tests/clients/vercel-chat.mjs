// Drive the real Vercel AI SDK chat state machine (ai 7.0.173: AbstractChat + DefaultChatTransport, i.e. what
// useChat wraps) against a live UI-message-stream endpoint, step by step, and report what the chat ended up with
// and every POST body the transport sent.
//
// stdin (the "plan"):
//   {
//     "url": "http://127.0.0.1:PORT/api/chat",
//     "chatId": "chat-1",
//     "body"?: {...},          // transport `body`: extra fields merged into every POST
//     "headers"?: {...},       // transport `headers`
//     "inkeep"?: true,         // prepareSendMessagesRequest -> {...body, conversationId: chatId, messages: [last]}
//     "noMessages"?: true,     // prepareSendMessagesRequest -> the default body (id, trigger, messageId), messages: []
//     "timeoutMs"?: 20000,     // per step, for the chat to go idle; then chat.stop() and `timedOut`
//     "maxRequests"?: 10,      // loop guard: the transport's fetch fails after this many POSTs in total
//     "autoSend"?: "both",     // "both" | "tools" | "approvals" | "none": which predicate(s) sendAutomaticallyWhen uses
//     "sdk"?: "ai",            // the `ai` release to run: "ai" (7.0.173), "ai7-strict" (7.0.31), "ai-strict"
//                              //   (6.0.230), "ai5" (5.0.216); 5 has no approvals (its autoSend is tools only)
//     "steps": [
//       {"send": "text", "body"?: {...}}   // chat.sendMessage({text}, {body})
//       {"toolOutputs": {"<toolName>": <output JSON>}}   // chat.addToolOutput for every tool part of that name
//                                          //   in state input-available in the last assistant message
//       {"approve": true|false, "reason"?: "..."}         // chat.addToolApprovalResponse for every part in
//                                          //   state approval-requested
//       {"regenerate": true}               // chat.regenerate(): the last assistant message asked for again
//     ]
//   }
//   By default the chat uses sendAutomaticallyWhen = lastAssistantMessageIsCompleteWithToolCalls ||
//   lastAssistantMessageIsCompleteWithApprovalResponses, so tool outputs and approvals are re-POSTed automatically.
//   NB: the predicates are re-evaluated after EVERY finished response, so a stream whose last step still holds a
//   completed tool call / an approval response makes the real chat POST again, and again (see maxRequests).
//
// stdout: {
//   "steps": [{
//     "status": "ready" | "error" | ...,   // chat.status once idle
//     "error": str | null,                 // chat.error?.message
//     "onError": [str],                    // onError callback messages
//     "data": [{type, id?, data}],         // onData parts
//     "toolCalls": [{toolCallId, toolName, input, ...}],   // onToolCall
//     "finishes": [{finishReason, isAbort, isDisconnect, isError, messageId}],   // onFinish
//     "answered": [str],                   // toolCallIds / approval ids this step answered
//     "requests": [body],                  // POST bodies sent during this step
//     "timedOut": bool,
//     "messages": [UIMessage]              // chat.messages after the step
//   }],
//   "requests": [body],                    // every POST body, in order
//   "loopGuardTripped": bool
// }
// Always exits 0; the Python caller decides.
import { nodeChatOf } from "./node-chat.mjs";

const clone = (x) => (x === undefined ? null : JSON.parse(JSON.stringify(x)));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const isToolPart = (p) => typeof p?.type === "string" && (p.type.startsWith("tool-") || p.type === "dynamic-tool");
const toolName = (p) => (p.type === "dynamic-tool" ? p.toolName : p.type.slice("tool-".length));

let input = "";
for await (const chunk of process.stdin) input += chunk;
const plan = JSON.parse(input);
const sdk = await import(plan.sdk ?? "ai");
const { DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls } = sdk;
const lastAssistantMessageIsCompleteWithApprovalResponses =
  sdk.lastAssistantMessageIsCompleteWithApprovalResponses ?? (() => false);
const NodeChat = nodeChatOf(sdk);
const maxRequests = plan.maxRequests ?? 10;
const autoSend = plan.autoSend ?? "both";
if (!["both", "tools", "approvals", "none"].includes(autoSend)) throw new Error(`bad autoSend: ${autoSend}`);

const allRequests = [];
let loopGuardTripped = false;
let current; // the record of the step being run

const transportOptions = {
  api: plan.url,
  headers: plan.headers ?? {},
  body: plan.body ?? {},
  fetch: async (url, init) => {
    let body;
    try {
      body = JSON.parse(init.body);
    } catch {
      body = init.body ?? null;
    }
    if (allRequests.length >= maxRequests) {
      loopGuardTripped = true;
      throw new Error(`driver loop guard: more than ${maxRequests} requests (automatic re-send loop?)`);
    }
    allRequests.push(body);
    current?.requests.push(body);
    return fetch(url, init);
  },
};
if (plan.inkeep) {
  // Inkeep only reads the LAST message (+ conversationId): the body its docs tell useChat users to send.
  transportOptions.prepareSendMessagesRequest = ({ id, messages, body }) => ({
    body: { ...body, conversationId: id, messages: [messages.at(-1)] },
  });
}

if (plan.noMessages) {
  transportOptions.prepareSendMessagesRequest = ({ id, body, trigger, messageId }) => ({
    body: { ...body, id, messages: [], trigger, messageId },
  });
}

const chat = new NodeChat({
  id: plan.chatId ?? "chat-1",
  transport: new DefaultChatTransport(transportOptions),
  onData: (part) => current?.data.push(clone(part)),
  onError: (e) => current?.onError.push(e?.message ?? String(e)),
  onToolCall: ({ toolCall }) => void current?.toolCalls.push(clone(toolCall)),
  onFinish: ({ message, finishReason, isAbort, isDisconnect, isError }) =>
    void current?.finishes.push({ finishReason: finishReason ?? null, isAbort, isDisconnect, isError,
                                  messageId: message?.id ?? null }),
  sendAutomaticallyWhen: (options) =>
    (autoSend === "both" || autoSend === "tools") && lastAssistantMessageIsCompleteWithToolCalls(options)
      ? true
      : (autoSend === "both" || autoSend === "approvals") && lastAssistantMessageIsCompleteWithApprovalResponses(options),
});

async function settle(timeoutMs) {
  // Idle (ready or error) for 300 ms: automatic follow-up sends are asynchronous.
  const deadline = Date.now() + timeoutMs;
  let idle = 0;
  while (idle < 6) {
    if (Date.now() > deadline) return false;
    await sleep(50);
    idle = chat.status === "ready" || chat.status === "error" ? idle + 1 : 0;
  }
  return true;
}

async function act(step) {
  if (step.send !== undefined) {
    await chat.sendMessage({ text: step.send }, step.body ? { body: step.body } : undefined);
    return;
  }
  if (step.toolOutputs !== undefined) {
    const last = chat.messages.findLast((m) => m.role === "assistant");
    const parts = (last?.parts ?? []).filter(
      (p) => isToolPart(p) && p.state === "input-available" && Object.hasOwn(step.toolOutputs, toolName(p)),
    );
    for (const part of parts) {
      current.answered.push(part.toolCallId);
      const addOutput = (chat.addToolOutput ?? chat.addToolResult).bind(chat); // 5 named it addToolResult
      await addOutput({ tool: toolName(part), toolCallId: part.toolCallId, output: step.toolOutputs[toolName(part)] });
    }
    return;
  }
  if (step.approve !== undefined) {
    const parts = chat.messages.flatMap((m) => m.parts).filter((p) => isToolPart(p) && p.state === "approval-requested");
    for (const part of parts) {
      current.answered.push(part.approval.id);
      await chat.addToolApprovalResponse({ id: part.approval.id, approved: Boolean(step.approve),
                                           ...(step.reason === undefined ? {} : { reason: step.reason }) });
    }
    return;
  }
  if (step.regenerate) {
    await chat.regenerate();
    return;
  }
  throw new Error(`unknown step: ${JSON.stringify(step)}`);
}

const steps = [];
for (const step of plan.steps ?? []) {
  current = { data: [], onError: [], toolCalls: [], finishes: [], answered: [], requests: [] };
  let timedOut = false;
  let thrown = null;
  const timeoutMs = step.timeoutMs ?? plan.timeoutMs ?? 20000;
  try {
    await Promise.race([act(step), sleep(timeoutMs).then(() => { throw new Error("step timed out"); })]);
  } catch (e) {
    thrown = `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`;
  }
  if (!(await settle(timeoutMs))) {
    timedOut = true;
    await chat.stop();
  }
  steps.push({
    status: chat.status,
    error: chat.error?.message ?? null,
    thrown,
    ...current,
    timedOut: timedOut || thrown === "Error: step timed out",
    messages: clone(chat.messages),
  });
}
current = undefined;

process.stdout.write(JSON.stringify({ steps, requests: allRequests, loopGuardTripped }), () => process.exit(0));
