// Validate Vercel AI SDK UI-message-stream bodies with the real `ai` package.
//
// stdin:  [{"name": str, "sse": str}, ...]
// stdout: {name: {"ok", "error", "strict_error", "in_band_error", "done", "message", "types"}}
//
// Each body is consumed twice, by ai@7.0.173 ("ai") and by ai@6.0.230 ("ai-strict", whose
// chunk schemas are z.strictObject, so any key outside the schema is rejected), the way
// DefaultChatTransport + readUIMessageStream do it (see consume.mjs in the research notes).
// "ok" = schema and state machine accept the stream in both versions; an in-band
// {type:"error"} chunk is legitimate and only reported. Always exits 0.
import * as ai from "ai";
import * as aiStrict from "ai-strict";

const parse = (lib, text) =>
  lib.parseJsonEventStream({ stream: new Response(text).body, schema: lib.uiMessageChunkSchema });

const describe = (e) => `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`;

async function consume(lib, text) {
  // 1. Schema over every chunk. The state pass below stops at the first error chunk (as
  //    useChat does), so chunks after it would otherwise never be checked.
  const types = [];
  const chunks = [];
  let error = null;
  for await (const result of parse(lib, text)) {
    if (!result.success) {
      error = describe(result.error);
      break;
    }
    types.push(result.value.type);
    chunks.push(result.value);
  }
  // 2. State machine, exactly like consume.mjs / DefaultChatTransport.
  const chunkStream = parse(lib, text).pipeThrough(
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
      stream: chunkStream,
      terminateOnError: true,
      onError: (e) => (firstError ??= e),
    })) {
      message = msg;
    }
  } catch (e) {
    firstError ??= e;
  }
  // An in-band error chunk surfaces as a plain Error(errorText); protocol errors are AI_* errors.
  const inBand = chunks.find(
    (c) => c.type === "error" && firstError?.constructor === Error && firstError.message === c.errorText,
  );
  if (firstError && !inBand) error ??= describe(firstError);
  return { error, inBandError: inBand ? inBand.errorText : null, message, types };
}

async function verify(text) {
  const loose = await consume(ai, text);
  const strict = await consume(aiStrict, text);
  return {
    ok: loose.error === null && strict.error === null,
    error: loose.error,
    strict_error: strict.error,
    in_band_error: loose.inBandError,
    done: text.endsWith("data: [DONE]\n\n"),
    message: loose.message,
    types: loose.types,
  };
}

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = {};
for (const { name, sse } of JSON.parse(input)) out[name] = await verify(sse);
process.stdout.write(JSON.stringify(out));
