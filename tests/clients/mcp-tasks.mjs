// MCP tasks (2025-11-25) with @modelcontextprotocol/sdk 1.32.2's own Client and its experimental task API
// (client.experimental.tasks) over StreamableHTTPClientTransport, printing what comes back, one JSON line each:
//
//   node mcp-tasks.mjs <url> '<plan>' [--key KEY] [--timeout-ms MS]
//
//   {"list_tools": true}                       tools/list (the SDK learns which tools take tasks)
//   {"stream": NAME, "arguments": {...}}       callToolStream as a task: {"messages": [{type, status?, ...}]}
//   {"create": NAME, "arguments": {...}}       a task created, not waited for: {"task": {...}}
//       "ttl": MS                              the ttl it asks for (else 60000; null: none)
//   {"get": true} / {"result": true} / {"cancel": true}
//                                              tasks/get, tasks/result, tasks/cancel of the last task created
//       "task_id": ID                          of that task instead
//   {"list": true}                             tasks/list
//   {"statuses": true}                         the notifications/tasks/status received so far: {"statuses": [params]}
//   any step's "elicit": {action, content?}    each elicitation/create during the step answered so (any step's
//                                              "elicit" declares the elicitation capability); the step's line then
//                                              has "elicited": [params...]
//
// stdout: first {"protocolVersion", "capabilities"}; then one line per step; a step that threw:
// {"error": "<message>", "code": <JSON-RPC code>}. Exit 1 when the session could not be opened.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { commandLine, connected, say } from './mcp-command.mjs';

const { url, plan, key, timeout } = commandLine();

const eliciting = plan.some((step) => 'elicit' in step);
const client = new Client({ name: 'agent-gateway-tests', version: '0.0.1' },
  { capabilities: eliciting ? { elicitation: { form: {} } } : {} });
let answering = { elicit: undefined, asked: [] };  // the step being run's "elicit", and what it was asked
if (eliciting) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    answering.asked.push(request.params);
    const answer = answering.elicit ?? { action: 'cancel' };
    return answer.content === undefined ? { action: answer.action } : { action: answer.action, content: answer.content };
  });
}
const statuses = [];
client.setNotificationHandler(TaskStatusNotificationSchema, (notification) => { statuses.push(notification.params); });
const transport = await connected(client, StreamableHTTPClientTransport, url, key);
say({ protocolVersion: transport.protocolVersion, capabilities: client.getServerCapabilities() });

const tasks = client.experimental.tasks;
const options = { timeout };
let last;
for (const step of plan) {
  const taskId = step.task_id ?? last;
  answering = { elicit: step.elicit, asked: [] };
  const say = (value) => process.stdout.write(JSON.stringify(
    answering.asked.length ? { ...value, elicited: answering.asked } : value) + '\n');
  try {
    if (step.list_tools) {
      say({ tools: (await client.listTools()).tools });
    } else if (step.stream !== undefined) {
      const messages = [];
      const stream = tasks.callToolStream({ name: step.stream, arguments: step.arguments ?? {} }, undefined,
                                          { ...options, task: { ttl: 60000 } });
      for await (const message of stream) {
        if (message.type === 'taskCreated') last = message.task.taskId;
        messages.push({ type: message.type, task: message.task, result: message.result,
                        error: message.error ? message.error.message : undefined });
      }
      say({ messages });
    } else if (step.create !== undefined) {
      const ttl = step.ttl === undefined ? 60000 : step.ttl ?? undefined;
      const stream = tasks.requestStream({ method: 'tools/call', params: { name: step.create, arguments: step.arguments ?? {} } },
                                         CallToolResultSchema, { ...options, task: ttl === undefined ? {} : { ttl } });
      for await (const message of stream) {
        if (message.type === 'taskCreated') {
          last = message.task.taskId;
          say({ task: message.task });
          break;
        }
        say({ error: message.error ? message.error.message : `unexpected ${message.type}` });
        break;
      }
    } else if (step.get) {
      say(await tasks.getTask(taskId, options));
    } else if (step.result) {
      say(await tasks.getTaskResult(taskId, CallToolResultSchema, options));
    } else if (step.cancel) {
      say(await tasks.cancelTask(taskId, options));
    } else if (step.list) {
      say(await tasks.listTasks(undefined, options));
    } else if (step.statuses) {
      say({ statuses: statuses.splice(0) });
    }
  } catch (error) {
    say({ error: error.message, code: error.code ?? null });
  }
}
await transport.terminateSession().catch(() => {});
await client.close();
