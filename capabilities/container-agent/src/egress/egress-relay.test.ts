// The native egress relay as a process of this test: a real unix socket, real loopback servers, and the real
// proxy deciding. Connections come in as an agent sends them (`PAI-EGRESS/1 <token>\n` and a proxy request).

import { readdirSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm, rmdir, stat, unlink, writeFile } from "node:fs/promises";
import { type AddressInfo, connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execa } from "execa";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { ContainerAgentError } from "../container-agent-error.ts";
import { parseEgressPolicy } from "./egress-policy.ts";
import { createEgressProxy, type EgressConnectionEvent } from "./egress-proxy.ts";
import { createEgressRelay, type EgressRelay } from "./egress-relay.ts";
import { resolveRelayUser } from "./relay-user.ts";

const MIB = 1024 * 1024;
let directory: string;
let relay: EgressRelay;
/** What the relay told its `onError`: each unexpected exit. */
let reports: ContainerAgentError[];
const servers: Server[] = [];
const serverSockets = new Set<Socket>();

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "pai-egress-relay-"));
  reports = [];
  relay = await createEgressRelay({ directory, onError: (error) => reports.push(error) });
});

afterEach(async () => {
  await relay.close();
  for (const socket of serverSockets) socket.destroy();
  serverSockets.clear();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
  await rm(directory, { recursive: true, force: true });
});

