// Validate UI message stream bodies with the `ai` release a client of each version runs, each under its strict
// schema: the oldest release of a major that rejects any key outside its schema (5.0.216, 6.0.230, 7.0.31), and the
// newest 7 (7.0.173) for what late 7 releases added.
//
// stdin:  [{"name": str, "sse": str, "sdk": "5" | "6" | "7" | "7.0.173"}, ...]
// stdout: {name: {"ok", "error", "in_band_error", "message", "types", "package"}}
//
// The body goes through the package's `parseJsonEventStream` + `uiMessageChunkSchema` and `readUIMessageStream`,
// as `DefaultChatTransport` and the Chat do. "ok": schema and state machine accept it (an in-band error chunk is
// legitimate and only reported). Always exits 0.
import * as ai5 from "ai5";
import * as ai6 from "ai-strict";
import * as ai7 from "ai7-strict";
import * as aiLatest from "ai";

const PACKAGES = { 5: [ai5, "ai@5.0.216"], 6: [ai6, "ai@6.0.230"], 7: [ai7, "ai@7.0.31"],
                   "7.0.173": [aiLatest, "ai@7.0.173"] };

const describe = (e) => `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`;

async function consume(lib, text) {
  const parse = () => lib.parseJsonEventStream({ stream: new Response(text).body, schema: lib.uiMessageChunkSchema });
  const types = [];
  const chunks = [];
  let error = null;
  for await (const result of parse()) {
    if (!result.success) {
      error = describe(result.error);
      break;
    }
    types.push(result.value.type);
    chunks.push(result.value);
  }
  const checked = parse().pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        controller.enqueue(result.value);
      },
    }),
  );
  let message = null;
  let firstError;
  try {
    for await (const msg of lib.readUIMessageStream({
      stream: checked,
      terminateOnError: true,
      onError: (e) => (firstError ??= e),
    })) {
      message = msg;
    }
  } catch (e) {
    firstError ??= e;
  }
  const inBand = chunks.find(
    (c) => c.type === "error" && firstError?.constructor === Error && firstError.message === c.errorText,
  );
  if (firstError && !inBand) error ??= describe(firstError);
  return { ok: error === null, error, in_band_error: inBand ? inBand.errorText : null, message, types };
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = {};
for (const { name, sse, sdk } of JSON.parse(input)) {
  const [lib, label] = PACKAGES[sdk] ?? [];
  if (!lib) throw new Error(`no ai package for version ${sdk}`);
  out[name] = { ...(await consume(lib, sse)), package: label };
}
process.stdout.write(JSON.stringify(out));
