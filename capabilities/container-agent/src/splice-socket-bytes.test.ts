// pai-splice through spliceFrom, on real loopback sockets: exactly the bytes asked move, in order, and both sockets
// go on afterwards; a source that ends early, and an abort, say so.
import { once } from "node:events";
import { createServer, type Server, Socket } from "node:net";
import { afterEach, beforeEach, expect, it } from "vitest";
import { spliceFrom } from "./splice-socket-bytes.ts";

const MIB = 1024 * 1024;
let server: Server;
const opened: Socket[] = [];

/** Two connected loopback sockets: what is written to one is read from the other. */
async function socketPair(): Promise<[Socket, Socket]> {
  const accepted = once(server, "connection") as Promise<[Socket]>;
  const client = new Socket();
  client.connect((server.address() as { port: number }).port, "127.0.0.1");
  const [[peer]] = await Promise.all([accepted, once(client, "connect")]);
  opened.push(client, peer);
  return [client, peer];
}

/** Reads `socket` until it has `bytes` bytes, then leaves it paused. */
function readBytes(socket: Socket, bytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  return new Promise((resolve) => {
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      total += chunk.length;
      if (total < bytes) return;
      socket.off("data", onData);
      socket.pause();
      resolve(Buffer.concat(chunks));
    };
    socket.on("data", onData);
    socket.resume(); // accepted paused (pauseOnConnect), as a source must be
  });
}

/** `count` MiB, MiB number i all bytes i. */
const pattern = (count: number) =>
  Buffer.concat(Array.from({ length: count }, (_, i) => Buffer.alloc(MIB, i)));

beforeEach(async () => {
  server = createServer({ pauseOnConnect: true });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
});

afterEach(async () => {
  for (const socket of opened.splice(0)) socket.destroy();
  server.close();
});

it("moves exactly the bytes asked, in order; the source keeps what follows and the destination goes on", async () => {
  const [writer, source] = await socketPair();
  const [destination, reader] = await socketPair();
  writer.write(pattern(12));
  writer.write("NEXT");
  const received = readBytes(reader, 12 * MIB);

  const result = await spliceFrom(source)(destination, 12 * MIB, AbortSignal.timeout(30_000));
  expect(result).toEqual({ moved: 12 * MIB, complete: true });
  expect((await received).equals(pattern(12))).toBe(true);

  source.resume();
  const [next] = (await once(source, "data")) as [Buffer];
  expect(next.toString()).toBe("NEXT");
  destination.write("after");
  expect((await readBytes(reader, 5)).toString()).toBe("after");
});

it("says how much moved when the source ends first", async () => {
  const [writer, source] = await socketPair();
  const [destination, reader] = await socketPair();
  reader.resume();
  writer.end(pattern(1));
  const result = await spliceFrom(source)(destination, 2 * MIB, AbortSignal.timeout(30_000));
  expect(result).toEqual({ moved: MIB, complete: false });
});

it("stops at once when its signal aborts", async () => {
  const [, source] = await socketPair();
  const [destination] = await socketPair();
  const controller = new AbortController();
  const splicing = spliceFrom(source)(destination, MIB, controller.signal);
  setTimeout(() => controller.abort(), 200);
  await expect(splicing).resolves.toEqual({ moved: 0, complete: false });
});
