// Both halves of AG-UI's protobuf binding against @ag-ui/proto 1.0.0's own: what the gateway wrote, read by the
// package's decode; and the package's encode of the same event, for the gateway to read back.
//
// stdin:  [{"frame": hex of a length-prefixed event, "event": the event's JSON object}, ...]
// stdout: [{"decoded": the event @ag-ui/proto reads from the frame, "error": str | null, "encoded": hex of the
//           package's own length-prefixed frame of the event}, ...]
import { decode, encode } from "@ag-ui/proto";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const out = [];
for (const { frame, event } of JSON.parse(input)) {
  const bytes = Buffer.from(frame, "hex");
  let decoded = null;
  let error = null;
  try {
    if (bytes.readUInt32BE(0) !== bytes.length - 4) throw new Error("the length prefix is not the message's");
    decoded = decode(new Uint8Array(bytes.subarray(4)));
  } catch (e) {
    error = `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`;
  }
  const message = encode(event);
  const prefix = Buffer.alloc(4);
  prefix.writeUInt32BE(message.length);
  out.push({ decoded, error, encoded: Buffer.concat([prefix, Buffer.from(message)]).toString("hex") });
}
process.stdout.write(JSON.stringify(out));
