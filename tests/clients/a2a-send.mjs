// Send one message to a live A2A agent with the real @a2a-js/sdk 1.3.0 client and print what comes back, one JSON
// line each: the JS twin of tests/peers/a2a_client.py (a2a-sdk's Python client), with the same output contract.
//
//   node a2a-send.mjs <url> <text> [--context-id ID] [--task-id ID] [--message-id ID] [--no-stream]
//        [--binding jsonrpc|http-json] [--version 1.0|0.3] [--cancel-after N] [--timeout-ms MS]
//
// The SDK does the work: DefaultAgentCardResolver reads <url>/.well-known/agent-card.json, ClientFactory picks the
// interface of the binding asked for (--version keeps only the card's interfaces of that protocol version; 0.3
// turns on the transports' legacyCompat, so the factory builds the compat transport), and Client.sendMessageStream
// streams, or Client.sendMessage with --no-stream (sendMessageStream itself falls back to it on a card that says
// streaming: false).
//
// stdout, one JSON object per line:
//   each StreamResponse the client yields, as StreamResponse.toJSON gives it (the proto JSON form, as on the wire):
//     {"task": {...}} | {"message": {...}} | {"statusUpdate": {...}} | {"artifactUpdate": {...}}
//   (--no-stream: one line, {"task": ...} or {"message": ...}, for what sendMessage resolved to);
//   with --cancel-after N, after the N-th response: {"cancelTask": <the Task CancelTask answered>}, then the rest.
// stderr: each HTTP request the client sent, one JSON line {method, url, headers, body, raw} (body parsed, raw as sent).
// Exit status 0; on an error 1, with one line "<ErrorName>: <message>" on stderr (lines printed so far stay).
import { parseArgs } from "node:util";
import { randomUUID } from "node:crypto";
import { Message, SendMessageRequest, StreamResponse, Task } from "@a2a-js/sdk";
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from "@a2a-js/sdk/client";

const BINDINGS = { jsonrpc: "JSONRPC", "http-json": "HTTP+JSON" };

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    "context-id": { type: "string" },
    "task-id": { type: "string" },
    "message-id": { type: "string" },
    "no-stream": { type: "boolean", default: false },
    binding: { type: "string", default: "jsonrpc" },
    version: { type: "string", default: "1.0" },
    "cancel-after": { type: "string", default: "0" },
    "timeout-ms": { type: "string", default: "30000" },
  },
});

const emit = (line) => process.stdout.write(JSON.stringify(line) + "\n");

// Every request the SDK makes goes through this fetch, so it can be logged as sent.
const headersOf = (init, input) => {
  const headers = new Headers(input instanceof Request ? input.headers : undefined);
  new Headers(init?.headers ?? {}).forEach((value, key) => headers.set(key, value));
  return Object.fromEntries(headers.entries());
};
const loggingFetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  const raw = typeof init?.body === "string" ? init.body : null;
  let body = raw;
  try {
    body = raw === null ? null : JSON.parse(raw);
  } catch {}
  const line = { method: init?.method ?? "GET", url, headers: headersOf(init, input), body, raw };
  process.stderr.write(JSON.stringify(line) + "\n");
  return fetch(input, init);
};

const taskIdOf = (response) => {
  const { $case, value } = response.payload ?? {};
  return $case === "task" ? value.id : value?.taskId;
};

async function main() {
  const [url, text] = positionals;
  if (!url || text === undefined) throw new Error("usage: node a2a-send.mjs <url> <text> [options]");
  const binding = BINDINGS[opts.binding];
  if (!binding) throw new Error(`--binding must be one of ${Object.keys(BINDINGS).join(", ")}`);
  if (!["1.0", "0.3"].includes(opts.version)) throw new Error("--version must be 1.0 or 0.3");
  const legacyCompat = { enabled: opts.version === "0.3" };

  const card = await new DefaultAgentCardResolver({ fetchImpl: loggingFetch, legacyCompat }).resolve(url);
  card.supportedInterfaces = (card.supportedInterfaces ?? []).filter(
    (i) => (i.protocolVersion || "1.0").startsWith(opts.version),
  );
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        new JsonRpcTransportFactory({ fetchImpl: loggingFetch, legacyCompat }),
        new RestTransportFactory({ fetchImpl: loggingFetch, legacyCompat }),
      ],
      preferredTransports: [binding],
    }),
  );
  const client = await factory.createFromAgentCard(card);
  if (client.transport.protocolName.toUpperCase() !== binding) {
    throw new Error(`the card offers no ${binding} interface at version ${opts.version}`);
  }

  const message = { messageId: opts["message-id"] ?? randomUUID(), role: "ROLE_USER", parts: [{ text }] };
  if (opts["context-id"]) message.contextId = opts["context-id"];
  if (opts["task-id"]) message.taskId = opts["task-id"];
  const request = SendMessageRequest.fromJSON({ message });
  const signal = AbortSignal.timeout(Number(opts["timeout-ms"]));

  if (opts["no-stream"]) {
    const result = await client.sendMessage(request, { signal });
    emit("messageId" in result ? { message: Message.toJSON(result) } : { task: Task.toJSON(result) });
    return;
  }
  const cancelAfter = Number(opts["cancel-after"]);
  let seen = 0;
  for await (const response of client.sendMessageStream(request, { signal })) {
    emit(StreamResponse.toJSON(response));
    seen += 1;
    if (seen === cancelAfter) {
      const cancelled = await client.cancelTask({ tenant: "", id: taskIdOf(response), metadata: undefined });
      emit({ cancelTask: Task.toJSON(cancelled) });
    }
  }
}

try {
  await main();
} catch (e) {
  process.stderr.write(`${e?.name ?? "Error"}: ${String(e?.message ?? e).split(/\s+/).join(" ")}\n`);
  process.exitCode = 1;
}
