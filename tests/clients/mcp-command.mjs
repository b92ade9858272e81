// What the MCP client scripts here share, as tests/peers/mcp_client.py's `command` is for the Python ones: the
// command line `node SCRIPT <url> '<plan>' [--key KEY] [--timeout-ms MS]`, one JSON line a value on stdout, and the
// connection, opened or the script ended with exit 1 and the error on stderr.

// The URL, the plan (a JSON list of steps), the key to send as a bearer token, and each request's timeout in ms.
export function commandLine() {
  const [url, planText, ...rest] = process.argv.slice(2);
  const option = (name) => { const at = rest.indexOf(name); return at >= 0 ? rest[at + 1] : undefined; };
  return { url, plan: JSON.parse(planText), key: option('--key'), timeout: Number(option('--timeout-ms') ?? 30000) };
}

export const say = (value) => process.stdout.write(JSON.stringify(value) + '\n');

// `client` connected to `url` over a new `Transport` (the SDK's StreamableHTTPClientTransport) sending `key`.
export async function connected(client, Transport, url, key) {
  const transport = new Transport(new URL(url), {
    requestInit: key ? { headers: { authorization: `Bearer ${key}` } } : undefined,
  });
  try {
    await client.connect(transport);
  } catch (error) {
    process.stderr.write(`${error.name}: ${error.message}\n`);
    process.exit(1);
  }
  return transport;
}
