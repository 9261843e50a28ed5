import { type ChildProcessByStdio, spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import {
  type AddressInfo,
  connect as connectUnix,
  createServer,
  Socket as NetSocket,
  type Socket,
} from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Duplex, PassThrough, type Readable, type Writable } from "node:stream";
import { setTimeout as sleep } from "node:timers/promises";
import { it as baseIt, beforeAll, describe, expect } from "vitest";
import { type AgentClient, createAgentClient } from "./agent-client.ts";
import { type AgentDialSocket, createAgentDialSocket } from "./agent-dial-socket.ts";
import {
  AGENT_PROTOCOL_VERSION,
  FIRST_STREAM_ID,
  FrameType,
  MAX_FRAME_PAYLOAD_BYTES,
} from "./agent-protocol.ts";
import { ContainerAgentError } from "./container-agent-error.ts";
import { encodeFrame } from "./frame-codec.ts";
import { findPrebuiltBinary } from "./prebuilt-binary.ts";

const isRoot = process.getuid?.() === 0;
const selfUser = `${process.getuid?.()}:${process.getgid?.()}`;
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
let binary = "";

beforeAll(async () => {
  binary = await findPrebuiltBinary({ program: "pai-agent", architecture: process.arch });
});

interface Agent {
  client: AgentClient;
  child: ChildProcessByStdio<Writable, Readable, null>;
  closeErrors: Array<ContainerAgentError | undefined>;
}

function startAgent(args: string[] = ["--user", selfUser], user: { uid?: number; gid?: number } = {}): Agent {
  const child = spawn(binary, args, { stdio: ["pipe", "pipe", "inherit"], ...user });
  const closeErrors: Agent["closeErrors"] = [];
  const client = createAgentClient({
    stream: { readable: child.stdout, writable: child.stdin },
    onClose: (error) => closeErrors.push(error),
  });
  return { client, child, closeErrors };
}

async function stopAgent(agent: Agent): Promise<void> {
  await agent.client.close();
  if (agent.child.exitCode === null && agent.child.signalCode === null) agent.child.kill("SIGKILL");
}

const it = baseIt.extend<{ agent: Agent }>({
  // biome-ignore lint/correctness/noEmptyPattern: vitest reads fixture dependencies from this pattern
  agent: async ({}, use) => {
    const agent = startAgent();
    try {
      await use(agent);
    } finally {
      await stopAgent(agent);
    }
  },
});

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until `check` holds (polling), failing after `ms`. */
async function eventually(check: () => boolean | Promise<boolean>, ms = 3000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(20);
  }
}

/** Children of `pid` in state Z (zombie), from /proc. */
async function zombieChildren(pid: number): Promise<number[]> {
  const zombies: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[1] === String(pid) && fields[0] === "Z") zombies.push(Number(entry));
  }
  return zombies;
}

