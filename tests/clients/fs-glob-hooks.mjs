// A module resolution hook (registered by mcp-conformance.mjs on a Node without fs.globSync): "fs" imported by the
// conformance suite's modules is fs-glob.mjs; every other module gets Node's own.
const withGlob = new URL('./fs-glob.mjs', import.meta.url).href;

export async function resolve(specifier, context, next) {
  const fromSuite = context.parentURL?.includes('/@modelcontextprotocol/conformance/');
  if (fromSuite && (specifier === 'fs' || specifier === 'node:fs')) return { url: withGlob, shortCircuit: true };
  return next(specifier, context);
}
