// Validate AG-UI SSE response bodies with the real @ag-ui/client 1.0.0.
//
// stdin:  [{"name": str, "sse": str}, ...]
// stdout: {name: {"ok", "error", "warnings", "types", "messages", "state"}}
//
// Each body is served to a real HttpAgent through a stub fetch, so it goes through the
// exact runAgent pipeline: runHttpRequest -> transformHttpEventStream (SSE parser, split on
// "\n\n" only) -> CompatibilityBoundary -> enforceEvents -> transformChunks -> verifyEvents
// -> apply (the reducer). On top of that we require a terminal event at the end (the client
// itself accepts a stream that just stops) and report every console.warn (the client warns,
// instead of failing, when it strips unknown keys, drops unknown events or upgrades legacy
// shapes). Always exits 0; the caller decides.
import { format } from "node:util";
import { HttpAgent } from "@ag-ui/client";

// Must not be set, or the compatibility layer silences its warnings.
delete process.env.SUPPRESS_TRANSFORMATION_WARNINGS;

let warnings = [];
console.warn = (...args) => warnings.push(format(...args));
// runAgent logs "Agent execution failed:" before rejecting; we report the rejection instead.
console.error = () => {};

async function verify(sse) {
  warnings = [];
  const types = [];
  const agent = new HttpAgent({
    url: "http://gateway.invalid/agui",
    threadId: "thread-1",
    fetch: async () =>
      new Response(sse, { status: 200, headers: { "content-type": "text/event-stream" } }),
  });
  let error = null;
  try {
    await agent.runAgent({ runId: "run-1" }, { onEvent: ({ event }) => void types.push(event.type) });
    const last = types.at(-1);
    if (last !== "RUN_FINISHED" && last !== "RUN_ERROR") {
      error = `stream ended without RUN_FINISHED/RUN_ERROR (last event: ${last ?? "none"})`;
    }
  } catch (e) {
    error = `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`;
  }
  return {
    ok: error === null && warnings.length === 0,
    error,
    warnings,
    types,
    messages: agent.messages,
    state: agent.state,
  };
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = {};
for (const { name, sse } of JSON.parse(input)) out[name] = await verify(sse);
process.stdout.write(JSON.stringify(out));
