// Drive the official `openai` npm SDK (7.57.0) against a live OpenAI-compatible base URL (the gateway's `/v1`),
// step by step in ONE process, and report what the SDK made of each answer: the JS twin of
// tests/test_openai_sdk.py's Python SDK calls. The streams go through the SDK's own accumulators
// (`chat.completions.stream`, `responses.stream`), which throw on a stream they cannot piece together.
//
// stdin (the "plan"): {"baseURL": "http://127.0.0.1:PORT/v1", "steps": ["chat-stream", ...], "timeoutMs"?: 30000}
//
// steps, each answered under its own name in stdout's object:
//   chat-stream      a streamed completion of "hello" with stream_options.include_usage:
//                    {text, finishReasons, ids, objects, lastChoices, usage, final: {role, content, finish_reason}}
//   chat-body        a one-body completion of "hello": {object, role, content, finish_reason, choices, usage}
//   chat-tool        "use the tool to ask me" offering ask_user, streamed: {first: {finish_reason, content,
//                    toolCalls: [{id, type, name, arguments}]}}; the SDK's own message and a role "tool" answer
//                    "blue" sent back: {second: {content, finish_reason}}; and runTools running ask_user itself
//                    (it answers "green"): {runner: {content, calls: [arguments], roles}}
//   responses-stream a streamed response to "hello": {types, sequence, createdId, deltas, final: {id, status,
//                    output_text, outputTypes}}
//   responses-turns  "hello", then "again" with previous_response_id: {first: {id, output_text}, second:
//                    {output_text, previous_response_id}}
//   responses-tool   "use the tool to ask me" offering ask_user, streamed: {types, sequence, final: {id, status,
//                    calls: [{name, arguments, call_id}]}}; its function_call_output "blue": {after: {output_text}}
//   retrieve         a response created, retrieved, deleted, retrieved again: {created: {id, output_text},
//                    retrieved: {id, status, output_text}, deleted (what the DELETE answered), afterDelete: <error>}
//   errors           each an <error> as below: unknownModel (models.retrieve), emptyMessages (chat, messages: []),
//                    badRole (responses, role "wizard"), unknownPrevious (previous_response_id of nothing),
//                    chatFail and responsesFail ("please fail", streamed: {error, text (what came before)})
//
// <error>: {name, isAPIError, status, message, code, param, type} of what the SDK threw, or null when nothing was.
// A step that throws where it should not is reported as {"thrown": <error>}. Exits 0 unless the plan names a step
// there is none of; the Python caller decides.
import OpenAI, { APIError } from "openai";

const ASK_USER_PARAMETERS = {
  type: "object",
  properties: { question: { type: "string" } },
  required: ["question"],
};
const CHAT_TOOLS = [
  { type: "function", function: { name: "ask_user", description: "Ask the human", parameters: ASK_USER_PARAMETERS } },
];
const RESPONSE_TOOLS = [{ type: "function", name: "ask_user", parameters: ASK_USER_PARAMETERS }];
const MODEL = "agent";
const user = (content) => [{ role: "user", content }];

const described = (e) =>
  e === null
    ? null
    : {
        name: e?.constructor?.name ?? "Error",
        isAPIError: e instanceof APIError,
        status: e?.status ?? null,
        message: String(e?.message ?? e),
        code: e?.code ?? null,
        param: e?.param ?? null,
        type: e?.type ?? null,
      };

async function caught(call) {
  try {
    await call();
  } catch (e) {
    return described(e);
  }
  return null;
}

function streamed(events) {
  return { types: events.map((e) => e.type), sequence: events.map((e) => e.sequence_number) };
}