/** A loopback TCP server; resolves to its `127.0.0.1:<port>`. */
async function serve(onConnection: (socket: Socket) => void): Promise<{ target: string; server: Server }> {
  const server = createServer((socket) => {
    serverSockets.add(socket);
    socket.on("error", () => {});
    onConnection(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { target: `127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

/** A proxy allowing `allow`, its events, and an admission on the relay handing it connections. */
function proxyOn(allow: string[], options: { maxBytes?: number } = {}) {
  const events: EgressConnectionEvent[] = [];
  const proxy = createEgressProxy({
    policy: parseEgressPolicy(allow),
    maxBytes: options.maxBytes,
    onConnection: (event) => events.push(event),
  });
  const admission = relay.admit((connection) => proxy.handle(connection, { channel: "socket" }));
  return { proxy, events, admission };
}

/** Connects to the relay's socket and writes `bytes`; resolves to the socket (data collected in `received`). */
function open(bytes: string | Buffer): { socket: Socket; received: () => Buffer; closed: Promise<void> } {
  const socket = connect(join(directory, relay.fileName));
  const chunks: Buffer[] = [];
  socket.on("data", (chunk: Buffer) => chunks.push(chunk));
  socket.on("error", () => {});
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  socket.write(bytes);
  return { socket, received: () => Buffer.concat(chunks), closed };
}

/** Sends `bytes`, then resolves to everything that came back before the relay closed the connection. */
async function exchange(bytes: string | Buffer): Promise<string> {
  const connection = open(bytes);
  await connection.closed;
  return connection.received().toString("latin1");
}

/** The relay process's id, checked to be a live `pai-egress-relay` child of this process. */
async function relayProcess(): Promise<number> {
  const pid = relay.pid();
  expect(pid).toBeDefined();
  expect(await readFile(`/proc/${pid}/comm`, "utf8")).toBe("pai-egress-rela\n");
  expect(Number((await readFile(`/proc/${pid}/stat`, "utf8")).split(") ")[1]!.split(" ")[1])).toBe(
    process.pid,
  );
  return pid!;
}

/** This process's `pai-egress-relay` children. */
async function relayChildren(): Promise<number[]> {
  const children = (await readFile(`/proc/self/task/${process.pid}/children`, "utf8")).trim().split(" ");
  const pids: number[] = [];
  for (const pid of children) {
    const comm = await readFile(`/proc/${pid}/comm`, "utf8").catch(() => "");
    if (comm === "pai-egress-rela\n") pids.push(Number(pid));
  }
  return pids;
}

/** Kills the relay process with SIGKILL (it cannot clean up); resolves to its pid once it is gone. */
async function killRelay(): Promise<number> {
  const pid = await relayProcess();
  process.kill(pid, "SIGKILL");
  await vi.waitUntil(() => relay.pid() !== pid, { timeout: 10_000 });
  return pid;
}

/** A CONNECT through the relay with `token` to `target`, which answers and hangs up: the relay's answer. */
const connectWith = (token: string, target: string) =>
  exchange(`PAI-EGRESS/1 ${token}\nCONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);

/**
 * Resolves once a connection with `token` to `target` gets through again. Until then the socket must be
 * unreachable (no relay listens): a relay that accepts the connection knows every token admitted before it.
 */
async function connectsAgain(token: string, target: string): Promise<void> {
  for (;;) {
    const connection = open(`PAI-EGRESS/1 ${token}\nCONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
    let accepted = false;
    connection.socket.once("connect", () => (accepted = true));
    await connection.closed;
    if (connection.received().toString("latin1").startsWith("HTTP/1.1 200 ")) return;
    expect(accepted, "a relay that listens admits the tokens admitted before it").toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("createEgressRelay", () => {
  it("listens on <pid>.sock, connectable by any user, and removes the sockets of processes that are gone", async () => {
    expect(relay.fileName).toBe(`${process.pid}.sock`);
    expect((await stat(join(directory, relay.fileName))).mode & 0o777).toBe(0o666);
    const exited = execa("true");
    await exited;
    await writeFile(join(directory, `${exited.pid}.sock`), "");
    await writeFile(join(directory, `${process.ppid}.sock`), "");
    await relay.close();
    await expect(stat(join(directory, relay.fileName))).rejects.toMatchObject({ code: "ENOENT" });
    relay = await createEgressRelay({ directory });
    expect((await readdir(directory)).sort()).toEqual([`${process.pid}.sock`, `${process.ppid}.sock`].sort());
  });

  it("tunnels a CONNECT with an admitted token to the upstream, both ways, and reports it with its bytes", async () => {
    const { target } = await serve((socket) => socket.pipe(socket));
    const { events, admission } = proxyOn([target]);
    const payload = Buffer.alloc(3 * MIB, 7);
    const connection = open(
      `PAI-EGRESS/1 ${admission.token}\nCONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`,
    );
    const established = "HTTP/1.1 200 Connection established\r\n\r\n";
    await vi.waitUntil(() => connection.received().length >= established.length, { timeout: 10_000 });
    connection.socket.end(payload);
    await connection.closed;
    const received = connection.received();
    expect(received.subarray(0, established.length).toString("latin1")).toBe(established);
    expect(received.subarray(established.length).equals(payload)).toBe(true);
    await vi.waitUntil(() => events.length === 1, { timeout: 10_000 });
    expect(events[0]).toMatchObject({
      target,
      decision: "allowed",
      method: "CONNECT",
      status: 200,
      channel: "socket",
      address: "127.0.0.1",
      bytesUp: payload.length,
      bytesDown: payload.length + established.length,
    });
    expect(relay.refused()).toBe(0);
  });

  it("forwards a plain-HTTP request in origin form and reports the upstream's status", async () => {
    const heads: string[] = [];
    const { target } = await serve((socket) => {
      let head = "";
      socket.on("data", (chunk: Buffer) => {
        head += chunk.toString("latin1");
        if (!head.includes("\r\n\r\n")) return;
        heads.push(head);
        socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope");
      });
    });
    const { events, admission } = proxyOn([target]);
    const answer = await exchange(
      `PAI-EGRESS/1 ${admission.token}\nGET http://${target}/missing?q=1 HTTP/1.1\r\nHost: ${target}\r\nProxy-Connection: keep-alive\r\n\r\n`,
    );
    expect(answer).toBe("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope");
    expect(heads).toEqual([`GET /missing?q=1 HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`]);
    await vi.waitUntil(() => events.length === 1, { timeout: 10_000 });
    expect(events[0]).toMatchObject({
      target,
      decision: "allowed",
      method: "GET",
      status: 404,
      channel: "socket",
    });
  });

  it("writes the proxy's refusal to the program: not allowed, not a proxy request, a garbage or oversized head", async () => {
    const { target } = await serve((socket) => socket.end());
    const { events, admission, proxy } = proxyOn(["127.0.0.1:1"]);
    const header = `PAI-EGRESS/1 ${admission.token}\n`;
    const refused = await exchange(`${header}CONNECT ${target} HTTP/1.1\r\n\r\n`);
    expect(refused).toMatch(/^HTTP\/1\.1 403 pai egress: 127\.0\.0\.1:\d+ refused: /);
    expect(refused).toContain("Proxy-Status: pai; error=destination_ip_prohibited");
    expect(proxy.refusalFor(target)).toMatch(/refused/);

    const garbage = Buffer.concat([Buffer.from(header), Buffer.from([0, 255, 13, 10, 1, 2, 13, 10, 13, 10])]);
    expect(await exchange(garbage)).toMatch(/^HTTP\/1\.1 400 pai egress: not an HTTP proxy request\r\n/);
    const huge = `${header}GET http://${target}/ HTTP/1.1\r\nX-Filler: ${"x".repeat(40 * 1024)}`;
    expect(await exchange(huge)).toMatch(/^HTTP\/1\.1 400 pai egress: request head too large\r\n/);
    expect(await exchange(`${header}GET https://${target}/ HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 400 pai egress: https: URLs go through CONNECT/,
    );
    await vi.waitUntil(() => events.length === 4, { timeout: 10_000 });
    expect(events.map((event) => [event.decision, event.status, event.channel])).toEqual([
      ["refused", 403, "socket"],
      ["refused", 400, "socket"],
      ["refused", 400, "socket"],
      ["refused", 400, "socket"],
    ]);
  });

  it("answers 502 when no upstream answers", async () => {
    const { target, server } = await serve((socket) => socket.end());
    await new Promise((resolve) => server.close(resolve));
    servers.splice(servers.indexOf(server), 1);
    const { events, admission } = proxyOn([target]);
    const answer = await exchange(`PAI-EGRESS/1 ${admission.token}\nCONNECT ${target} HTTP/1.1\r\n\r\n`);
    expect(answer).toMatch(/^HTTP\/1\.1 502 pai egress: 127\.0\.0\.1:\d+ unreachable: ECONNREFUSED\r\n/);
    await vi.waitUntil(() => events.length === 1, { timeout: 10_000 });
    expect(events[0]).toMatchObject({ decision: "refused", status: 502, address: "127.0.0.1" });
  });

  it("closes a connection with a wrong, revoked or missing token at once, without calling any handler", async () => {
    const handled: string[] = [];
    const admission = relay.admit(() => handled.push("admitted"));
    const revoked = relay.admit(() => handled.push("revoked"));
    revoked.revoke();
    expect(await exchange("PAI-EGRESS/1 not-the-token\nGET / HTTP/1.1\r\n\r\n")).toBe("");
    expect(await exchange(`PAI-EGRESS/1 ${revoked.token}\nGET / HTTP/1.1\r\n\r\n`)).toBe("");
    expect(await exchange("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")).toBe("");
    expect(await exchange(`PAI-EGRESS/1 ${admission.token.slice(1)}\n`)).toBe("");
    expect(await exchange(`PAI-EGRESS/1 ${"x".repeat(200)}`)).toBe(""); // no newline, over the header limit
    await vi.waitUntil(() => relay.refused() === 5, { timeout: 10_000 });
    expect(handled).toEqual([]);
  });

  it("closes the oldest silent connection past 64, so silent ones cannot crowd out an agent's", async () => {
    const silent = await Promise.all(
      Array.from(
        { length: 64 },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(join(directory, relay.fileName), () => resolve(socket));
            socket.on("error", () => {});
          }),
      ),
    );
    await vi.waitUntil(() => relay.pending() === 64, { timeout: 10_000 });
    const firstClosed = new Promise<void>((resolve) => silent[0]!.once("close", () => resolve()));
    const { admission } = proxyOn([]);
    try {
      expect(await exchange(`PAI-EGRESS/1 ${admission.token}\nPOKE\r\n\r\n`)).toMatch(/^HTTP\/1\.1 400 /);
      await firstClosed;
      await vi.waitUntil(() => relay.pending() === 63, { timeout: 10_000 });
    } finally {
      for (const socket of silent) socket.destroy();
    }
  });

  it("stops a connection at the proxy's byte budget, and refuses new ones once it is spent", async () => {
    const { target } = await serve((socket) => {
      socket.once("data", () => socket.end(Buffer.alloc(16 * MIB, 1)));
    });
    const { events, admission, proxy } = proxyOn([target], { maxBytes: 2 * MIB });
    const header = `PAI-EGRESS/1 ${admission.token}\n`;
    const connection = open(`${header}CONNECT ${target} HTTP/1.1\r\n\r\n`);
    await vi.waitUntil(() => connection.received().length > 0, { timeout: 10_000 });
    connection.socket.write("go");
    await connection.closed;
    expect(connection.received().length).toBeLessThanOrEqual(2 * MIB);
    expect(connection.received().length).toBeGreaterThan(MIB);
    await vi.waitUntil(() => events.length === 1, { timeout: 10_000 });
    expect(events[0]!.bytesUp + events[0]!.bytesDown).toBe(2 * MIB);
    expect(proxy.stats().bytes).toBe(2 * MIB);
    expect(await exchange(`${header}CONNECT ${target} HTTP/1.1\r\n\r\n`)).toMatch(
      /^HTTP\/1\.1 429 pai egress: .* bytes of traffic are spent/,
    );
  });

  it("closes relayed connections when the proxy closes (the lease ended)", async () => {
    let upstreamClosed = false;
    let upstreamGot = 0;
    const { target } = await serve((socket) => {
      socket.on("data", (chunk: Buffer) => (upstreamGot += chunk.length));
      socket.on("close", () => (upstreamClosed = true));
    });
    const { events, admission, proxy } = proxyOn([target]);
    const connection = open(`PAI-EGRESS/1 ${admission.token}\nCONNECT ${target} HTTP/1.1\r\n\r\n`);
    await vi.waitUntil(() => proxy.stats().active === 1 && connection.received().length > 0, {
      timeout: 10_000,
    });
    connection.socket.write("hello");
    await vi.waitUntil(() => upstreamGot === 5, { timeout: 10_000 });
    expect(events).toEqual([]);
    proxy.close();
    await connection.closed;
    await vi.waitUntil(() => upstreamClosed && events.length === 1, { timeout: 10_000 });
    expect(events[0]).toMatchObject({ decision: "allowed", bytesUp: 5 });
    expect(proxy.stats().active).toBe(0);
  });

  it("closes its connections for the proxy when it dies", async () => {
    const { target } = await serve(() => {});
    const { events, admission, proxy } = proxyOn([target]);
    const connection = open(`PAI-EGRESS/1 ${admission.token}\nCONNECT ${target} HTTP/1.1\r\n\r\n`);
    await vi.waitUntil(() => connection.received().length > 0, { timeout: 10_000 });
    expect(await relayChildren()).toEqual([await relayProcess()]);
    await killRelay();
    await connection.closed;
    await vi.waitUntil(() => events.length === 1 && proxy.stats().active === 0, { timeout: 10_000 });
    expect(events[0]).toMatchObject({ decision: "allowed", channel: "socket" });
  });

  it("starts a new relay on the same socket when it is killed, admitting the tokens admitted before", async () => {
    const { target } = await serve((socket) => socket.end());
    const { events, admission } = proxyOn([target]);
    const revoked = relay.admit(() => {});
    revoked.revoke();
    expect(await connectWith(admission.token, target)).toMatch(/^HTTP\/1\.1 200 /);
    expect(await connectWith("not-the-token", target)).toBe("");
    await vi.waitUntil(() => relay.refused() === 1, { timeout: 10_000 });

    const killed = await killRelay();
    await connectsAgain(admission.token, target);
    const restarted = await relayProcess();
    expect(restarted).not.toBe(killed);
    expect(relay.fileName).toBe(`${process.pid}.sock`);
    expect(await relayChildren()).toEqual([restarted]);
    expect(reports).toHaveLength(1);
    expect(reports[0]).toMatchObject({
      code: "SANDBOX_PROTOCOL",
      details: { pid: killed, restartInMs: 100, path: join(directory, relay.fileName) },
    });
    expect(reports[0]!.message).toMatch(
      /^the egress relay \(pid \d+\) killed by SIGKILL; starting it again in 100 ms/,
    );

    // Revoked stays revoked, refusals keep counting from where they were, and new tokens are admitted.
    expect(await connectWith(revoked.token, target)).toBe("");
    await vi.waitUntil(() => relay.refused() === 2, { timeout: 10_000 });
    const later = proxyOn([target]);
    expect(await connectWith(later.admission.token, target)).toMatch(/^HTTP\/1\.1 200 /);
    await vi.waitUntil(() => later.events.length === 1, { timeout: 10_000 });
    expect(events.map((event) => [event.decision, event.channel])).toContainEqual(["allowed", "socket"]);
    expect(events.every((event) => event.decision === "allowed" && event.channel === "socket")).toBe(true);
  });

  it("waits twice as long after each exit, from the start again after a relay that stayed up, whatever onError does", async () => {
    const { target } = await serve((socket) => socket.end());
    const { admission } = proxyOn([target]);
    // While a directory stands at the socket's path, every new relay fails to bind and exits.
    const path = join(directory, relay.fileName);
    await unlink(path);
    await mkdir(path);
    await killRelay();
    await vi.waitUntil(() => reports.length >= 3, { timeout: 20_000 });
    await rmdir(path);
    await connectsAgain(admission.token, target);
    const waits = reports.map((report) => report.details?.restartInMs);
    expect(waits).toEqual(waits.map((_, index) => Math.min(100 * 2 ** index, 10_000)));
    expect(reports[0]!.message).toMatch(/killed by SIGKILL/);
    for (const report of reports.slice(1)) {
      expect(report.message).toMatch(
        /exited with code 70: pai-egress-relay: fatal: .*: Address (already )?in use/,
      );
    }

    await relay.close();
    reports = [];
    relay = await createEgressRelay({
      directory,
      restart: { resetAfterMs: 0 },
      onError: (error) => {
        reports.push(error);
        throw new Error("a broken onError");
      },
    });
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.message);
    process.on("warning", onWarning);
    try {
      const again = proxyOn([target]);
      for (let round = 0; round < 2; round++) {
        await killRelay();
        await connectsAgain(again.admission.token, target);
      }
    } finally {
      process.off("warning", onWarning);
    }
    expect(reports.map((report) => report.details?.restartInMs)).toEqual([100, 100]);
    expect(
      warnings.filter((warning) => warning.includes("onError threw: Error: a broken onError")),
    ).toHaveLength(2);
  });

  it("close() during the wait leaves no relay and no socket file, and no restart follows", async () => {
    await relay.close();
    let closing: Promise<void> | undefined;
    let leftBehind: string[] = [];
    relay = await createEgressRelay({
      directory,
      restart: { initialDelayMs: 200 },
      onError: (error) => {
        reports.push(error);
        leftBehind = readdirSync(directory); // the killed relay's socket file
        closing = relay.close(); // as the wait begins
      },
    });
    const killed = await killRelay();
    await vi.waitUntil(() => closing !== undefined, { timeout: 10_000 });
    await closing;
    expect(leftBehind).toEqual([relay.fileName]);
    await new Promise((resolve) => setTimeout(resolve, 600)); // past the wait: nothing may start
    expect(relay.pid()).toBeUndefined();
    expect(await relayChildren()).toEqual([]);
    expect(await readdir(directory)).toEqual([]);
    expect(reports).toHaveLength(1);
    expect(reports[0]!.details).toMatchObject({ pid: killed });
  });

  it("does not keep its process alive while it waits to start a relay again", async () => {
    const script = `
      const { createEgressRelay } = await import(${JSON.stringify(new URL("./egress-relay.ts", import.meta.url).pathname)});
      const untilReported = setInterval(() => {}, 1000);
      const relay = await createEgressRelay({
        directory: ${JSON.stringify(directory)},
        restart: { initialDelayMs: 60_000 },
        onError: (error) => {
          console.log(JSON.stringify(error.details));
          clearInterval(untilReported); // only the wait is left
        },
      });
      process.kill(relay.pid(), "SIGKILL");
    `;
    const child = await execa(process.execPath, ["--input-type=module", "-e", script], { timeout: 30_000 });
    expect(child.exitCode).toBe(0);
    expect(JSON.parse(child.stdout)).toMatchObject({ restartInMs: 60_000 });
  });

  it("exits with its parent; a killed parent's socket file is removed by the next process that claims the directory", async () => {
    const script = `
      const { createEgressRelay } = await import(${JSON.stringify(new URL("./egress-relay.ts", import.meta.url).pathname)});
      const { readFileSync } = await import("node:fs");
      const relay = await createEgressRelay({ directory: ${JSON.stringify(directory)} });
      const children = readFileSync("/proc/self/task/" + process.pid + "/children", "utf8").trim();
      console.log(JSON.stringify({ fileName: relay.fileName, children }));
      setInterval(() => {}, 1000);
    `;
    const parent = execa(process.execPath, ["--input-type=module", "-e", script], { reject: false });
    const line = await new Promise<string>((resolve) =>
      parent.stdout.once("data", (chunk) => resolve(String(chunk))),
    );
    const { fileName, children } = JSON.parse(line) as { fileName: string; children: string };
    const relayPid = Number(children.split(" ")[0]);
    expect(await readFile(`/proc/${relayPid}/comm`, "utf8")).toBe("pai-egress-rela\n");
    expect((await readdir(directory)).includes(fileName)).toBe(true);
    parent.kill("SIGKILL");
    await parent;
    await vi.waitUntil(
      async () => (await readFile(`/proc/${relayPid}/comm`, "utf8").catch(() => "gone")) === "gone",
      { timeout: 10_000 },
    );
    await relay.close();
    relay = await createEgressRelay({ directory });
    expect(await readdir(directory)).toEqual([relay.fileName]);
  });

  it("runs as another user once it listens (nobody for root), with no_new_privs and a seccomp filter", async () => {
    const status = await readFile(`/proc/${relay.pid()}/status`, "utf8");
    const field = (name: string) => new RegExp(`^${name}:[ \\t]*(.*)$`, "m").exec(status)?.[1]?.split(/\s+/);
    const expected = process.getuid?.() === 0 ? resolveRelayUser(undefined, {}) : "self";
    const uid = expected === "self" ? process.getuid?.() : expected.uid;
    const gid = expected === "self" ? process.getgid?.() : expected.gid;
    expect(field("Uid")).toEqual([uid, uid, uid, uid].map(String));
    expect(field("Gid")).toEqual([gid, gid, gid, gid].map(String));
    if (expected !== "self") expect(field("Groups")).toEqual([""]);
    expect(field("NoNewPrivs")).toEqual(["1"]);
    expect(field("Seccomp")).toEqual(["2"]); // a filter
    // It still does its work: a connection with a wrong token is refused, the relay lives on.
    const socket = connect(join(directory, relay.fileName));
    socket.end("PAI-EGRESS/1 forged\n");
    await vi.waitUntil(() => relay!.refused() >= 1, { timeout: 5000 });
    expect(relay.pid()).toBeGreaterThan(0);
  });

  it("runs as the user PAI_EGRESS_RELAY_USER names, or keeps its ids with self", async () => {
    expect(resolveRelayUser(undefined, { PAI_EGRESS_RELAY_USER: "self" })).toBe("self");
    expect(resolveRelayUser(undefined, { PAI_EGRESS_RELAY_USER: "123:456" })).toEqual({ uid: 123, gid: 456 });
    expect(resolveRelayUser(undefined, { PAI_EGRESS_RELAY_USER: "root" })).toEqual({ uid: 0, gid: 0 });
    expect(() => resolveRelayUser(undefined, { PAI_EGRESS_RELAY_USER: "no such user" })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT" }),
    );
    await relay.close();
    relay = await createEgressRelay({ directory, user: "self" });
    const status = await readFile(`/proc/${relay.pid()}/status`, "utf8");
    expect(/^Uid:\s*(\d+)/m.exec(status)?.[1]).toBe(String(process.getuid?.()));
    expect(/^Seccomp:\s*(\d+)/m.exec(status)?.[1]).toBe("2");
  });
});
