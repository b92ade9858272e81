// MCP tasks (2025-11-25) with @modelcontextprotocol/sdk 1.32.2's own Client and its experimental task API
// (client.experimental.tasks) over StreamableHTTPClientTransport, printing what comes back, one JSON line each:
//
//   node mcp-tasks.mjs <url> '<plan>' [--key KEY] [--timeout-ms MS]
//
//   {"list_tools": true}                       tools/list (the SDK learns which tools take tasks)
//   {"stream": NAME, "arguments": {...}}       callToolStream as a task: {"messages": [{type, status?, ...}]}
//   {"create": NAME, "arguments": {...}}       a task created, not waited for: {"task": {...}}
//   {"get": true} / {"result": true} / {"cancel": true}
//                                              tasks/get, tasks/result, tasks/cancel of the last task created
//       "task_id": ID                          of that task instead
//   {"list": true}                             tasks/list
//
// stdout: first {"protocolVersion", "capabilities"}; then one line per step; a step that threw:
// {"error": "<message>", "code": <JSON-RPC code>}. Exit 1 when the session could not be opened.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { commandLine, connected, say } from './mcp-command.mjs';

const { url, plan, key, timeout } = commandLine();

const client = new Client({ name: 'agent-gateway-tests', version: '0.0.1' }, { capabilities: {} });
const transport = await connected(client, StreamableHTTPClientTransport, url, key);
say({ protocolVersion: transport.protocolVersion, capabilities: client.getServerCapabilities() });

const tasks = client.experimental.tasks;
const options = { timeout };
let last;
for (const step of plan) {
  const taskId = step.task_id ?? last;
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
      const stream = tasks.requestStream({ method: 'tools/call', params: { name: step.create, arguments: step.arguments ?? {} } },
                                         CallToolResultSchema, { ...options, task: { ttl: 60000 } });
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
    }
  } catch (error) {
    say({ error: error.message, code: error.code ?? null });
  }
}
await transport.terminateSession().catch(() => {});
await client.close();
