// A loopback HTTP server for the egress benchmark, in its own process so that serving bytes does not share the
// benchmark's event loop with the proxy: GET /bytes/<n> answers n bytes. Prints its port on stdout.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const block = Buffer.alloc(1024 * 1024, 0x61);
const server = createServer((request, response) => {
  const size = Number((request.url ?? "").replace(/^\/bytes\//, ""));
  if (!Number.isSafeInteger(size) || size < 0) return void response.writeHead(404).end();
  response.writeHead(200, { "content-type": "application/octet-stream", "content-length": size });
  let left = size;
  const pump = () => {
    while (left > 0) {
      const part = left >= block.length ? block : block.subarray(0, left);
      left -= part.length;
      if (!response.write(part)) return void response.once("drain", pump);
    }
    response.end();
  };
  pump();
});
server.listen(0, "127.0.0.1", () => console.log((server.address() as AddressInfo).port));
process.stdin.resume();
process.stdin.on("end", () => process.exit(0)); // ends with its parent
