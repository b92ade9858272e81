// Call an MCP server's tools with @modelcontextprotocol/sdk 1.32.2's own Client over its
// StreamableHTTPClientTransport (the handshake era: initialize, Mcp-Session-Id) and print what comes back,
// one JSON line each. The plan is the Python client's (tests/peers/mcp_client.py):
//
//   node mcp-run.mjs <url> '<plan>' [--key KEY] [--timeout-ms MS]
//
//   {"list": true}                                 tools/list
//   {"call": NAME, "arguments": {...}}             tools/call with an onprogress callback (a progressToken)
//       "progress": false                          without one
//       "cancel_after": SECONDS                    aborted after that long (the SDK POSTs notifications/cancelled)
//       "elicit": {action, content?, after?}       each elicitation/create during the call answered so, after
//                                                  `after` seconds (any step's "elicit" declares the elicitation
//                                                  capability; a step without one cancels); "fill": {field: value}
//                                                  instead of "content" answers only the fields the form asks for
//           "links": true                          (in any step) the client also opens links: it declares
//                                                  URL-mode elicitation ({form: {}, url: {}}), not forms only
//
// stdout: first {"protocolVersion", "serverInfo", "sessionId"}; then for each step {"tools": [...]} or
// {"isError", "content": [text...], "structured", "progress": [[progress, total, message]...]} or
// {"cancelled": true, "progress": [...]}, with "elicited": [params...] when it was asked; a step that threw:
// {"error": "<name>: <message>"}.
// Then {"terminated": status} after the session's DELETE. Exit 1 when the session could not be opened.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { commandLine, connected, say } from './mcp-command.mjs';

const { url, plan, key, timeout } = commandLine();

const eliciting = plan.some((step) => 'elicit' in step);
const links = plan.some((step) => step.elicit?.links === true);
const client = new Client({ name: 'agent-gateway-tests', version: '0.0.1' },
  { capabilities: eliciting ? { elicitation: links ? { form: {}, url: {} } : { form: {} } } : {} });
let answering = { elicit: undefined, asked: [] };  // the step being run's "elicit", and what it was asked
if (eliciting) {
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    answering.asked.push(request.params);
    const answer = answering.elicit ?? { action: 'cancel' };
    await new Promise((resolve) => setTimeout(resolve, (answer.after ?? 0) * 1000));
    const asks = request.params.requestedSchema?.properties ?? {};  // as a person fills the form: what it asks for
    const content = answer.fill === undefined ? answer.content
      : Object.fromEntries(Object.entries(answer.fill).filter(([field]) => field in asks));
    return content === undefined ? { action: answer.action } : { action: answer.action, content };
  });
}
const transport = await connected(client, StreamableHTTPClientTransport, url, key);
say({ protocolVersion: transport.protocolVersion, serverInfo: client.getServerVersion(), sessionId: transport.sessionId });

for (const step of plan) {
  answering = { elicit: step.elicit, asked: [] };
  const elicited = () => (answering.asked.length ? { elicited: answering.asked } : {});
  try {
    if (step.list) {
      say({ tools: (await client.listTools()).tools });
      continue;
    }
    const progress = [];
    const options = { timeout };
    if (step.progress !== false) options.onprogress = (p) => progress.push([p.progress, p.total ?? null, p.message ?? null]);
    if (step.cancel_after !== undefined) {
      const aborting = new AbortController();
      options.signal = aborting.signal;
      setTimeout(() => aborting.abort('cancelled by the test'), step.cancel_after * 1000);
      try {
        await client.callTool({ name: step.call, arguments: step.arguments ?? {} }, undefined, options);
        say({ cancelled: false, progress });
      } catch {
        say({ cancelled: aborting.signal.aborted, progress });
      }
      continue;
    }
    const result = await client.callTool({ name: step.call, arguments: step.arguments ?? {} }, undefined, options);
    say({ isError: result.isError ?? false, content: result.content.filter((b) => b.type === 'text').map((b) => b.text),
          structured: result.structuredContent ?? null, progress, ...elicited() });
  } catch (error) {
    say({ error: `${error.name}: ${error.message}`, ...elicited() });
  }
}
try {
  await transport.terminateSession();
  say({ terminated: true });
} catch (error) {
  say({ terminated: false, error: `${error.name}: ${error.message}` });
}
await client.close();
