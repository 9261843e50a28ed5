// The aarch64 build of the native programs, run on this machine under Debian's qemu-aarch64-static (user-mode
// emulation: the agent is emulated, the commands it starts run natively) and driven through their real protocols
// over a child's raw stdio, as the host tests of the x86_64 build are. `npm test` installs qemu-user-static
// (scripts/test); without it these tests fail, saying so.

import { type ChildProcessByStdio, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { type AddressInfo, connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable, Writable } from "node:stream";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type AgentClient, createAgentClient } from "./agent-client.ts";
import { AGENT_PROTOCOL_VERSION } from "./agent-protocol.ts";
import { parseEgressPolicy } from "./egress/egress-policy.ts";
import { createEgressProxy, type EgressConnectionEvent } from "./egress/egress-proxy.ts";
import { type RelayAdmission, spawnEgressRelayProcess } from "./egress/egress-relay-process.ts";
import { relayUserArgument, resolveRelayUser } from "./egress/relay-user.ts";
import { findPrebuiltBinary } from "./prebuilt-binary.ts";

const QEMU = "qemu-aarch64-static";
const selfUser = `${process.getuid?.()}:${process.getgid?.()}`;
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

let qemu = "";
let agentBinary = "";
let relayBinary = "";
let scratch = "";

beforeAll(async () => {
  const found = await execa("sh", ["-c", `command -v ${QEMU}`], { reject: false });
  if (found.exitCode !== 0) {
    throw new Error(
      `${QEMU} is missing: the aarch64 agent and relay are tested under it. Install Debian's qemu-user-static ` +
        "(bash scripts/apt-install qemu-user-static; npm test does).",
    );
  }
  qemu = found.stdout.trim();
  agentBinary = await findPrebuiltBinary({ program: "pai-agent", architecture: "arm64" });
  relayBinary = await findPrebuiltBinary({ program: "pai-egress-relay", architecture: "arm64" });
  scratch = await mkdtemp(join(tmpdir(), "pai-arm64-"));
});

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

interface Agent {
  client: AgentClient;
  child: ChildProcessByStdio<Writable, Readable, null>;
}

/** Starts the aarch64 agent under qemu, and a client on its stdio. */
function arm64Agent(): Agent {
  const child = spawn(qemu, [agentBinary, "--user", selfUser], { stdio: ["pipe", "pipe", "inherit"] });
  return { client: createAgentClient({ stream: { readable: child.stdout, writable: child.stdin } }), child };
}

async function withAgent<T>(agent: Agent, use: (agent: Agent) => Promise<T>): Promise<T> {
  try {
    return await use(agent);
  } finally {
    await agent.client.close();
    if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill("SIGKILL");
  }
}

describe("the aarch64 pai-agent under qemu", () => {
  it("runs under qemu-aarch64 and tells the version of the x86_64 build: the same sources", async () => {
    // The version goes to stderr: the agent's stdout carries frames only.
    const version = (await execa(qemu, [agentBinary, "--version"])).stderr;
    expect(version).toMatch(
      new RegExp(`^pai-agent 0\\.2\\.0\\+[0-9a-f]{12} \\(protocol ${AGENT_PROTOCOL_VERSION}\\)$`),
    );
    if (process.arch === "x64") {
      const x64 = await findPrebuiltBinary({ program: "pai-agent", architecture: "x64" });
      expect((await execa(x64, ["--version"])).stderr).toBe(version);
    }
  });

  it("says hello with this protocol, its pid and users, and answers a ping", async () => {
    await withAgent(arm64Agent(), async ({ client, child }) => {
      const hello = await client.hello;
      expect(hello.protocolVersion).toBe(AGENT_PROTOCOL_VERSION);
      expect(hello.pid).toBe(child.pid); // user-mode qemu runs the program in its own process
      expect(`${hello.defaultUid}:${hello.defaultGid}`).toBe(selfUser);
      expect(await client.ping()).toBeGreaterThan(0);
    });
  });

  it("runs a command: stdin in, stdout and stderr apart, the exit code and a death by signal", async () => {
    await withAgent(arm64Agent(), async ({ client }) => {
      const result = await client
        .spawn({
          argv: ["sh", "-c", 'read line; echo "out $line"; echo "err $line" >&2; exit 3'],
          stdin: "arm64\n",
        })
        .wait();
      expect(text(result.stdout)).toBe("out arm64\n");
      expect(text(result.stderr)).toBe("err arm64\n");
      expect(result).toMatchObject({ exitCode: 3, signal: null, terminationReason: "exit" });
      const killed = await client.spawn({ argv: ["sh", "-c", "kill -9 $$"] }).wait();
      expect(killed).toMatchObject({ exitCode: null, signal: 9 });
      const large = randomBytes(2 * 1024 * 1024 + 5);
      const echoed = await client
        .spawn({ argv: ["cat"], stdin: large, maxOutputBytes: 4 * 1024 * 1024 })
        .wait();
      expect(Buffer.from(echoed.stdout).equals(large)).toBe(true);
    });
  });

  it("writes and reads files confined to a root", async () => {
    const root = await mkdtemp(join(scratch, "files-"));
    const within = { root };
    await withAgent(arm64Agent(), async ({ client }) => {
      const path = join(root, "a/b/c.bin");
      const content = randomBytes(100_000);
      await client.writeFile(path, content, { root, mode: 0o640 });
      expect((await readFile(path)).equals(content)).toBe(true);
      expect((await stat(path)).mode & 0o777).toBe(0o640);
      await writeFile(join(root, "from-host.txt"), "written by the host");
      expect(text((await client.readFile(join(root, "from-host.txt"), within))!)).toBe("written by the host");
      expect(await client.readFile(join(root, "missing"), within)).toBeNull();
      await expect(client.readFile(join(root, "a"), within)).rejects.toMatchObject({
        code: "SANDBOX_FILE_FAILED",
        details: { errnoName: "EISDIR" },
      });
    });
  });
});