const STEPS = {
  async "chat-stream"(client) {
    const stream = client.chat.completions.stream({
      model: MODEL, messages: user("hello"), stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    const final = (await stream.finalChatCompletion()).choices[0];
    const choices = chunks.flatMap((c) => c.choices);
    return {
      text: choices.map((c) => c.delta?.content ?? "").join(""),
      finishReasons: choices.map((c) => c.finish_reason).filter((r) => r),
      ids: [...new Set(chunks.map((c) => c.id))],
      objects: [...new Set(chunks.map((c) => c.object))],
      lastChoices: chunks.at(-1).choices.length,
      usage: chunks.at(-1).usage ?? null,
      final: { role: final.message.role, content: final.message.content, finish_reason: final.finish_reason },
    };
  },

  async "chat-body"(client) {
    const completion = await client.chat.completions.create({ model: MODEL, messages: user("hello") });
    const choice = completion.choices[0];
    return {
      object: completion.object, role: choice.message.role, content: choice.message.content,
      finish_reason: choice.finish_reason, choices: completion.choices.length, usage: completion.usage ?? null,
    };
  },

  async "chat-tool"(client) {
    const messages = user("use the tool to ask me");
    const stream = client.chat.completions.stream({ model: MODEL, messages, tools: CHAT_TOOLS });
    const choice = (await stream.finalChatCompletion()).choices[0];
    const calls = choice.message.tool_calls ?? [];
    const first = {
      finish_reason: choice.finish_reason, content: choice.message.content,
      toolCalls: calls.map((c) => ({ id: c.id, type: c.type, name: c.function.name, arguments: c.function.arguments })),
    };
    if (!calls.length) return { first };
    // An app sends back the SDK's own message, whatever the accumulator added to it.
    messages.push(choice.message, { role: "tool", tool_call_id: calls[0].id, content: "blue" });
    const answer = await client.chat.completions.create({ model: MODEL, messages, tools: CHAT_TOOLS });
    const second = { content: answer.choices[0].message.content, finish_reason: answer.choices[0].finish_reason };
    const asked = [];
    const runner = client.chat.completions.runTools({
      model: MODEL, messages: user("use the tool to ask me"),
      tools: [{
        type: "function",
        function: {
          name: "ask_user", description: "Ask the human", parameters: ASK_USER_PARAMETERS,
          function: (args) => { asked.push(args); return "green"; },
        },
      }],
    });
    const content = await runner.finalContent();
    return { first, second, runner: { content, calls: asked, roles: runner.messages.map((m) => m.role) } };
  },

  async "responses-stream"(client) {
    const stream = client.responses.stream({ model: MODEL, input: "hello" });
    const events = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    return {
      ...streamed(events),
      createdId: events[0]?.response?.id ?? null,
      deltas: events.filter((e) => e.type === "response.output_text.delta").map((e) => e.delta).join(""),
      final: { id: final.id, status: final.status, output_text: final.output_text,
               outputTypes: final.output.map((item) => item.type) },
    };
  },

  async "responses-turns"(client) {
    const first = await client.responses.create({ model: MODEL, input: "hello" });
    const second = await client.responses.create({ model: MODEL, input: "again", previous_response_id: first.id });
    return {
      first: { id: first.id, output_text: first.output_text },
      second: { output_text: second.output_text, previous_response_id: second.previous_response_id },
    };
  },

  async "responses-tool"(client) {
    const stream = client.responses.stream({ model: MODEL, input: "use the tool to ask me", tools: RESPONSE_TOOLS });
    const events = [];
    for await (const event of stream) events.push(event);
    const final = await stream.finalResponse();
    const calls = final.output.filter((item) => item.type === "function_call")
      .map(({ name, arguments: args, call_id }) => ({ name, arguments: args, call_id }));
    const result = { ...streamed(events), final: { id: final.id, status: final.status, calls } };
    if (!calls.length) return result;
    const after = await client.responses.create({
      model: MODEL, previous_response_id: final.id, tools: RESPONSE_TOOLS,
      input: [{ type: "function_call_output", call_id: calls[0].call_id, output: "blue" }],
    });
    return { ...result, after: { output_text: after.output_text } };
  },

  async retrieve(client) {
    const created = await client.responses.create({ model: MODEL, input: "hello" });
    const retrieved = await client.responses.retrieve(created.id);
    const deleted = await client.responses.delete(created.id);
    return {
      created: { id: created.id, output_text: created.output_text },
      retrieved: { id: retrieved.id, status: retrieved.status, output_text: retrieved.output_text },
      deleted: deleted ?? null,
      afterDelete: await caught(() => client.responses.retrieve(created.id)),
    };
  },

  async errors(client) {
    const failing = async (open) => {
      let text = "";
      const error = await caught(async () => {
        for await (const part of await open()) {
          text += part.choices?.[0]?.delta?.content ?? (part.type === "response.output_text.delta" ? part.delta : "");
        }
      });
      return { error, text };
    };
    return {
      unknownModel: await caught(() => client.models.retrieve("no-such-model")),
      emptyMessages: await caught(() => client.chat.completions.create({ model: MODEL, messages: [] })),
      badRole: await caught(() =>
        client.responses.create({ model: MODEL, input: [{ type: "message", role: "wizard", content: "x" }] })),
      unknownPrevious: await caught(() =>
        client.responses.create({ model: MODEL, input: "hi", previous_response_id: "resp_nothing" })),
      chatFail: await failing(() =>
        client.chat.completions.create({ model: MODEL, messages: user("please fail"), stream: true })),
      responsesFail: await failing(() => client.responses.create({ model: MODEL, input: "please fail", stream: true })),
    };
  },
};

let input = "";
for await (const chunk of process.stdin) input += chunk;
const plan = JSON.parse(input);
const client = new OpenAI({
  baseURL: plan.baseURL, apiKey: "unused", maxRetries: 0, timeout: plan.timeoutMs ?? 30000,
});
const results = {};
for (const step of plan.steps) {
  if (!(step in STEPS)) throw new Error(`unknown step ${step}; known: ${Object.keys(STEPS).join(", ")}`);
  try {
    results[step] = await STEPS[step](client);
  } catch (e) {
    results[step] = { thrown: described(e) };
  }
}
process.stdout.write(JSON.stringify(results) + "\n");
