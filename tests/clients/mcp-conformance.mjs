// The MCP project's conformance suite (@modelcontextprotocol/conformance), run as its own CLI:
//   node mcp-conformance.mjs server --url http://127.0.0.1:PORT/mcp --suite all -o DIR
// Its CLI imports `globSync` from "fs", which Node has from 22 on (only its tier-check command uses it). On an older
// Node, fs-glob-hooks.mjs gives the suite's modules, and only them, an fs with a small globSync (fs-glob.mjs), so
// the suite runs on the Node 20 CI has without a second Node.
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') register('./fs-glob-hooks.mjs', import.meta.url);
await import('@modelcontextprotocol/conformance/dist/index.js');
