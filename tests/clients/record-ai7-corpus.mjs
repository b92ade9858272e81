// Record the AI SDK 7 corpus: UI message streams written by the real `ai` 7.0.173 server helpers
// (createUIMessageStream + JsonToSseTransformStream, what createUIMessageStreamResponse sends), one per family of
// chunks 7 added or changed, and one with all of them.
//
//   node tests/clients/record-ai7-corpus.mjs tests/fixtures/vercel/ai7
//
// Each stream is checked by the package's own schema and state machine before it is written.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  createUIMessageStream,
  JsonToSseTransformStream,
  parseJsonEventStream,
  readUIMessageStream,
  uiMessageChunkSchema,
} from "ai";

const text = (id, words) => [
  { type: "text-start", id },
  ...words.map((delta) => ({ type: "text-delta", id, delta })),
  { type: "text-end", id },
];

const STREAMS = {
  // An approval asked by the agent and answered by the agent itself (automatic), with its signature and reason.
  approvals: [
    { type: "start", messageId: "msg-approvals" },
    { type: "start-step" },
    ...text("t1", ["Deleting ", "the file."]),
    { type: "tool-input-start", toolCallId: "call-del", toolName: "delete_file" },
    { type: "tool-input-delta", toolCallId: "call-del", inputTextDelta: '{"path":"/tmp/x"}' },
    { type: "tool-input-available", toolCallId: "call-del", toolName: "delete_file", input: { path: "/tmp/x" } },
    { type: "tool-approval-request", approvalId: "appr-1", toolCallId: "call-del", isAutomatic: true,
      signature: "sig-abc", reason: "the path is in /tmp" },
    { type: "tool-approval-response", approvalId: "appr-1", approved: true, reason: "policy: /tmp is scratch" },
    { type: "tool-output-available", toolCallId: "call-del", output: { deleted: true } },
    { type: "finish-step" },
    { type: "finish", finishReason: "stop" },
  ],
  // A provider's own part (custom, by kind), and a file produced while reasoning.
  custom: [
    { type: "start", messageId: "msg-custom" },
    { type: "start-step" },
    { type: "reasoning-start", id: "r1" },
    { type: "reasoning-delta", id: "r1", delta: "Drawing a sketch first." },
    { type: "reasoning-end", id: "r1" },
    { type: "reasoning-file", url: "data:image/png;base64,iVBORw0KGgo=", mediaType: "image/png" },
    { type: "custom", kind: "openai.web-search-call", providerMetadata: { openai: { status: "completed" } } },
    ...text("t1", ["Here ", "it is."]),
    { type: "finish-step" },
    { type: "finish", finishReason: "stop" },
  ],
  // What every version since 5 writes, as 7 writes it: data parts (replaced by id, transient), sources, a file,
  // message metadata, a tool error.
  common: [
    { type: "start", messageId: "msg-common", messageMetadata: { model: "m" } },
    { type: "start-step" },
    { type: "data-progress", id: "p1", data: { pct: 10 } },
    { type: "data-progress", id: "p1", data: { pct: 100 } },
    { type: "data-notice", data: { text: "fyi" }, transient: true },
    { type: "source-url", sourceId: "s1", url: "https://example.com", title: "Example" },
    { type: "file", url: "https://example.com/a.pdf", mediaType: "application/pdf" },
    { type: "tool-input-available", toolCallId: "call-x", toolName: "lookup", input: {} },
    { type: "tool-output-error", toolCallId: "call-x", errorText: "not found" },
    ...text("t1", ["No ", "luck."]),
    { type: "message-metadata", messageMetadata: { usage: { inputTokens: 3, outputTokens: 2 } } },
    { type: "finish-step" },
    { type: "finish", finishReason: "stop", messageMetadata: { done: true } },
  ],
  // A denied approval.
  denied: [
    { type: "start", messageId: "msg-denied" },
    { type: "start-step" },
    { type: "tool-input-available", toolCallId: "call-pay", toolName: "pay", input: { amount: 100 } },
    { type: "tool-approval-request", approvalId: "appr-2", toolCallId: "call-pay" },
    { type: "tool-approval-response", approvalId: "appr-2", approved: false },
    { type: "tool-output-denied", toolCallId: "call-pay" },
    ...text("t1", ["Not ", "paid."]),
    { type: "finish-step" },
    { type: "finish", finishReason: "stop" },
  ],
};

async function record(chunks) {
  const stream = createUIMessageStream({
    execute: ({ writer }) => {
      for (const chunk of chunks) writer.write(chunk);
    },
  });
  const body = stream.pipeThrough(new JsonToSseTransformStream());
  let sse = "";
  for await (const piece of body) sse += piece;
  // The package's own reader must take what its writer wrote.
  const parsed = parseJsonEventStream({ stream: new Response(sse).body, schema: uiMessageChunkSchema });
  const checked = parsed.pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        controller.enqueue(result.value);
      },
    }),
  );
  for await (const _ of readUIMessageStream({ stream: checked, terminateOnError: true })) {
    // read to the end
  }
  return sse;
}

const dir = process.argv[2];
if (!dir) throw new Error("usage: node record-ai7-corpus.mjs <fixtures/vercel/ai7 dir>");
const all = [
  { type: "start", messageId: "msg-everything" },
  ...Object.values(STREAMS).flatMap((chunks) => chunks.filter((c) => !["start", "finish"].includes(c.type))),
  { type: "finish", finishReason: "stop" },
];
for (const [name, chunks] of Object.entries({ ...STREAMS, everything: all })) {
  const sse = await record(chunks);
  writeFileSync(join(dir, `ai7_${name}.sse`), sse);
  console.log(`wrote ai7_${name}.sse (${sse.length} bytes)`);
}
