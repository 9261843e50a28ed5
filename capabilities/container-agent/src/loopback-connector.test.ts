// openLoopbackConnector with the real pai-port-connect, entering this test process's own network namespace (a
// container's is entered the same way; tests/sandbox/sandbox-previews.docker.test.ts reaches one on the real engine):
// sockets handed over work both ways, a closed port and a bad one are typed errors, an abort and close leave nothing.
import { once } from "node:events";
import { createServer, type Server, type Socket } from "node:net";
import { spliceBytes } from "@pai/core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ContainerAgentError } from "./container-agent-error.ts";
import { type LoopbackConnector, openLoopbackConnector } from "./loopback-connector.ts";

const isRoot = process.getuid?.() === 0;
let server: Server;
let port: number;
let connector: LoopbackConnector | undefined;

beforeAll(async () => {
  // An echo server that says which port its peer has, so each socket is known to be its own connection.
  server = createServer((socket) => {
    socket.write(`hello ${socket.remotePort}\n`);
    socket.pipe(socket);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as { port: number }).port;
  connector = await openLoopbackConnector({ networkNamespace: `/proc/${process.pid}/ns/net` });
});

afterAll(async () => {
  connector?.close();
  server.close();
});

/** The first `count` lines `socket` reads (the loop's end destroys it). */
async function readLines(socket: Socket, count: number): Promise<string[]> {
  let text = "";
  for await (const chunk of socket) {
    text += String(chunk);
    if (text.split("\n").length > count) break;
  }
  return text.split("\n").slice(0, count);
}

it("connects only where this process may enter the namespace (root)", () => {
  expect(connector !== undefined).toBe(isRoot);
});

it.runIf(isRoot)(
  "hands over connected sockets that carry bytes both ways, each its own connection",
  async () => {
    const sockets = await Promise.all(Array.from({ length: 20 }, () => connector!.connect(port)));
    const localPorts = sockets.map((socket) => socket.localPort);
    for (const socket of sockets) {
      expect(typeof (socket as unknown as Record<symbol, unknown>)[spliceBytes]).toBe("function");
    }
    const replies = await Promise.all(
      sockets.map(async (socket, index) => {
        socket.write(`ping ${index}\n`);
        return readLines(socket, 2);
      }),
    );
    expect(new Set(localPorts).size).toBe(20);
    expect(replies).toEqual(localPorts.map((localPort, index) => [`hello ${localPort}`, `ping ${index}`]));
  },
);

it.runIf(isRoot)(
  "says SANDBOX_PORT_CLOSED for a port nobody listens on, INVALID_ARGUMENT for no port",
  async () => {
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const closedPort = (closed.address() as { port: number }).port;
    closed.close();
    const refused = await connector!.connect(closedPort).catch((error: unknown) => error);
    expect(ContainerAgentError.hasCode(refused, "SANDBOX_PORT_CLOSED")).toBe(true);
    expect((refused as ContainerAgentError).details).toMatchObject({ port: closedPort });
    for (const bad of [0, 65536, 1.5]) {
      const error = await connector!.connect(bad).catch((caught: unknown) => caught);
      expect(ContainerAgentError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    }
    // the connector goes on after failures
    const [line] = await readLines(await connector!.connect(port), 1);
    expect(line).toMatch(/^hello \d+$/);
  },
);

it.runIf(isRoot)(
  "an aborted connect rejects with the signal's reason; close fails later connects",
  async () => {
    const signal = AbortSignal.abort(new Error("gone"));
    await expect(connector!.connect(port, signal)).rejects.toThrow("gone");
    const own = await openLoopbackConnector({ networkNamespace: `/proc/${process.pid}/ns/net` });
    own!.close();
    const error = await own!.connect(port).catch((caught: unknown) => caught);
    expect(ContainerAgentError.hasCode(error, "SANDBOX_CONNECT_FAILED")).toBe(true);
  },
);

it("resolves undefined for a namespace that is not there", async () => {
  expect(
    await openLoopbackConnector({ networkNamespace: "/var/run/docker/netns/not-there" }),
  ).toBeUndefined();
});