describe("the aarch64 pai-egress-relay under qemu", () => {
  it("admits a token and tunnels a CONNECT the proxy allows to its upstream, both ways", async () => {
    // The relay is spawned with its socket path as its only argument: a script puts qemu in front.
    const relayCommand = join(scratch, "pai-egress-relay-arm64");
    await writeFile(relayCommand, `#!/bin/sh\nexec ${qemu} ${relayBinary} "$@"\n`);
    await chmod(relayCommand, 0o755);
    const upstreamSockets = new Set<Socket>();
    const upstream = createServer((socket) => {
      upstreamSockets.add(socket);
      socket.on("error", () => {});
      socket.pipe(socket);
    });
    await new Promise<void>((resolve) => upstream.listen(0, "127.0.0.1", resolve));
    const target = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
    const events: EgressConnectionEvent[] = [];
    const proxy = createEgressProxy({
      policy: parseEgressPolicy([target]),
      onConnection: (event) => events.push(event),
    });
    const token = randomBytes(32).toString("base64url");
    const admissions = new Map<number, RelayAdmission>([
      [1, { token, handle: (connection) => proxy.handle(connection, { channel: "socket" }) }],
    ]);
    const path = join(scratch, "relay.sock");
    const relay = spawnEgressRelayProcess({
      binary: relayCommand,
      path,
      user: relayUserArgument(resolveRelayUser(undefined)),
      seccomp: false, // qemu-user cannot install a guest's filter (EINVAL); the x86_64 build's test checks it
      admissions,
      holdProcess: true,
    });
    try {
      await relay.listening;
      const socket = connect(path);
      const chunks: Buffer[] = [];
      socket.on("data", (chunk: Buffer) => chunks.push(chunk));
      const closed = new Promise((resolve) => socket.once("close", resolve));
      socket.write(`PAI-EGRESS/1 ${token}\nCONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      const established = "HTTP/1.1 200 Connection established\r\n\r\n";
      await vi.waitUntil(() => Buffer.concat(chunks).length >= established.length, { timeout: 20_000 });
      const payload = randomBytes(1024 * 1024);
      socket.end(payload);
      await closed;
      const received = Buffer.concat(chunks);
      expect(received.subarray(0, established.length).toString("latin1")).toBe(established);
      expect(received.subarray(established.length).equals(payload)).toBe(true);
      await vi.waitUntil(() => events.length === 1, { timeout: 20_000 });
      expect(events[0]).toMatchObject({
        target,
        decision: "allowed",
        status: 200,
        channel: "socket",
        bytesUp: payload.length,
      });
      expect(relay.refused()).toBe(0);
    } finally {
      await relay.stop();
      for (const socket of upstreamSockets) socket.destroy();
      await new Promise((resolve) => upstream.close(resolve));
    }
  });
});