/** The processes of session `sid` (pid and command name), from /proc. */
async function sessionMembers(sid: number): Promise<Array<{ pid: number; comm: string }>> {
  const members: Array<{ pid: number; comm: string }> = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // state, ppid, pgrp, session
    if (fields[3] === String(sid) && fields[0] !== "Z")
      members.push({ pid: Number(entry), comm: stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")) });
  }
  return members;
}

describe("createAgentClient with the real agent", () => {
  it("says hello with its version, pid and users", async ({ agent }) => {
    const hello = await agent.client.hello;
    expect(hello.protocolVersion).toBe(AGENT_PROTOCOL_VERSION);
    expect(hello.version).toMatch(/^0\.2\.0\+[0-9a-f]{12}$/);
    expect(hello.pid).toBe(agent.child.pid);
    expect(`${hello.defaultUid}:${hello.defaultGid}`).toBe(selfUser);
    expect(await agent.client.ping()).toBeGreaterThan(0);
  });

  it("talks over a single duplex stream too", async () => {
    const child = spawn(binary, ["--user", selfUser], { stdio: ["pipe", "pipe", "inherit"] });
    const client = createAgentClient({
      stream: Duplex.from({ readable: child.stdout, writable: child.stdin }),
    });
    try {
      expect(text((await client.spawn({ argv: ["echo", "duplex"] }).wait()).stdout)).toBe("duplex\n");
    } finally {
      await client.close();
      child.kill("SIGKILL");
    }
  });

  it("runs echo hi", async ({ agent }) => {
    const process = agent.client.spawn({ argv: ["echo", "hi"] });
    expect(await process.pid).toBeGreaterThan(1);
    const result = await process.wait();
    expect(text(result.stdout)).toBe("hi\n");
    expect(result).toMatchObject({ exitCode: 0, signal: null, terminationReason: "exit" });
    expect(result.truncated).toEqual({ stdout: false, stderr: false });
    expect(result.durationMs).toBeGreaterThan(0);
  });

  it("reports exit codes and deaths by signal", async ({ agent }) => {
    const exited = await agent.client.spawn({ argv: ["sh", "-c", "exit 42"] }).wait();
    expect(exited).toMatchObject({ exitCode: 42, signal: null, terminationReason: "exit" });
    const killed = await agent.client.spawn({ argv: ["sh", "-c", "kill -9 $$"] }).wait();
    expect(killed).toMatchObject({ exitCode: null, signal: 9, terminationReason: "exit" });
  });

  it("runs 200 commands at once, each with its own output", async ({ agent }) => {
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        agent.client
          .spawn({ argv: ["sh", "-c", 'echo "out $0"; echo "err $0" >&2; exit $(($0 % 7))', String(i)] })
          .wait(),
      ),
    );
    results.forEach((result, i) => {
      expect(text(result.stdout)).toBe(`out ${i}\n`);
      expect(text(result.stderr)).toBe(`err ${i}\n`);
      expect(result.exitCode).toBe(i % 7);
    });
  });

  it("keeps stdout and stderr apart with every byte value intact", async ({ agent }) => {
    const script = `
      const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      for (let i = 0; i < 200; i++) { process.stdout.write(all); process.stderr.write(all.reverse()); all.reverse(); }`;
    const chunks: Uint8Array[] = [];
    const result = await agent.client
      .spawn({ argv: [process.execPath, "-e", script], onStdout: (chunk) => chunks.push(chunk.slice()) })
      .wait();
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    const reversed = all.slice().reverse();
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toHaveLength(256 * 200);
    expect(result.stderr).toHaveLength(256 * 200);
    for (let i = 0; i < 200; i++) {
      expect(result.stdout.subarray(i * 256, (i + 1) * 256)).toEqual(all);
      expect(result.stderr.subarray(i * 256, (i + 1) * 256)).toEqual(reversed);
    }
    expect(Buffer.concat(chunks)).toEqual(Buffer.from(result.stdout));
  });

  it("pipes stdin given up front, larger than the flow-control window", async ({ agent }) => {
    const input = randomBytes(3 * 1024 * 1024 + 17);
    const result = await agent.client
      .spawn({ argv: ["cat"], stdin: input, maxOutputBytes: 4 * 1024 * 1024 })
      .wait();
    expect(result.exitCode).toBe(0);
    expect(Buffer.from(result.stdout).equals(input)).toBe(true);
  });

  it("streams stdin interactively and closes it", async ({ agent }) => {
    const lines: string[] = [];
    const process = agent.client.spawn({
      argv: ["sh", "-c", 'while read line; do echo "got $line"; done; echo done'],
      stdin: "pipe",
      onStdout: (chunk) => lines.push(text(chunk)),
    });
    await process.writeStdin("one\n");
    await eventually(() => lines.join("").includes("got one"));
    await process.writeStdin(new TextEncoder().encode("two\n"));
    await process.closeStdin();
    const result = await process.wait();
    expect(text(result.stdout)).toBe("got one\ngot two\ndone\n");
    await expect(process.writeStdin("late")).rejects.toThrow(/already closed/);
  });

  it("gives a command without stdin an immediate EOF", async ({ agent }) => {
    const result = await agent.client.spawn({ argv: ["cat"], timeoutMs: 5000 }).wait();
    expect(result).toMatchObject({ exitCode: 0, terminationReason: "exit" });
    expect(result.stdout).toHaveLength(0);
  });

  it("delivers bytes that look like frames as plain stdout data", async ({ agent }) => {
    const forged = Buffer.concat([
      encodeFrame(FrameType.Exit, 1, new Uint8Array([0, 0, 0, 0, 0])),
      encodeFrame(FrameType.Hello, 0, new Uint8Array(22)),
      encodeFrame(FrameType.Stdout, 2, new TextEncoder().encode("forged")),
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0x99]), // an oversize "header" too
    ]);
    const script = `process.stdout.write(Buffer.from("${forged.toString("base64")}", "base64")); process.exitCode = 3`;
    const result = await agent.client.spawn({ argv: [process.execPath, "-e", script] }).wait();
    expect(Buffer.from(result.stdout).equals(forged)).toBe(true);
    expect(result.exitCode).toBe(3);
    // The connection is unharmed.
    expect(text((await agent.client.spawn({ argv: ["echo", "still fine"] }).wait()).stdout)).toBe(
      "still fine\n",
    );
  });

  it("hands commands no descriptor but their own stdin, stdout and stderr", async ({ agent }) => {
    const result = await agent.client.spawn({ argv: ["sh", "-c", "ls /proc/$$/fd; echo forged >&3"] }).wait();
    expect(text(result.stdout).split("\n").filter(Boolean).sort()).toEqual(["0", "1", "2"]);
    expect(text(result.stderr)).toMatch(/3/); // "Bad file descriptor"
  });

  it("kills the whole process group, descendants included", async ({ agent }) => {
    let output = "";
    const process = agent.client.spawn({
      argv: ["sh", "-c", "sleep 100 & echo $!; sleep 100 & echo $!; wait"],
      onStdout: (chunk) => {
        output += text(chunk);
      },
    });
    await eventually(() => output.split("\n").filter(Boolean).length === 2);
    const pids = output.split("\n").filter(Boolean).map(Number);
    expect(pids.every(isAlive)).toBe(true);
    process.kill();
    const result = await process.wait();
    expect(result).toMatchObject({ signal: 15, exitCode: null, terminationReason: "abort" });
    await eventually(() => !pids.some(isAlive)); // dead and reaped
  });

  it("escalates TERM to KILL for a command that ignores TERM", async ({ agent }) => {
    const started = performance.now();
    const result = await agent.client
      .spawn({ argv: ["sh", "-c", "trap '' TERM; sleep 100"], timeoutMs: 100, forceKillAfterMs: 300 })
      .wait();
    expect(result).toMatchObject({ signal: 9, terminationReason: "timeout" });
    expect(performance.now() - started).toBeLessThan(3000);
  });

  it("stops a command at its timeout", async ({ agent }) => {
    const result = await agent.client.spawn({ argv: ["sleep", "100"], timeoutMs: 200 }).wait();
    expect(result).toMatchObject({ signal: 15, exitCode: null, terminationReason: "timeout" });
    expect(result.durationMs).toBeLessThan(1000);
  });

  it("stops a command when its signal aborts, and never starts one already aborted", async ({ agent }) => {
    const controller = new AbortController();
    const process = agent.client.spawn({ argv: ["sleep", "100"], signal: controller.signal });
    await process.pid;
    controller.abort();
    expect(await process.wait()).toMatchObject({ signal: 15, terminationReason: "abort" });

    const never = agent.client.spawn({ argv: ["sleep", "100"], signal: AbortSignal.abort() });
    expect(await never.wait()).toMatchObject({ exitCode: null, signal: null, terminationReason: "abort" });
    await expect(never.pid).rejects.toThrow();
  });

  it("reaps orphans and exited commands, leaving no zombies", async ({ agent }) => {
    await Promise.all(
      Array.from({ length: 20 }, () =>
        agent.client.spawn({ argv: ["sh", "-c", "sleep 0.05 & sleep 0.05 & exit 0"] }).wait(),
      ),
    );
    // the orphaned sleeps outlive their shells by up to 50 ms: look once they are all gone
    await sleep(200);
    await eventually(async () => (await zombieChildren(agent.child.pid!)).length === 0);
    expect(await zombieChildren(agent.child.pid!)).toEqual([]);
  });

  it("holds a command back instead of buffering when the host stops reading", async ({ agent }) => {
    let received = 0;
    const total = 64 * 1024 * 1024;
    const process = agent.client.spawn({
      argv: ["head", "-c", String(total), "/dev/zero"],
      maxOutputBytes: 1024,
      onStdout: (chunk) => {
        received += chunk.length;
      },
    });
    await process.pid;
    agent.child.stdout.pause();
    await sleep(400);
    const status = await readFile(`/proc/${agent.child.pid}/status`, "utf8");
    const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    expect(rssKiB).toBeLessThan(16 * 1024); // the agent stops reading the command at 4 MiB queued
    expect(received).toBeLessThan(total);
    agent.child.stdout.resume();
    expect((await process.wait()).exitCode).toBe(0);
    expect(received).toBe(total);
  });

  it("caps output at the head and the tail, and keeps the command running", async ({ agent }) => {
    const seen: number[] = [];
    const result = await agent.client
      .spawn({
        argv: ["seq", "1", "100000"],
        maxOutputBytes: 1000,
        onStdout: (chunk) => seen.push(chunk.length),
      })
      .wait();
    const full = Array.from({ length: 100000 }, (_, i) => `${i + 1}\n`).join("");
    expect(result.terminationReason).toBe("exit");
    expect(result.exitCode).toBe(0);
    expect(result.truncated).toEqual({ stdout: true, stderr: false });
    expect(result.omittedBytes.stdout).toBe(full.length - 1000);
    expect(text(result.stdout)).toBe(full.slice(0, 500) + full.slice(-500));
    expect(seen.reduce((a, b) => a + b, 0)).toBe(full.length);
  });

  it("kills a command at the output limit when asked to", async ({ agent }) => {
    const result = await agent.client
      .spawn({ argv: ["yes"], maxOutputBytes: 100_000, onOutputLimit: "kill" })
      .wait();
    expect(result.terminationReason).toBe("output-limit");
    expect(result.signal).toBe(15);
    expect(result.stdout).toHaveLength(100_000);
    expect(result.truncated.stdout).toBe(true);
  });

  it("passes cwd and env, and can start from an empty environment", async ({ agent }) => {
    const dir = await mkdtemp(join(tmpdir(), "pai-agent-"));
    try {
      const result = await agent.client
        .spawn({
          argv: ["sh", "-c", 'pwd; echo "$GREETING"; echo "$HOME"'],
          cwd: dir,
          env: { GREETING: "hello" },
        })
        .wait();
      expect(text(result.stdout)).toBe(`${dir}\nhello\n${process.env.HOME ?? ""}\n`);
      const bare = await agent.client
        .spawn({ argv: ["/usr/bin/env"], env: { ONLY: "this", PATH: "/usr/bin:/bin" }, inheritEnv: false })
        .wait();
      expect(text(bare.stdout).split("\n").filter(Boolean).sort()).toEqual([
        "ONLY=this",
        "PATH=/usr/bin:/bin",
      ]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fails to start a missing program or a missing cwd with the reason", async ({ agent }) => {
    const missing = agent.client.spawn({ argv: ["no-such-program-pai"] });
    await expect(missing.pid).rejects.toMatchObject({
      code: "SANDBOX_SPAWN_FAILED",
      details: { errnoName: "ENOENT" },
      message: expect.stringMatching(/exec no-such-program-pai: No such file or directory/),
    });
    await expect(missing.wait()).rejects.toThrow(ContainerAgentError);
    await expect(agent.client.spawn({ argv: ["true"], cwd: "/no/such/dir" }).wait()).rejects.toThrow(
      /chdir \/no\/such\/dir/,
    );
  });

  it("writes and reads files confined to a root, creating parents; a missing file reads as null", async ({
    agent,
  }) => {
    const root = await mkdtemp(join(tmpdir(), "pai-agent-"));
    const within = { root };
    try {
      const path = join(root, "a/b/c.bin");
      const content = Uint8Array.from({ length: 256 }, (_, i) => i);
      await agent.client.writeFile(path, content, { root, mode: 0o600 });
      expect(new Uint8Array(await readFile(path))).toEqual(content);
      expect((await stat(path)).mode & 0o777).toBe(0o600);
      expect(await agent.client.readFile(path, within)).toEqual(content);
      await agent.client.writeFile(path, "replaced", within);
      expect(text((await agent.client.readFile(path, within))!)).toBe("replaced");

      expect(await agent.client.readFile(join(root, "missing"), within)).toBeNull();
      expect(await agent.client.readFile(join(root, "missing/dir/file"), within)).toBeNull();
      expect(await agent.client.readFile(join(path, "under-a-file"), within)).toBeNull();
      await expect(agent.client.readFile(join(root, "a"), within)).rejects.toMatchObject({
        code: "SANDBOX_FILE_FAILED",
        details: { errnoName: "EISDIR" },
      });
      await expect(agent.client.writeFile(join(root, "a"), "x", within)).rejects.toMatchObject({
        details: { errnoName: "EISDIR" },
      });
      await writeFile(join(root, "big"), new Uint8Array(5000));
      await expect(agent.client.readFile(join(root, "big"), { root, maxBytes: 4096 })).rejects.toMatchObject({
        details: { errnoName: "EFBIG" },
      });
      const large = randomBytes(MAX_FRAME_PAYLOAD_BYTES - 4096);
      await agent.client.writeFile(join(root, "large"), large, within);
      expect(Buffer.from((await agent.client.readFile(join(root, "large"), within))!).equals(large)).toBe(
        true,
      );
      await expect(
        agent.client.writeFile(join(root, "huge"), new Uint8Array(MAX_FRAME_PAYLOAD_BYTES), within),
      ).rejects.toThrow(/use the archive API/);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it("resolves symlinks inside the container and refuses a path that leaves the root", async ({ agent }) => {
    const { symlink, mkdir } = await import("node:fs/promises");
    const base = await mkdtemp(join(tmpdir(), "pai-agent-"));
    const root = join(base, "workspace");
    try {
      await mkdir(root);
      await writeFile(join(base, "outside.txt"), "secret");
      await writeFile(join(root, "inside.txt"), "mine");
      await symlink(join(base, "outside.txt"), join(root, "escape"));
      await symlink(base, join(root, "up"));
      await symlink(join(root, "inside.txt"), join(root, "alias"));
      const outside = { code: "SANDBOX_FILE_FAILED", details: { errnoName: "EXDEV" } };
      await expect(agent.client.readFile(join(root, "escape"), { root })).rejects.toMatchObject({
        ...outside,
        message: join(base, "outside.txt"),
      });
      await expect(agent.client.readFile(join(root, "up/outside.txt"), { root })).rejects.toMatchObject(
        outside,
      );
      await expect(agent.client.writeFile(join(root, "up/new.txt"), "x", { root })).rejects.toMatchObject(
        outside,
      );
      await expect(
        agent.client.writeFile(join(root, "escape"), "x", { root, checkOnly: true }),
      ).rejects.toMatchObject(outside);
      await expect(agent.client.readFile("/etc/hostname", { root })).rejects.toMatchObject(outside);
      expect(await readFile(join(base, "outside.txt"), "utf8")).toBe("secret");
      // A symlink that stays inside is followed for reading, and replaced (as tar does) when written.
      expect(text((await agent.client.readFile(join(root, "alias"), { root }))!)).toBe("mine");
      await agent.client.writeFile(join(root, "alias"), "replaced", { root });
      expect(await readFile(join(root, "inside.txt"), "utf8")).toBe("mine");
      expect(await readFile(join(root, "alias"), "utf8")).toBe("replaced");
      await agent.client.writeFile(join(root, "checked.txt"), "x", { root, checkOnly: true });
      await expect(stat(join(root, "checked.txt"))).rejects.toMatchObject({ code: "ENOENT" });
    } finally {
      await rm(base, { recursive: true, force: true });
    }
  });

  it("gives a command fd 3 and fd 4 when asked, relayed both ways", async ({ agent }) => {
    const received: Uint8Array[] = [];
    // The shell lists its own open fds with builtins only: a pipeline would show its own pipes while it forks.
    const listFds =
      "for fd in 0 1 2 3 4 5 6 7 8 9 10 11 12; do [ -e /proc/$$/fd/$fd ] && printf '%s ' $fd >&2; done";
    const process = agent.client.spawn({
      argv: ["sh", "-c", `${listFds}; head -c 11 <&3 | tr a-z A-Z >&4`],
      onPipe: (chunk) => received.push(chunk),
    });
    await process.writePipe("hello ");
    await process.writePipe("world");
    const result = await process.wait();
    expect(result.exitCode).toBe(0);
    expect(text(result.stderr).trim()).toBe("0 1 2 3 4");
    expect(Buffer.concat(received).toString()).toBe("HELLO WORLD");
    await expect(agent.client.spawn({ argv: ["true"] }).writePipe("x")).rejects.toThrow(/onPipe/);
  });

  it("relays connections to its loopback listener both ways, flow-controlled, with half-closes", async ({
    agent,
  }) => {
    const { connect } = await import("node:net");
    const { createHash } = await import("node:crypto");
    const accepted: number[] = [];
    let onNext = (stream: Duplex) => stream.pipe(stream); // echo, ending when the program ends its side
    const port = await agent.client.listen({
      port: 0,
      onConnection: (stream) => {
        accepted.push(stream.id);
        onNext(stream);
      },
    });
    expect(port).toBeGreaterThan(0);
    await expect(agent.client.listen({ port: 0, onConnection: () => {} })).rejects.toThrow(
      /already listening/,
    );
    const payload = randomBytes(24 * 1024 * 1024);
    const echoed = await new Promise<Buffer>((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port });
      const chunks: Buffer[] = [];
      socket.on("data", (chunk) => chunks.push(chunk));
      socket.on("end", () => resolve(Buffer.concat(chunks)));
      socket.on("error", reject);
      socket.end(payload);
    });
    expect(createHash("sha256").update(echoed).digest("hex")).toBe(
      createHash("sha256").update(payload).digest("hex"),
    );
    expect(accepted).toHaveLength(1);
    expect(accepted[0]).toBeGreaterThanOrEqual(0x80000000);
    // A program that resets its connection closes the host's stream too.
    const closedOnHost = new Promise<void>((resolve) => {
      onNext = (stream) => stream.on("close", () => resolve());
    });
    const socket = connect({ host: "127.0.0.1", port });
    socket.on("connect", () => socket.resetAndDestroy());
    await closedOnHost;
    expect(accepted).toHaveLength(2);
  });

  it("relays connections to the host socket with its token, both ways; tunnels them when it is unreachable", async ({
    agent,
  }) => {
    const { connect } = await import("node:net");
    const { createHash } = await import("node:crypto");
    const { createServer } = await import("node:net");
    const directory = await mkdtemp(join(tmpdir(), "pai-egress-test-"));
    const token = randomBytes(32).toString("base64url");
    // A host socket that records each connection's header line, then echoes what follows it.
    const relayed: string[] = [];
    const hostSocket = createServer((socket) => {
      let head = Buffer.alloc(0);
      const onData = (chunk: Buffer) => {
        head = Buffer.concat([head, chunk]);
        const end = head.indexOf(10);
        if (end < 0) return;
        socket.off("data", onData);
        relayed.push(head.subarray(0, end).toString("latin1"));
        socket.write(head.subarray(end + 1));
        socket.pipe(socket); // echo, ending when the program ends its side
      };
      socket.on("data", onData);
    });
    await new Promise<void>((resolve) => hostSocket.listen(join(directory, "host.sock"), resolve));
    const other = startAgent();
    try {
      const tunnelled: number[] = [];
      const port = await agent.client.listen({
        port: 0,
        onConnection: (stream) => tunnelled.push(stream.id),
        hostSocket: { path: join(directory, "host.sock"), token },
      });
      const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");
      const roundTrip = (toPort: number, payload: Buffer) =>
        new Promise<Buffer>((resolve, reject) => {
          const socket = connect({ host: "127.0.0.1", port: toPort });
          const chunks: Buffer[] = [];
          socket.on("data", (chunk) => chunks.push(chunk));
          socket.on("end", () => resolve(Buffer.concat(chunks)));
          socket.on("error", reject);
          socket.end(payload);
        });
      const payload = randomBytes(24 * 1024 * 1024);
      expect(sha(await roundTrip(port, payload))).toBe(sha(payload));
      expect(relayed).toEqual([`PAI-EGRESS/1 ${token}`]);
      expect(tunnelled).toEqual([]);

      // The same agent protocol with a socket that is not there: the connection goes over the frames.
      const echoedInFrames: number[] = [];
      const otherPort = await other.client.listen({
        port: 0,
        onConnection: (stream) => {
          echoedInFrames.push(stream.id);
          stream.pipe(stream);
        },
        hostSocket: { path: join(directory, "missing.sock"), token },
      });
      expect((await roundTrip(otherPort, Buffer.from("hello"))).toString()).toBe("hello");
      expect(echoedInFrames).toHaveLength(1);
      expect(relayed).toHaveLength(1);
    } finally {
      await stopAgent(other);
      await new Promise((resolve) => hostSocket.close(resolve));
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("rejects everything in flight when the agent dies", async ({ agent }) => {
    const running = agent.client.spawn({ argv: ["sleep", "100"] });
    await running.pid;
    const pending = agent.client.readFile("/proc/self/status", { root: "/proc" }); // may or may not win the race
    agent.child.kill("SIGKILL");
    await expect(running.wait()).rejects.toMatchObject({ code: "SANDBOX_PROTOCOL" });
    await pending.catch(() => {});
    expect(agent.client.closed).toBe(true);
    expect(agent.closeErrors).toHaveLength(1);
    expect(ContainerAgentError.hasCode(agent.closeErrors[0], "SANDBOX_PROTOCOL")).toBe(true);
    await expect(agent.client.ping()).rejects.toMatchObject({ code: "SANDBOX_PROTOCOL" });
    await expect(agent.client.spawn({ argv: ["true"] }).wait()).rejects.toMatchObject({
      code: "SANDBOX_PROTOCOL",
    });
  });

  it("on close, rejects what is in flight and the agent kills its commands and exits", async ({ agent }) => {
    const running = agent.client.spawn({ argv: ["sleep", "100"] });
    const pid = await running.pid;
    const exited = new Promise((resolve) => agent.child.once("exit", resolve));
    await agent.client.close();
    await expect(running.wait()).rejects.toMatchObject({
      code: "SANDBOX_PROTOCOL",
      message: expect.stringMatching(/closed/),
    });
    expect(await exited).toBe(0);
    expect(agent.closeErrors).toEqual([undefined]);
    await eventually(() => !isAlive(pid));
  });
});

/** A server on this machine's loopback (where the local agent's 127.0.0.1 is), closed after `use`. */
async function withServer(
  onSocket: (socket: Socket) => void,
  use: (port: number) => Promise<void>,
): Promise<void> {
  const server = createServer(onSocket);
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await use((server.address() as AddressInfo).port);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}

describe("AgentClient.connect with the real agent", () => {
  it("relays 100 MiB both ways through an echo server, flow-controlled, with bounded agent memory", async ({
    agent,
  }) => {
    await withServer(
      (socket) => socket.pipe(socket),
      async (port) => {
        const stream = await agent.client.connect(port);
        expect(stream.id).toBeLessThan(FIRST_STREAM_ID);
        const block = randomBytes(1024 * 1024);
        const sent = createHash("sha256");
        const received = createHash("sha256");
        let receivedBytes = 0;
        let maxRssKiB = 0;
        const sampler = setInterval(() => {
          readFile(`/proc/${agent.child.pid}/status`, "utf8")
            .then((status) => {
              maxRssKiB = Math.max(maxRssKiB, Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]));
            })
            .catch(() => {});
        }, 20);
        try {
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
        } finally {
          clearInterval(sampler);
        }
        expect(receivedBytes).toBe(100 * 1024 * 1024);
        expect(received.digest("hex")).toBe(sent.digest("hex"));
        // Windows of 4 MiB each way, and a paused read of the host above 16 MiB queued.
        expect(maxRssKiB).toBeLessThan(48 * 1024);
      },
    );
  });

  it("rejects a port where nothing listens with SANDBOX_PORT_CLOSED, and a bad port with INVALID_ARGUMENT", async ({
    agent,
  }) => {
    let freePort = 0;
    await withServer(
      () => {},
      async (port) => {
        freePort = port;
      },
    );
    const refused = await agent.client.connect(freePort).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ContainerAgentError);
    expect(refused).toMatchObject({
      code: "SANDBOX_PORT_CLOSED",
      details: { port: freePort, errnoName: "ECONNREFUSED" },
    });
    for (const port of [0, 65536, 1.5, -1]) {
      await expect(agent.client.connect(port)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    // The agent is still fine.
    expect(text((await agent.client.spawn({ argv: ["echo", "ok"] }).wait()).stdout)).toBe("ok\n");
  });

  it("ends the stream when the server closes, in order, and closes it when the server resets", async ({
    agent,
  }) => {
    let mode: "end" | "reset" = "end";
    await withServer(
      (socket) => {
        if (mode === "end") socket.end("bye");
        else socket.resetAndDestroy();
      },
      async (port) => {
        const stream = await agent.client.connect(port);
        const chunks: Buffer[] = [];
        stream.on("data", (chunk: Buffer) => chunks.push(chunk));
        await once(stream, "end");
        expect(Buffer.concat(chunks).toString()).toBe("bye");
        stream.end();
        await once(stream, "close");
        // Reset at once, often in the very read that says CONNECTED: the close is still seen by the awaiter.
        mode = "reset";
        for (let i = 0; i < 100; i++) {
          const reset = await agent.client.connect(port);
          reset.resume();
          await once(reset, "close");
        }
      },
    );
  });

  it("closes the server's socket when the host destroys the stream, and frees the connection", async ({
    agent,
  }) => {
    const closedOnServer: Array<Promise<unknown>> = [];
    await withServer(
      (socket) => {
        socket.resume();
        closedOnServer.push(once(socket, "close"));
      },
      async (port) => {
        for (let i = 0; i < 50; i++) {
          const stream = await agent.client.connect(port);
          stream.write("hello");
          stream.destroy();
        }
        await eventually(() => closedOnServer.length === 50);
        await Promise.all(closedOnServer);
        // Nothing is left open in the agent: its descriptors are back to what a fresh one holds.
        const fds = await readdir(`/proc/${agent.child.pid}/fd`);
        expect(fds.length).toBeLessThan(10);
      },
    );
  });

  it("refuses a connection past its bound of 1024 with SANDBOX_CONNECT_FAILED, and takes one again once one closes", async ({
    agent,
  }) => {
    await withServer(
      (socket) => socket.resume(),
      async (port) => {
        const streams = [];
        for (let i = 0; i < 1024; i++) streams.push(await agent.client.connect(port));
        const refused = await agent.client.connect(port).catch((error: unknown) => error);
        expect(refused).toMatchObject({ code: "SANDBOX_CONNECT_FAILED", details: { errnoName: "EMFILE" } });
        const closed = once(streams.pop()!.destroy(), "close");
        await closed;
        await eventually(async () => {
          const again = await agent.client.connect(port).catch(() => undefined);
          if (again) streams.push(again);
          return again !== undefined;
        });
        for (const stream of streams) stream.destroy();
        await eventually(async () => (await readdir(`/proc/${agent.child.pid}/fd`)).length < 10);
      },
    );
  });

  it("gives up a connection whose signal aborts", async ({ agent }) => {
    await withServer(
      (socket) => socket.pipe(socket),
      async (port) => {
        const controller = new AbortController();
        controller.abort(new Error("gave up"));
        await expect(agent.client.connect(port, { signal: controller.signal })).rejects.toThrow("gave up");
        // Given up while the agent connects: the connection it made is closed, nothing stays open.
        for (let i = 0; i < 20; i++) {
          const late = new AbortController();
          const connecting = agent.client.connect(port, { signal: late.signal });
          late.abort(new Error("gave up late"));
          await expect(connecting).rejects.toThrow("gave up late");
        }
        const stream = await agent.client.connect(port, { signal: new AbortController().signal });
        stream.end("still works");
        await once(stream.resume(), "end");
        await eventually(async () => (await readdir(`/proc/${agent.child.pid}/fd`)).length < 10);
      },
    );
  });
});

describe("AgentClient.connect dialling back to a host socket, with the real agent", () => {
  /** This process's dial socket in a fresh directory (the local agent reaches it at its real path). */
  const dialIt = it.extend<{ dial: { socket: AgentDialSocket; path: string } }>({
    // biome-ignore lint/correctness/noEmptyPattern: vitest reads fixture dependencies from this pattern
    dial: async ({}, use) => {
      const directory = await mkdtemp(join(tmpdir(), "pai-dialback-"));
      const socket = await createAgentDialSocket({ directory });
      try {
        await use({ socket, path: join(directory, socket.fileName) });
      } finally {
        await socket.close();
        await rm(directory, { recursive: true, force: true });
      }
    },
  });

  /** Bytes the agent wrote to its stdout (the frame stream) from now on. */
  function frameBytes(agent: Agent): () => number {
    let bytes = 0;
    agent.child.stdout.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    return () => bytes;
  }

  /** Dials the dial socket as a program in the container could, saying `line`; resolves when it is closed. */
  async function dialWith(path: string, line: string): Promise<void> {
    const client = connectUnix(path);
    client.on("error", () => {});
    client.resume();
    client.write(line);
    await once(client, "close");
  }

  dialIt(
    "relays 100 MiB both ways through an echo server, none of it in frames, and returns a net.Socket",
    async ({ agent, dial }) => {
      await withServer(
        (socket) => socket.pipe(socket),
        async (port) => {
          const framed = frameBytes(agent);
          const socket = await agent.client.connect(port, { hostSocket: dial.socket.dialBack(dial.path) });
          expect(socket).toBeInstanceOf(NetSocket);
          const block = randomBytes(1024 * 1024);
          const sent = createHash("sha256");
          const received = createHash("sha256");
          let receivedBytes = 0;
          const done = new Promise<void>((resolve, reject) => {
            socket.on("data", (chunk: Buffer) => {
              received.update(chunk);
              receivedBytes += chunk.length;
            });
            socket.on("end", resolve);
            socket.on("error", reject);
          });
          for (let i = 0; i < 100; i++) {
            const piece = Buffer.from(block);
            piece.writeUInt32BE(i, 0);
            sent.update(piece);
            if (!socket.write(piece)) await once(socket, "drain");
          }
          socket.end();
          await done;
          expect(receivedBytes).toBe(100 * 1024 * 1024);
          expect(received.digest("hex")).toBe(sent.digest("hex"));
          expect(framed()).toBeLessThan(64 * 1024);
          await once(socket, "close");
          await eventually(async () => (await readdir(`/proc/${agent.child.pid}/fd`)).length < 10);
        },
      );
    },
  );

  dialIt("half-closes each way as the frame path does", async ({ agent, dial }) => {
    // The server answers after the host's end; then, on a second connection, ends first and still reads.
    let second = false;
    const heard: string[] = [];
    await withServer(
      (socket) => {
        let text = "";
        socket.on("data", (chunk: Buffer) => {
          text += chunk.toString();
        });
        if (!second) {
          socket.on("end", () => socket.end(`got ${text}`));
          return;
        }
        socket.end("bye");
        socket.on("end", () => heard.push(text));
      },
      async (port) => {
        const first = await agent.client.connect(port, { hostSocket: dial.socket.dialBack(dial.path) });
        let answer = "";
        first.on("data", (chunk: Buffer) => {
          answer += chunk.toString();
        });
        first.end("ping");
        await once(first, "end");
        expect(answer).toBe("got ping");

        second = true;
        const other = await agent.client.connect(port, { hostSocket: dial.socket.dialBack(dial.path) });
        const closed = once(other, "close");
        let bye = "";
        other.on("data", (chunk: Buffer) => {
          bye += chunk.toString();
        });
        await once(other, "end");
        expect(bye).toBe("bye");
        // The server ended its side; this one still writes, and the server reads it.
        other.end("after your end");
        await eventually(() => heard.length === 1);
        expect(heard).toEqual(["after your end"]);
        await closed;
      },
    );
  });

  dialIt(
    "rejects a port where nothing listens with SANDBOX_PORT_CLOSED and spends the token",
    async ({ agent, dial }) => {
      let freePort = 0;
      await withServer(
        () => {},
        async (port) => {
          freePort = port;
        },
      );
      const hostSocket = dial.socket.dialBack(dial.path);
      await expect(agent.client.connect(freePort, { hostSocket })).rejects.toMatchObject({
        code: "SANDBOX_PORT_CLOSED",
        details: { port: freePort, errnoName: "ECONNREFUSED" },
      });
      const refused = dial.socket.refused();
      await dialWith(dial.path, `PAI-AGENT/1 ${hostSocket.token}\n`);
      expect(dial.socket.refused()).toBe(refused + 1);
    },
  );

  dialIt(
    "refuses a forged token on the dial socket, and a token twice: each is bound to one CONNECT",
    async ({ agent, dial }) => {
      await withServer(
        (socket) => socket.pipe(socket),
        async (port) => {
          const refused = dial.socket.refused();
          await dialWith(dial.path, `PAI-AGENT/1 ${randomBytes(32).toString("base64url")}\n`);
          expect(dial.socket.refused()).toBe(refused + 1);

          const hostSocket = dial.socket.dialBack(dial.path);
          const socket = await agent.client.connect(port, { hostSocket });
          // Spent: neither a program that learnt it nor a second CONNECT gets through with it.
          await dialWith(dial.path, `PAI-AGENT/1 ${hostSocket.token}\n`);
          expect(dial.socket.refused()).toBe(refused + 2);
          await expect(agent.client.connect(port, { hostSocket })).rejects.toMatchObject({
            code: "SANDBOX_PROTOCOL",
          });
          // The first connection is unharmed.
          socket.end("still mine");
          let echoed = "";
          socket.on("data", (chunk: Buffer) => {
            echoed += chunk.toString();
          });
          await once(socket, "end");
          expect(echoed).toBe("still mine");
          await eventually(async () => (await readdir(`/proc/${agent.child.pid}/fd`)).length < 10);
        },
      );
    },
  );

  dialIt("gives up a connection whose signal aborts, leaving nothing open", async ({ agent, dial }) => {
    await withServer(
      (socket) => socket.pipe(socket),
      async (port) => {
        const controller = new AbortController();
        controller.abort(new Error("gave up"));
        await expect(
          agent.client.connect(port, {
            signal: controller.signal,
            hostSocket: dial.socket.dialBack(dial.path),
          }),
        ).rejects.toThrow("gave up");
        for (let i = 0; i < 20; i++) {
          const late = new AbortController();
          const connecting = agent.client.connect(port, {
            signal: late.signal,
            hostSocket: dial.socket.dialBack(dial.path),
          });
          late.abort(new Error("gave up late"));
          await expect(connecting).rejects.toThrow("gave up late");
        }
        const socket = await agent.client.connect(port, { hostSocket: dial.socket.dialBack(dial.path) });
        socket.end("still works");
        await once(socket.resume(), "end");
        await eventually(async () => (await readdir(`/proc/${agent.child.pid}/fd`)).length < 10);
      },
    );
  });
});

describe("AgentClient.spawn with a terminal", () => {
  /** A shell on a terminal, its output (as text) gathered. */
  function shell(agent: Agent, size = { cols: 80, rows: 24 }) {
    let output = "";
    const process = agent.client.spawn({
      argv: ["bash", "--norc", "--noprofile", "-i"],
      env: { PS1: "$ ", TERM: "xterm-256color" },
      stdin: "pipe",
      pty: size,
      maxOutputBytes: 0,
      killGroupOnExit: true,
      onStdout: (chunk) => {
        output += Buffer.from(chunk).toString();
      },
    });
    return {
      process,
      /** Waits until the output after `from` matches `pattern`; returns the offset past the match. */
      async waitFor(pattern: RegExp, from = 0): Promise<number> {
        let match: RegExpExecArray | null = null;
        await eventually(() => {
          match = pattern.exec(output.slice(from));
          return match !== null;
        }, 10_000).catch(() => {
          throw new Error(`no ${pattern} in ${JSON.stringify(output.slice(from))}`);
        });
        const found = match as unknown as RegExpExecArray;
        return from + found.index + found[0].length;
      },
    };
  }

  it("runs a shell: echo shows its output, stty size the size given, then a new size after resize", async ({
    agent,
  }) => {
    const { process, waitFor } = shell(agent);
    await process.writeStdin("echo hi-$((40 + 2))\n");
    let at = await waitFor(/hi-42\r\n/);
    await process.writeStdin("stty size; tty\n");
    at = await waitFor(/24 80\r\n\/dev\/pts\/\d+\r\n/, at);
    process.resize({ cols: 132, rows: 43 });
    await process.writeStdin("stty size\n");
    await waitFor(/43 132\r\n/, at);
    expect(() => process.resize({ cols: 0, rows: 10 })).toThrow(/cols/);
    await process.writeStdin("exit 3\n");
    expect(await process.wait()).toMatchObject({ exitCode: 3, terminationReason: "exit" });
  });

  it("interrupts the foreground job on Ctrl-C and the shell goes on", async ({ agent }) => {
    const { process, waitFor } = shell(agent);
    const shellPid = await process.pid;
    await process.writeStdin("echo started-$((2 + 3)); sleep 100\n");
    const at = await waitFor(/started-5\r\n/);
    const sleepers = async () => (await sessionMembers(shellPid)).filter((member) => member.comm === "sleep");
    await eventually(async () => (await sleepers()).length === 1);
    await process.writeStdin("\x03");
    await eventually(async () => (await sleepers()).length === 0);
    await process.writeStdin("echo alive-$((1 + 1))\n");
    await waitFor(/alive-2\r\n/, at);
    await process.writeStdin("exit\n");
    expect(await process.wait()).toMatchObject({ exitCode: 0 });
  });

  it("on SIGHUP ends the shell and every process of its session, even one that ignores SIGHUP", async ({
    agent,
  }) => {
    const { process, waitFor } = shell(agent);
    const shellPid = await process.pid;
    await process.writeStdin("nohup sleep 200 >/dev/null 2>&1 & echo bg-$((1 + 2))\n");
    await waitFor(/bg-3\r\n/);
    await eventually(async () => (await sessionMembers(shellPid)).some((member) => member.comm === "sleep"));
    process.kill("SIGHUP");
    const result = await process.wait();
    expect(result.terminationReason).toBe("abort");
    await eventually(async () => (await sessionMembers(shellPid)).length === 0);
    expect(await zombieChildren(agent.child.pid!)).toEqual([]);
  });

  it("refuses resize for a command without a terminal", async ({ agent }) => {
    const process = agent.client.spawn({ argv: ["true"] });
    expect(() => process.resize({ cols: 80, rows: 24 })).toThrow(/pty/);
    await process.wait();
  });
});

describe.runIf(isRoot)("a root agent", () => {
  it("runs commands and file operations as the default user 1000:1000", async () => {
    const agent = startAgent([]);
    const dir = await mkdtemp(join(tmpdir(), "pai-agent-"));
    try {
      expect(await agent.client.hello).toMatchObject({ uid: 0, defaultUid: 1000, defaultGid: 1000 });
      const result = await agent.client.spawn({ argv: ["sh", "-c", "id -u; id -g; id -G"] }).wait();
      expect(text(result.stdout)).toBe("1000\n1000\n1000\n");
      const asRoot = await agent.client.spawn({ argv: ["id", "-u"], uid: 0, gid: 0 }).wait();
      expect(text(asRoot.stdout)).toBe("0\n");

      // Files: created as 1000, and root-only files stay unreadable.
      await writeFile(join(dir, "secret"), "root only", { mode: 0o600 });
      await expect(agent.client.readFile(join(dir, "secret"), { root: dir })).rejects.toMatchObject({
        details: { errnoName: "EACCES" },
      });
      await expect(agent.client.writeFile(join(dir, "sub/file"), "x", { root: dir })).rejects.toMatchObject({
        code: "SANDBOX_FILE_FAILED",
      }); // the temp dir is root's 0700
      const shared = await mkdtemp(join(tmpdir(), "pai-agent-shared-"));
      try {
        await import("node:fs/promises").then((fs) => fs.chmod(shared, 0o777));
        await agent.client.writeFile(join(shared, "sub/file"), "x", { root: shared });
        const info = await stat(join(shared, "sub/file"));
        expect([info.uid, info.gid]).toEqual([1000, 1000]);
        expect((await stat(join(shared, "sub"))).uid).toBe(1000);
      } finally {
        await rm(shared, { recursive: true, force: true });
      }
    } finally {
      await stopAgent(agent);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("started as another user, acts only as that user and keeps its stdout out of its commands' reach", async () => {
    const agent = startAgent([], { uid: 65534, gid: 65534 });
    try {
      const { pid, uid, defaultUid, defaultGid } = await agent.client.hello;
      expect([uid, defaultUid, defaultGid]).toEqual([65534, 65534, 65534]);
      expect(text((await agent.client.spawn({ argv: ["id", "-u"] }).wait()).stdout)).toBe("65534\n");
      await expect(agent.client.spawn({ argv: ["id"], uid: 0 }).pid).rejects.toMatchObject({
        code: "SANDBOX_SPAWN_FAILED",
        details: { errnoName: "EPERM" },
      });
      await expect(
        agent.client.readFile("/etc/hostname", { root: "/etc", uid: 0, gid: 0 }),
      ).rejects.toMatchObject({
        code: "SANDBOX_FILE_FAILED",
        details: { errnoName: "EPERM" },
      });
      // Same uid, but the agent is not dumpable: its descriptors cannot be opened through /proc.
      const forged = await agent.client
        .spawn({ argv: ["sh", "-c", `echo forged > /proc/${pid}/fd/1`] })
        .wait();
      expect(forged.exitCode).not.toBe(0);
      expect(text(forged.stderr)).toMatch(/Permission denied/);
      expect(text((await agent.client.spawn({ argv: ["echo", "ok"] }).wait()).stdout)).toBe("ok\n");
    } finally {
      await stopAgent(agent);
    }
  });

  it("cannot be reached through /proc by the commands it runs", async () => {
    const agent = startAgent([]);
    try {
      const { pid } = await agent.client.hello;
      const result = await agent.client
        .spawn({ argv: ["sh", "-c", `echo forged > /proc/${pid}/fd/1; ls /proc/${pid}/fd`] })
        .wait();
      expect(result.exitCode).not.toBe(0);
      expect(text(result.stderr)).toMatch(/Permission denied/);
      expect(text((await agent.client.spawn({ argv: ["echo", "ok"] }).wait()).stdout)).toBe("ok\n");
    } finally {
      await stopAgent(agent);
    }
  });
});

describe("createAgentClient against a misbehaving agent", () => {
  function fakeAgent() {
    const toHost = new PassThrough();
    const toAgent = new PassThrough();
    const closeErrors: Array<ContainerAgentError | undefined> = [];
    const client = createAgentClient({
      stream: { readable: toHost, writable: toAgent },
      onClose: (error) => closeErrors.push(error),
    });
    const hello = new Uint8Array(22 + 4);
    new DataView(hello.buffer).setUint16(0, AGENT_PROTOCOL_VERSION);
    hello.set(new TextEncoder().encode("fake"), 22);
    return { client, toHost, toAgent, closeErrors, helloPayload: hello };
  }

  baseIt("fails in-flight requests on an oversize frame", async () => {
    const fake = fakeAgent();
    fake.toHost.write(encodeFrame(FrameType.Hello, 0, fake.helloPayload));
    await fake.client.hello;
    const ping = fake.client.ping();
    const header = new Uint8Array(9);
    new DataView(header.buffer).setUint32(0, MAX_FRAME_PAYLOAD_BYTES + 1);
    header[4] = FrameType.Stdout;
    fake.toHost.write(header);
    await expect(ping).rejects.toMatchObject({
      code: "SANDBOX_PROTOCOL",
      message: expect.stringMatching(/exceeds/),
    });
    expect(fake.closeErrors).toHaveLength(1);
    expect(fake.client.closed).toBe(true);
  });

  baseIt(
    "fails a request whose last frame is malformed, instead of leaving it waiting (found by fuzzing)",
    async () => {
      const fake = fakeAgent();
      fake.toHost.write(encodeFrame(FrameType.Hello, 0, fake.helloPayload));
      await fake.client.hello;
      const process = fake.client.spawn({ argv: ["x"] });
      const connected = fake.client.connect(8080);
      // An ERROR too short to decode for the command, a STREAM_CLOSED for a connection never opened.
      fake.toHost.write(encodeFrame(FrameType.Error, 1, new Uint8Array()));
      await expect(process.wait()).rejects.toMatchObject({ code: "SANDBOX_PROTOCOL" });
      await expect(connected).rejects.toMatchObject({ code: "SANDBOX_PROTOCOL" });

      const other = fakeAgent();
      other.toHost.write(encodeFrame(FrameType.Hello, 0, other.helloPayload));
      await other.client.hello;
      const stream = other.client.connect(8080);
      other.toHost.write(encodeFrame(FrameType.StreamClosed, 1));
      await expect(stream).rejects.toMatchObject({ code: "SANDBOX_PROTOCOL" });
    },
  );

  baseIt("fails on an unknown frame type", async () => {
    const fake = fakeAgent();
    fake.toHost.write(encodeFrame(FrameType.Hello, 0, fake.helloPayload));
    const process = fake.client.spawn({ argv: ["x"] });
    fake.toHost.write(encodeFrame(0x42, 1));
    await expect(process.wait()).rejects.toThrow(/unknown frame type 0x42/);
  });

  baseIt("fails when the first frame is not HELLO, or the protocol version differs", async () => {
    const first = fakeAgent();
    first.toHost.write(encodeFrame(FrameType.Pong, 1, new Uint8Array(8)));
    await expect(first.client.hello).rejects.toThrow(/expected HELLO first/);

    const other = fakeAgent();
    new DataView(other.helloPayload.buffer).setUint16(0, AGENT_PROTOCOL_VERSION + 1);
    other.toHost.write(encodeFrame(FrameType.Hello, 0, other.helloPayload));
    await expect(other.client.hello).rejects.toThrow(`speaks protocol ${AGENT_PROTOCOL_VERSION + 1}`);
  });

  baseIt("fails on a malformed payload and on frames that answer the wrong request", async () => {
    const fake = fakeAgent();
    fake.toHost.write(encodeFrame(FrameType.Hello, 0, fake.helloPayload));
    const read = fake.client.readFile("/x", { root: "/" });
    fake.toHost.write(encodeFrame(FrameType.Stdout, 1, new Uint8Array(3)));
    await expect(read).rejects.toThrow(/unexpected frame type 0x84 for READ_FILE/);

    const again = fakeAgent();
    again.toHost.write(encodeFrame(FrameType.Hello, 0, again.helloPayload));
    const process = again.client.spawn({ argv: ["x"] });
    again.toHost.write(encodeFrame(FrameType.Spawned, 1, new Uint8Array([0, 0, 0, 5])));
    again.toHost.write(encodeFrame(FrameType.Exit, 1, new Uint8Array([7, 0, 0, 0, 0])));
    await expect(process.wait()).rejects.toThrow(/malformed EXIT/);
  });

  baseIt("fails in-flight requests when the stream ends, even mid-frame", async () => {
    const fake = fakeAgent();
    fake.toHost.write(encodeFrame(FrameType.Hello, 0, fake.helloPayload));
    const process = fake.client.spawn({ argv: ["x"] });
    fake.toHost.end(encodeFrame(FrameType.Spawned, 1, new Uint8Array(4)).subarray(0, 5));
    await expect(process.pid).rejects.toThrow(/stream ended inside a frame/);
    expect(ContainerAgentError.hasCode(fake.closeErrors[0], "SANDBOX_PROTOCOL")).toBe(true);
  });

  baseIt("ignores late answers to requests it gave up", async () => {
    const fake = fakeAgent();
    fake.toHost.write(encodeFrame(FrameType.Hello, 0, fake.helloPayload));
    const controller = new AbortController();
    const read = fake.client.readFile("/x", { root: "/", signal: controller.signal });
    controller.abort();
    await expect(read).rejects.toThrow();
    fake.toHost.write(encodeFrame(FrameType.FileMissing, 1));
    const ping = fake.client.ping();
    const sent = await new Promise<Buffer>((resolve) => {
      const chunks: Buffer[] = [];
      fake.toAgent.on("data", (chunk: Buffer) => {
        chunks.push(chunk);
        const all = Buffer.concat(chunks);
        if (all.length >= 9 + 13 + 3 + 9 + 8) resolve(all);
      });
    });
    const pingFrame = sent.subarray(sent.length - 17);
    fake.toHost.write(encodeFrame(FrameType.Pong, pingFrame.readUInt32BE(5), pingFrame.subarray(9)));
    expect(await ping).toBeGreaterThanOrEqual(0);
    expect(fake.client.closed).toBe(false);
  });
});
