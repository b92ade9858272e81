// An AG-UI server as @ag-ui/encoder 1.0.0 writes one: every POST is answered with the events of a recorded stream,
// in protobuf when the request's Accept admits it (the encoder's own negotiation), else in SSE.
//
//   node agui-proto-server.mjs <events.json>    # prints {"port": N, "served": [content types]} lines
//
// Listens on 127.0.0.1 on a free port and prints it; each answer's content type is printed as it goes. Stops when
// stdin closes.
import { createServer } from "node:http";
import { readFileSync } from "node:fs";
import { EventEncoder } from "@ag-ui/encoder";

const events = JSON.parse(readFileSync(process.argv[2], "utf8"));
const server = createServer((request, response) => {
  request.resume();
  request.on("end", () => {
    const encoder = new EventEncoder({ accept: request.headers.accept });
    response.writeHead(200, { "content-type": encoder.getContentType() });
    for (const event of events) response.write(encoder.encodeBinary(event));
    response.end();
    process.stdout.write(JSON.stringify({ served: encoder.getContentType() }) + "\n");
  });
});
server.listen(0, "127.0.0.1", () => process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n"));
process.stdin.on("end", () => server.close(() => process.exit(0)));
process.stdin.resume();
