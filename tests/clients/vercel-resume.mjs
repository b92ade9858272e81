// Drive the real Vercel AI SDK chat (ai 7.0.173: AbstractChat + DefaultChatTransport, what useChat wraps) through a
// dropped connection and a resume through ANOTHER gateway replica, using the AI SDK's resumable-stream contract:
//   GET    {api}/{encodeURIComponent(chatId)}/stream  -> 200 + the active run's UI message stream replayed from the
//                                                       assistant message's `start` chunk, or 204 when no run is active
//   DELETE {api}/{encodeURIComponent(chatId)}/stream  -> the app's stop endpoint: stops the chat's active run
//
// stdin (the "plan"):
//   {
//     "urlA": "http://127.0.0.1:PORT_A/api/chat",   // the replica the chat first POSTs to
//     "urlB": "http://127.0.0.1:PORT_B/api/chat",   // the replica used after the drop (required unless "plain")
//     "chatId"?: "chat-1",
//     "text"?: "hello",           // chat.sendMessage({text})
//     "mode": "resume" | "stop" | "plain",
//        // plain:  send and let the run finish on A (the uninterrupted reference run)
//        // resume: after the drop, a "page reload": a NEW chat with the same id whose messages are only the user
//        //         message(s) (what a server-side DB would hold), transport api = urlB, chat.resumeStream(), wait
//        // stop:   the drop is the app's stop button: chat.stop() (in ai 7 it only aborts the fetch) and, at the
//        //         same time, fetch(DELETE urlB/{chatId}/stream); then, after afterStopMs, a reloaded chat (as in
//        //         resume) calls resumeStream() via urlB (expected: 204, or a stream that ends quickly)
//     "dropAfterChunks"?: 5,      // drop after this many SSE `data:` frames of A's response reached the chat
//     "afterStopMs"?: 300,        // stop mode: wait between the stop and the reloaded chat's resumeStream()
//     "headers"?: {...},          // sent with every request (both transports and the DELETE)
//     "timeoutMs"?: 20000         // per phase (A's send, the resume), then chat.stop() and `timedOut`
//   }
//   The drop: the transport's fetch hands the chat a copy of A's body cut at SSE event boundaries; once
//   dropAfterChunks `data:` frames were passed on, nothing more is read from A, and ~50 ms later (so the chat has
//   applied those frames) chat.stop() aborts the fetch, which cancels the body and closes the TCP connection.
//
// stdout: {
//   "firstMessages": [UIMessage],   // chat A's messages after the drop (after the finish, for plain)
//   "messages": [UIMessage],        // the reloaded chat's messages after resumeStream() (A's, for plain)
//   "resumeStatus": int | null,     // status of the GET .../stream (null: none was made, or it failed)
//   "stopStatus": int | null,       // status of the DELETE .../stream (stop mode)
//   "framesBeforeDrop": int,        // `data:` frames of A's body passed to the chat (all of them if no drop)
//   "dropped": bool,                // the drop happened (false: A's stream ended before dropAfterChunks frames)
//   "resumeFrames": int,            // `data:` frames of the GET .../stream body the reloaded chat read
//   "status": "ready" | "error" | ..., "error": str | null,   // the final chat's status / error?.message
//   "firstStatus": str, "firstError": str | null,            // chat A's, after the drop / finish
//   "onError": [{chat: "A"|"B", message}],                    // onError callbacks
//   "requests": [{chat: "A"|"B"|"app", method, url, status, error?}],   // every HTTP request, in order
//   "finishes": [{chat, finishReason, isAbort, isDisconnect, isError, messageId}],   // onFinish
//   "thrown": str | null,           // a chat call rejected (not expected: the chat reports errors via status)
//   "timedOut": bool
// }
// Exits 0 (the Python caller decides), except on a malformed plan (throws, exit 1).
import { DefaultChatTransport } from "ai";

import { NodeChat } from "./node-chat.mjs";

