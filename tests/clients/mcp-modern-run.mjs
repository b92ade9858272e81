// Call an MCP server's tools with @modelcontextprotocol/client 2.4.0's Client in 2026-07-28
// (versionNegotiation auto: server/discover first, each request standing alone) and print what comes back, one
// JSON line each. The plan is tests/peers/mcp_modern_client.py's:
//
//   node mcp-modern-run.mjs <url> '<plan>' [--key KEY] [--timeout-ms MS]
//
//   {"list": true}                                 tools/list
//   {"call": NAME, "arguments": {...}}             tools/call with an onprogress callback (a progressToken)
//       "elicit": [{"action": ..., "content": {...}}, ...]
//                                                  what the elicitation/create handler answers, one a round (the
//                                                  SDK drives the input_required rounds with it); without any in
//                                                  the plan the client declares no elicitation capability
//
// stdout: first {"protocolVersion", "serverInfo", "sessionId"}; then for each step {"tools": [...]} or
// {"isError", "content": [text...], "structured", "progress": [[progress, total, message]...],
// "elicited": [{message, requestedSchema}...]}; a step that threw: {"error": "<name>: <message>", "code"}.
// Exit 1 when the client could not connect.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { commandLine, connected, say } from './mcp-command.mjs';

const { url, plan, key, timeout } = commandLine();

const eliciting = plan.some((step) => step.elicit !== undefined);
const client = new Client({ name: 'agent-gateway-tests', version: '0.0.1' }, {
  capabilities: eliciting ? { elicitation: { form: {} } } : {},
  versionNegotiation: { mode: 'auto' },
});
let answers = [];
const elicited = [];
if (eliciting) {
  client.setRequestHandler('elicitation/create', async (request) => {
    elicited.push({ message: request.params.message, requestedSchema: request.params.requestedSchema ?? null });
    return answers.shift() ?? { action: 'cancel' };
  });
}
const transport = await connected(client, StreamableHTTPClientTransport, url, key);
say({ protocolVersion: transport.protocolVersion, serverInfo: client.getServerVersion(), sessionId: transport.sessionId ?? null });

for (const step of plan) {
  answers = [...(step.elicit ?? [])];
  elicited.length = 0;
  try {
    if (step.list) {
      say({ tools: (await client.listTools()).tools });
      continue;
    }
    const progress = [];
    const options = { timeout, onprogress: (p) => progress.push([p.progress, p.total ?? null, p.message ?? null]) };
    const result = await client.callTool({ name: step.call, arguments: step.arguments ?? {} }, options);
    say({ isError: result.isError ?? false, content: result.content.filter((b) => b.type === 'text').map((b) => b.text),
          structured: result.structuredContent ?? null, progress, elicited: [...elicited] });
  } catch (error) {
    say({ error: `${error.name}: ${error.message}`, code: error.code ?? null });
  }
}
await client.close();
