// createContainerLoopback's choice between the direct path (the real pai-port-connect, entering this test process's own
// network namespace as it would a container's) and the capability's fallback, from what the engine says of the
// container. The engine here is a stand-in answering `inspect` only; tests/sandbox/sandbox-ports.docker.test.ts runs
// both paths against real containers.
import { once } from "node:events";
import { createServer, type Server, Socket } from "node:net";
import { Duplex } from "node:stream";
import type { ContainerDriver, ContainerInspection } from "@pai/pool";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createContainerLoopback } from "./container-loopback.ts";

const isRoot = process.getuid?.() === 0;
const ownNamespace = `/proc/${process.pid}/ns/net`;
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((socket) => socket.on("error", () => {}).end("hi"));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as { port: number }).port;
});

afterAll(() => {
  server.close();
});

/** An engine that says `inspection` of every container. */
function engineSaying(inspection: Partial<ContainerInspection>): ContainerDriver {
  const said: ContainerInspection = {
    running: true,
    exitCode: null,
    oomKilled: false,
    labels: {},
    ...inspection,
  };
  return { inspect: async () => said } as unknown as ContainerDriver;
}

/** Connects through a loopback over `driver`, saying whether the fallback answered. */
async function connectThrough(driver: ContainerDriver, containerId = "c0ffee") {
  const loopback = createContainerLoopback({ driver, containerId });
  let fellBack = 0;
  const fallback = async () => {
    fellBack++;
    return new Duplex({ read() {} });
  };
  try {
    const stream = await loopback.connect(port, new AbortController().signal, fallback);
    const again = await loopback.connect(port, new AbortController().signal, fallback);
    const remotePort = stream instanceof Socket ? stream.remotePort : undefined;
    for (const one of [stream, again]) one.on("error", () => {}).destroy();
    return { stream, remotePort, fellBack };
  } finally {
    loopback.close();
  }
}

it.runIf(isRoot)(
  "connects straight to the port in the namespace the engine names, under a kernel runtime",
  async () => {
    for (const runtime of [undefined, "runc", "crun"]) {
      const { stream, fellBack } = await connectThrough(
        engineSaying({ networkNamespace: ownNamespace, runtime }),
      );
      expect(fellBack).toBe(0);
      expect(stream).toBeInstanceOf(Socket);
      expect((stream as Socket).remotePort).toBe(port);
    }
  },
);

it("takes the fallback under a runtime whose loopback is elsewhere, or with no namespace", async () => {
  for (const inspection of [
    { networkNamespace: ownNamespace, runtime: "runsc" },
    { networkNamespace: ownNamespace, runtime: "kata-runtime" },
    {},
    { running: false },
  ]) {
    expect((await connectThrough(engineSaying(inspection))).fellBack).toBe(2);
  }
});

it("takes a main process's namespace only when its cgroup names the container", async () => {
  // this test process is in no container's cgroup: its pid is not the container's
  expect((await connectThrough(engineSaying({ pid: process.pid }), "0123456789abcdef")).fellBack).toBe(2);
});

it.runIf(isRoot)("takes the fallback for a port the direct path finds closed, and after close", async () => {
  const loopback = createContainerLoopback({
    driver: engineSaying({ networkNamespace: ownNamespace }),
    containerId: "c0ffee",
  });
  const closed = createServer();
  closed.listen(0, "127.0.0.1");
  await once(closed, "listening");
  const closedPort = (closed.address() as { port: number }).port;
  closed.close();
  let fellBack = 0;
  const fallback = async () => {
    fellBack++;
    return new Duplex({ read() {} });
  };
  (await loopback.connect(closedPort, new AbortController().signal, fallback)).destroy();
  // the direct path goes on for the ports it reaches
  expect(fellBack).toBe(1);
  (await loopback.connect(port, new AbortController().signal, fallback)).on("error", () => {}).destroy();
  expect(fellBack).toBe(1);
  loopback.close();
  (await loopback.connect(port, new AbortController().signal, fallback)).destroy();
  expect(fellBack).toBe(2);
});