const clone = (x) => (x === undefined ? null : JSON.parse(JSON.stringify(x)));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const describe = (e) => `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`;
// HttpChatTransport's appendPathToUrl: the path goes before any ?query / #fragment.
function streamUrl(api, chatId) {
  const path = `/${encodeURIComponent(chatId)}/stream`;
  const cut = api.search(/[?#]/);
  const base = cut === -1 ? api : api.slice(0, cut);
  return `${base.endsWith("/") ? base.slice(0, -1) : base}${path}${cut === -1 ? "" : api.slice(cut)}`;
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const plan = JSON.parse(input);
const mode = plan.mode;
if (!["plain", "resume", "stop"].includes(mode)) throw new Error(`bad mode: ${JSON.stringify(mode)}`);
if (typeof plan.urlA !== "string") throw new Error("plan.urlA (string) is required");
if (mode !== "plain" && typeof plan.urlB !== "string") throw new Error(`plan.urlB (string) is required for ${mode}`);
const chatId = plan.chatId ?? "chat-1";
const dropAfter = plan.dropAfterChunks ?? 5;
if (!Number.isInteger(dropAfter) || dropAfter < 1) throw new Error(`bad dropAfterChunks: ${dropAfter}`);
const timeoutMs = plan.timeoutMs ?? 20000;
const afterStopMs = plan.afterStopMs ?? 300;
const headers = plan.headers ?? {};
const DROP_DELAY_MS = 50;

const requests = [];
const finishes = [];
const onErrors = [];

// A copy of an SSE body, passed on whole event by whole event; counts `data:` frames and, with `limit`, stops
// reading the source after that many and calls onLimit once.
function countedBody(source, { onFrame, limit, onLimit }) {
  const reader = source.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = "";
  let halted = false;
  let frames = 0;
  return new ReadableStream({
    async pull(controller) {
      if (halted) return new Promise(() => {}); // stalled until the chat cancels us
      let out = "";
      while (out === "" && !halted) {
        const { done, value } = await reader.read();
        if (done) {
          buffer += decoder.decode();
          if (buffer) controller.enqueue(encoder.encode(buffer));
          controller.close();
          return undefined;
        }
        buffer += decoder.decode(value, { stream: true });
        if (!buffer.endsWith("\r")) buffer = buffer.replace(/\r\n?/g, "\n");
        let end;
        while (!halted && (end = buffer.indexOf("\n\n")) !== -1) {
          const event = buffer.slice(0, end + 2);
          buffer = buffer.slice(end + 2);
          out += event;
          if (/^data:/m.test(event)) {
            frames += 1;
            onFrame(frames);
            if (limit !== undefined && frames >= limit) halted = true;
          }
        }
      }
      controller.enqueue(encoder.encode(out));
      if (halted) onLimit();
      return undefined;
    },
    cancel(reason) {
      return reader.cancel(reason);
    },
  });
}

// The transport's fetch: records every request and hands the chat a counted copy of the body.
function recordingFetch(chat, counting) {
  return async (url, init = {}) => {
    const rec = { chat, method: init.method ?? "GET", url: String(url), status: null };
    requests.push(rec);
    let res;
    try {
      res = await fetch(url, init);
    } catch (e) {
      rec.error = describe(e);
      throw e;
    }
    rec.status = res.status;
    if (!counting || !res.body || !res.ok) return res;
    return new Response(countedBody(res.body, counting), {
      status: res.status, statusText: res.statusText, headers: res.headers,
    });
  };
}

function makeChat(name, api, messages, counting) {
  return new NodeChat({
    id: chatId,
    messages,
    transport: new DefaultChatTransport({ api, headers, fetch: recordingFetch(name, counting) }),
    onError: (e) => onErrors.push({ chat: name, message: e?.message ?? String(e) }),
    onFinish: ({ message, finishReason, isAbort, isDisconnect, isError }) =>
      void finishes.push({ chat: name, finishReason: finishReason ?? null, isAbort, isDisconnect, isError,
                           messageId: message?.id ?? null }),
  });
}

let timedOut = false;
let thrown = null;
// Run one chat call; on timeout stop the chat. Never rejects.
async function phase(chat, call) {
  let timer;
  const timeout = new Promise((r) => { timer = setTimeout(() => r("timeout"), timeoutMs); });
  try {
    if ((await Promise.race([call(), timeout])) === "timeout") {
      timedOut = true;
      await chat.stop();
    }
  } catch (e) {
    thrown ??= describe(e);
  } finally {
    clearTimeout(timer);
  }
}

async function stopEndpoint() {
  const url = streamUrl(plan.urlB, chatId);
  const rec = { chat: "app", method: "DELETE", url, status: null };
  requests.push(rec);
  try {
    const res = await fetch(url, { method: "DELETE", headers, signal: AbortSignal.timeout(timeoutMs) });
    rec.status = res.status;
    await res.arrayBuffer().catch(() => {});
  } catch (e) {
    rec.error = describe(e);
  }
  return rec.status;
}

// ---------------------------------------------------------------- phase 1: chat A POSTs to urlA (and drops)
let framesBeforeDrop = 0;
let dropped = false;
let dropDone; // resolves once the drop (stop + DELETE) is complete
let stopStatus = null;
let chatA;
const dropOn = mode === "plain" ? undefined : dropAfter;
chatA = makeChat("A", plan.urlA, [], {
  onFrame: (n) => { framesBeforeDrop = n; },
  limit: dropOn,
  onLimit: () => {
    dropped = true;
    dropDone = sleep(DROP_DELAY_MS).then(async () => {
      if (mode === "stop") {
        const [, status] = await Promise.all([chatA.stop(), stopEndpoint()]);
        stopStatus = status;
      } else {
        await chatA.stop();
      }
    });
  },
});
await phase(chatA, () => chatA.sendMessage({ text: plan.text ?? "hello" }));
if (dropDone) await Promise.race([dropDone, sleep(timeoutMs)]);
const firstMessages = clone(chatA.messages);
const firstStatus = chatA.status;
const firstError = chatA.error?.message ?? null;

// ---------------------------------------------------------------- phase 2: a reloaded chat resumes via urlB
let final = chatA;
let resumeFrames = 0;
let resumeStatus = null;
if (mode !== "plain") {
  if (mode === "stop") await sleep(afterStopMs);
  const stored = clone(chatA.messages.filter((m) => m.role === "user"));
  const chatB = makeChat("B", plan.urlB, stored, { onFrame: (n) => { resumeFrames = n; } });
  const before = requests.length;
  await phase(chatB, () => chatB.resumeStream());
  resumeStatus = requests.slice(before).find((r) => r.chat === "B" && r.method === "GET")?.status ?? null;
  final = chatB;
}

const out = {
  firstMessages,
  messages: clone(final.messages),
  resumeStatus,
  stopStatus,
  framesBeforeDrop,
  dropped,
  resumeFrames,
  status: final.status,
  error: final.error?.message ?? null,
  firstStatus,
  firstError,
  onError: onErrors,
  requests,
  finishes,
  thrown,
  timedOut,
};
process.stdout.write(JSON.stringify(out), () => process.exit(0));
