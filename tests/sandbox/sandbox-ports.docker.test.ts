// Ports and terminals of a real sandbox container (network `none`), over its agent's connection: `openPort` reaches
// a server a program listens on inside the container, `exposePort` needs a runtime that serves previews, and
// `openTerminal` gives a shell on a pseudo-terminal, as the sandbox user, with resize, Ctrl-C and a clean close.

import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { readdirSync, readFileSync } from "node:fs";
import { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { ContainerAgentError } from "@pai/container-agent";
import {
  createDockerExecExecutor,
  createSandboxFacade,
  type DockerSandboxBinding,
  dockerSandbox,
  type ProvisionedSandbox,
  SandboxError,
  type SandboxFacade,
  type TerminalSession,
} from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  testDriver,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("ports");
let binding: DockerSandboxBinding;
let resource: ProvisionedSandbox;
let box: SandboxFacade;

/** Sends `request` through `stream` and reads the whole answer (the server closes after it: HTTP/1.0). */
async function exchange(stream: Duplex, request: string): Promise<string> {
  const chunks: Buffer[] = [];
  stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  stream.write(request);
  await ended;
  stream.destroy();
  return Buffer.concat(chunks).toString();
}

/**
 * A python server on the container's loopback: `echo` sends back what it reads and half-closes after the peer's end;
 * `bye` sends "bye", half-closes at once and then counts what it still reads (printed at the peer's end).
 */
const PORT_SERVERS_PY = `
import socket, sys, threading
def echo(c):
    while True:
        d = c.recv(1 << 20)
        if not d: break
        c.sendall(d)
    c.shutdown(socket.SHUT_WR); c.close()
def bye(c):
    c.sendall(b"bye"); c.shutdown(socket.SHUT_WR)
    n = 0
    while True:
        d = c.recv(1 << 16)
        if not d: break
        n += len(d)
    print("bye read", n, flush=True); c.close()
serve = echo if sys.argv[2] == "echo" else bye
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

function codeOf(error: unknown): string | undefined {
  return SandboxError.isInstance(error) || ContainerAgentError.isInstance(error) ? error.code : String(error);
}

/** The `pai-port-connect` helpers this process started (one per container it connected to directly), by pid. */
function portConnectHelpers(): number[] {
  return readdirSync("/proc")
    .filter((entry) => /^\d+$/.test(entry))
    .filter((pid) => {
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
        const parent = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        const program = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0")[0]!;
        return program.endsWith("/pai-port-connect") && parent === process.pid;
      } catch {
        return false; // gone meanwhile
      }
    })
    .map(Number);
}

/** A first connection to `port` of `sandbox`, made once a server listens there. */
async function firstConnection(
  sandbox: ProvisionedSandbox,
  port: number,
  signal: AbortSignal,
): Promise<Duplex> {
  let stream: Duplex | undefined;
  await waitFor(async () => {
    stream = await sandbox.openPort!(port, signal).catch((error: unknown) => {
      if (codeOf(error) !== "SANDBOX_PORT_CLOSED") throw error;
      return undefined;
    });
    return stream !== undefined;
  }, "the server to listen");
  return stream!;
}

/** Sends 100 MiB (each MiB numbered) through an echo server's connection and checks every byte came back in order. */
async function echoHundredMiB(stream: Duplex): Promise<void> {
  const block = randomBytes(1024 * 1024);
  const sent = createHash("sha256");
  const received = createHash("sha256");
  let receivedBytes = 0;
  const done = new Promise<void>((resolve, reject) => {
    stream.on("data", (chunk: Buffer) => {
      received.update(chunk);
      receivedBytes += chunk.length;
    });
    stream.on("end", resolve);
    stream.on("error", reject);
  });
  for (let i = 0; i < 100; i++) {
    const piece = Buffer.from(block);
    piece.writeUInt32BE(i, 0);
    sent.update(piece);
    if (!stream.write(piece)) await once(stream, "drain");
  }
  stream.end();
  await done;
  expect(receivedBytes).toBe(100 * 1024 * 1024);
  expect(received.digest("hex")).toBe(sent.digest("hex"));
}

describe.skipIf(dockerOptedOut)("sandbox ports and terminals (through the in-container agent)", () => {
  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 1 } });
    resource = await binding.provision({
      leaseKey: "thread:ports",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    box = resource.facade;
  });

  afterAll(async () => {
    try {
      await resource?.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
      // the lease's end ended its port helper (which held the container's namespace)
      await waitFor(() => portConnectHelpers().length === 0, "the port helper to end");
    } finally {
      await removePoolContainers(poolId);
    }
  });

  describe("openPort", () => {
    it("reaches python3 -m http.server started with spawn: a GET through the connection", async () => {
      await box.writeFiles([{ path: "site/hello.txt", content: "hello from the sandbox\n" }]);
      const server = await box.spawn({
        command: "python3",
        args: ["-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"],
      });
      try {
        const signal = new AbortController().signal;
        const stream = await firstConnection(resource, 8000, signal);
        const answer = await exchange(stream, "GET /hello.txt HTTP/1.0\r\nHost: localhost:8000\r\n\r\n");
        expect(answer).toMatch(/^HTTP\/1\.0 200 OK\r\n/);
        expect(answer.endsWith("\r\n\r\nhello from the sandbox\n")).toBe(true);
        // Another request, another connection: the server saw both come from its own loopback.
        const again = await exchange(await resource.openPort!(8000, signal), "GET /missing HTTP/1.0\r\n\r\n");
        expect(again).toMatch(/^HTTP\/1\.0 404 /);
        expect(server.output().stderr).toMatch(/127\.0\.0\.1 .*"GET \/hello\.txt HTTP\/1\.0" 200/);
      } finally {
        await server.kill("SIGKILL");
      }
    });

    /** Starts the python server of `mode` on `port` and resolves once it listens (and a first connection to it). */
    async function startServer(port: number, mode: "echo" | "bye") {
      await box.writeFiles([{ path: "port-servers.py", content: PORT_SERVERS_PY }]);
      const server = await box.spawn({ command: "python3", args: ["port-servers.py", String(port), mode] });
      const signal = new AbortController().signal;
      return { server, first: await firstConnection(resource, port, signal), signal };
    }

    it("connects from this machine into the container's namespace: a TCP socket to the port itself, 100 MiB each way", async () => {
      const { server, first, signal } = await startServer(8002, "echo");
      try {
        first.destroy();
        const stream = await resource.openPort!(8002, signal);
        // No process relays it: the socket's far end is the server's own address on the container's loopback.
        expect(stream).toBeInstanceOf(Socket);
        expect([(stream as Socket).remoteAddress, (stream as Socket).remotePort]).toEqual([
          "127.0.0.1",
          8002,
        ]);
        expect(portConnectHelpers()).toHaveLength(1);
        await echoHundredMiB(stream);
      } finally {
        await server.kill("SIGKILL");
      }
    });

    it("half-closes: the server ends first and still reads what the host sends", async () => {
      const { server, first } = await startServer(8003, "bye");
      try {
        const closed = once(first, "close");
        let text = "";
        first.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        await once(first, "end");
        expect(text).toBe("bye");
        first.end("x".repeat(70_000));
        await waitFor(() => /bye read 70000/.test(server.output().stdout), "the server to read the rest");
        await closed;
      } finally {
        await server.kill("SIGKILL");
      }
    });

    it("refuses a program that dials the host socket with a forged token: nothing answers, the socket closes", async () => {
      const probe = await box.runCommand({
        command: "python3",
        args: [
          "-c",
          [
            "import glob, socket",
            "path = glob.glob('/run/pai-egress/*.agent.sock')[0]",
            "c = socket.socket(socket.AF_UNIX); c.connect(path)",
            "c.sendall(b'PAI-AGENT/1 ' + b'A' * 43 + b'\\n')",
            "print('answer', repr(c.recv(100)))",
          ].join("\n"),
        ],
      });
      expect(probe.stdout).toBe("answer b''\n");
    });

    it("answers SANDBOX_PORT_CLOSED when nothing listens, INVALID_ARGUMENT for a bad port", async () => {
      const signal = new AbortController().signal;
      expect(codeOf(await resource.openPort!(8001, signal).catch((error: unknown) => error))).toBe(
        "SANDBOX_PORT_CLOSED",
      );
      for (const port of [0, 65536, 80.5, Number.NaN]) {
        expect(codeOf(await resource.openPort!(port, signal).catch((error: unknown) => error))).toBe(
          "INVALID_ARGUMENT",
        );
      }
    });
  });

  describe("exposePort", () => {
    it("says how to serve previews where no runtime serves them", async () => {
      for (const facade of [box, resource.bind({ signal: new AbortController().signal })]) {
        const error = await facade.exposePort(8000).catch((caught: unknown) => caught);
        expect(codeOf(error)).toBe("PREVIEWS_UNAVAILABLE");
        expect((error as Error).message).toMatch(/createPaiHandler/);
      }
      expect(codeOf(await box.exposePort(0).catch((caught: unknown) => caught))).toBe("INVALID_ARGUMENT");
    });
  });

  describe("openTerminal", () => {
    /** The terminal's output as text, read as it comes; `waitFor` waits for a pattern after an offset. */
    function reader(terminal: TerminalSession) {
      let text = "";
      const decoder = new TextDecoder();
      const done = (async () => {
        for await (const chunk of terminal.output) text += decoder.decode(chunk, { stream: true });
      })();
      return {
        done,
        text: () => text,
        async waitFor(pattern: RegExp, from = 0): Promise<number> {
          let match: RegExpExecArray | null = null;
          await waitFor(
            () => {
              match = pattern.exec(text.slice(from));
              return match !== null;
            },
            `${pattern} in ${JSON.stringify(text.slice(from))}`,
          );
          const found = match as unknown as RegExpExecArray;
          return from + found.index + found[0].length;
        },
      };
    }

    async function processes(): Promise<string> {
      return (await box.runCommand({ command: "ps", args: ["-eo", "pid,sid,user,args"] })).stdout;
    }

    /** Whether a process runs whose command line is exactly `args` (not a shell whose script mentions it). */
    async function running(args: string): Promise<boolean> {
      return (await processes())
        .split("\n")
        .some((line) => line.trim().split(/\s+/).slice(3).join(" ") === args);
    }

    it("runs a login shell as the sandbox user in the workspace: echo, resize and stty size, Ctrl-C, exit", async () => {
      const terminal = await box.openTerminal({ cols: 80, rows: 24 });
      const screen = reader(terminal);
      try {
        expect(terminal.pid).toBeGreaterThan(1);
        await terminal.write("echo hi-$((40 + 2)); id -u; pwd; echo $TERM; stty size; stat -c %u $(tty)\n");
        let at = await screen.waitFor(/hi-42\r\n1000\r\n\/workspace\r\nxterm-256color\r\n24 80\r\n1000\r\n/);
        await terminal.resize({ cols: 120, rows: 40 });
        await terminal.write("stty size\n");
        at = await screen.waitFor(/40 120\r\n/, at);
        await terminal.write("echo started-$((2 + 3)); sleep 100\n");
        at = await screen.waitFor(/started-5\r\n/, at);
        await waitFor(() => running("sleep 100"), "sleep to run");
        await terminal.write("\x03");
        await waitFor(async () => !(await running("sleep 100")), "sleep to be interrupted");
        await terminal.write("echo alive-$((1 + 1))\n");
        at = await screen.waitFor(/alive-2\r\n/, at);
        await expect(terminal.resize({ cols: 0, rows: 10 })).rejects.toMatchObject({
          code: "INVALID_ARGUMENT",
        });
        await terminal.write("exit 7\n");
        expect(await terminal.exit).toEqual({ exitCode: 7, signal: null });
        await screen.done;
      } finally {
        await terminal.close();
      }
    });

    it("close() ends the shell and every process it started, leaving none in the sandbox", async () => {
      const terminal = await box.openTerminal({ cols: 80, rows: 24 });
      const screen = reader(terminal);
      await terminal.write("sleep 300 & nohup sleep 301 >/dev/null 2>&1 & echo bg-$((1 + 2))\n");
      await screen.waitFor(/bg-3\r\n/);
      await waitFor(
        async () => (await running("sleep 300")) && (await running("sleep 301")),
        "the background jobs",
      );
      await terminal.close();
      expect(await terminal.exit).toMatchObject({ exitCode: null, signal: "SIGHUP" });
      await screen.done;
      const left = await processes();
      expect(left).not.toMatch(/ sleep 30[01]/);
      expect(left).not.toMatch(/ -?bash -l/);
    });

    it("a caller's signal closes the session; unread output past the buffer is dropped with a marker", async () => {
      const controller = new AbortController();
      const terminal = await box.openTerminal({
        cols: 80,
        rows: 24,
        command: "head -c 200000 /dev/zero | tr '\\0' x; echo; echo end-$((3 + 4)); sleep 100",
        maxBufferedBytes: 8192,
        signal: controller.signal,
      });
      await waitFor(() => running("sleep 100"), "the command to reach its sleep");
      controller.abort();
      expect((await terminal.exit).signal).toBe("SIGHUP");
      const screen = reader(terminal);
      await screen.done;
      expect(screen.text().length).toBeLessThan(8192 + 200);
      expect(screen.text()).toMatch(/\[pai: \d+ bytes of terminal output dropped\]/);
      expect(await processes()).not.toMatch(/ sleep 100/);
    });

    it("is refused with AGENT_REQUIRED, as ports are, on the docker exec executor", async () => {
      const { id, image } = await box.info();
      const executor = createDockerExecExecutor({ driver: testDriver, containerId: id });
      try {
        const viaExec = createSandboxFacade({ executor, driver: testDriver, containerId: id, image });
        const refused = await viaExec.openTerminal({ cols: 80, rows: 24 }).catch((error: unknown) => error);
        expect(codeOf(refused)).toBe("AGENT_REQUIRED");
        expect(codeOf(await executor.openPort(8000, {}).catch((error: unknown) => error))).toBe(
          "AGENT_REQUIRED",
        );
        expect((await viaExec.runCommand({ command: "echo still here" })).stdout).toBe("still here\n");
      } finally {
        await executor.close();
      }
    });

    it("fails to open with a bad size or a command that does not exist", async () => {
      await expect(box.openTerminal({ cols: 80, rows: 0 })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
      });
      const terminal = await box.openTerminal({ cols: 80, rows: 24, command: "no-such-program-xyz" });
      expect((await terminal.exit).exitCode).toBe(127);
    });
  });
});

describe.skipIf(dockerOptedOut)("sandbox ports relayed by the agent (directPorts: false)", () => {
  const relayedPoolId = uniquePoolId("ports-relayed");
  let relayed: DockerSandboxBinding;
  let relayedResource: ProvisionedSandbox;

  afterAll(async () => {
    try {
      await relayedResource?.release();
      await relayed?.close();
    } finally {
      await removePoolContainers(relayedPoolId);
    }
  });

  it("dials back through the host socket: no frames, 100 MiB each way through an echo server", async () => {
    relayed = dockerSandbox({
      image: sandboxImage,
      poolId: relayedPoolId,
      pool: { min: 0, max: 1 },
      directPorts: false,
    });
    relayedResource = await relayed.provision({
      leaseKey: "thread:ports-relayed",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    const sandbox = relayedResource.facade;
    await sandbox.writeFiles([{ path: "port-servers.py", content: PORT_SERVERS_PY }]);
    const server = await sandbox.spawn({ command: "python3", args: ["port-servers.py", "8002", "echo"] });
    try {
      const stream = await firstConnection(relayedResource, 8002, new AbortController().signal);
      // The agent's relay ends at this process's dial socket (a unix socket): no AgentStream, no helper.
      expect(stream).toBeInstanceOf(Socket);
      expect((stream as Socket).remotePort).toBeUndefined();
      await echoHundredMiB(stream);
      expect(portConnectHelpers().filter((pid) => pid > 0)).toHaveLength(0);
    } finally {
      await server.kill("SIGKILL");
    }
  });
});
