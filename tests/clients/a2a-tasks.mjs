// Ask a live A2A agent about its tasks with the real @a2a-js/sdk 1.3.0 client, and print the answers, one JSON line
// each: the JS twin of tests/peers/a2a_tasks.py (a2a-sdk's Python client), with the same output contract.
//
//   node a2a-tasks.mjs <url> <operation> [<params as JSON>] [--timeout-ms MS]
//
// operation: get (getTask), cancel (cancelTask), list (listTasks), subscribe (resubscribeTask: SubscribeToTask),
//   push-create, push-get, push-list, push-delete (the push notification config methods). The params are the
//   request's, in its JSON form ({"id": ...}, {"contextId": ...}, {"taskId": ..., "url": ...}).
// stdout: the answer in its JSON form (toJSON, as on the wire); for subscribe, each StreamResponse as it comes.
// stderr: one line "<ErrorName>: <message>" on an error (exit status 1); the SDK names A2A's errors by their code.
import { parseArgs } from "node:util";
import {
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from "@a2a-js/sdk";
import { ClientFactory, DefaultAgentCardResolver } from "@a2a-js/sdk/client";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { "timeout-ms": { type: "string", default: "30000" } },
});
const emit = (line) => process.stdout.write(JSON.stringify(line) + "\n");

const OPERATIONS = {
  get: (client, p, o) => client.getTask(GetTaskRequest.fromJSON(p), o).then(Task.toJSON),
  cancel: (client, p, o) => client.cancelTask(CancelTaskRequest.fromJSON(p), o).then(Task.toJSON),
  list: (client, p, o) => client.listTasks(ListTasksRequest.fromJSON(p), o).then(ListTasksResponse.toJSON),
  "push-create": (client, p, o) =>
    client.createTaskPushNotificationConfig(TaskPushNotificationConfig.fromJSON(p), o)
      .then(TaskPushNotificationConfig.toJSON),
  "push-get": (client, p, o) =>
    client.getTaskPushNotificationConfig(GetTaskPushNotificationConfigRequest.fromJSON(p), o)
      .then(TaskPushNotificationConfig.toJSON),
  "push-list": (client, p, o) =>
    client.listTaskPushNotificationConfig(ListTaskPushNotificationConfigsRequest.fromJSON(p), o)
      .then(ListTaskPushNotificationConfigsResponse.toJSON),
  "push-delete": (client, p, o) =>
    client.deleteTaskPushNotificationConfig(DeleteTaskPushNotificationConfigRequest.fromJSON(p), o).then(() => ({})),
};

async function main() {
  const [url, operation, params = "{}"] = positionals;
  if (!url || !(operation in OPERATIONS || operation === "subscribe")) {
    throw new Error(`usage: node a2a-tasks.mjs <url> <${[...Object.keys(OPERATIONS), "subscribe"].join("|")}> [params]`);
  }
  const card = await new DefaultAgentCardResolver().resolve(url);
  card.supportedInterfaces = (card.supportedInterfaces ?? []).filter((i) => (i.protocolVersion || "1.0") === "1.0");
  const client = await new ClientFactory().createFromAgentCard(card);
  const options = { signal: AbortSignal.timeout(Number(opts["timeout-ms"])) };
  const request = JSON.parse(params);
  if (operation === "subscribe") {
    for await (const response of client.resubscribeTask(SubscribeToTaskRequest.fromJSON(request), options)) {
      emit(StreamResponse.toJSON(response));
    }
    return;
  }
  emit(await OPERATIONS[operation](client, request, options));
}

try {
  await main();
} catch (e) {
  process.stderr.write(`${e?.name ?? "Error"}: ${String(e?.message ?? e).split(/\s+/).join(" ")}\n`);
  process.exitCode = 1;
}
