import { spawn } from "node:child_process";
import { mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createEgressSocket, type EgressSocket } from "./egress-socket.ts";

let directory: string;
let egress: EgressSocket;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "pai-egress-socket-"));
  egress = await createEgressSocket({ directory });
});

afterEach(async () => {
  await egress.close();
  await rm(directory, { recursive: true, force: true });
});

/** Connects, sends `bytes`, and resolves to what came back before the socket closed. */
function exchange(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(join(directory, egress.fileName));
    let answer = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => (answer += chunk));
    socket.on("close", () => resolve(answer));
    socket.on("error", (error: NodeJS.ErrnoException) =>
      error.code === "ECONNRESET" || error.code === "EPIPE" ? undefined : reject(error),
    );
    socket.write(bytes);
  });
}

describe("createEgressSocket", () => {
  it("listens on <pid>.sock, connectable by any user, and removes the sockets of processes that are gone", async () => {
    expect(egress.fileName).toBe(`${process.pid}.sock`);
    expect((await stat(join(directory, egress.fileName))).mode & 0o777).toBe(0o666);
    const exited = spawn("true");
    await new Promise((resolve) => exited.once("exit", resolve));
    await writeFile(join(directory, `${exited.pid}.sock`), "");
    await writeFile(join(directory, `${process.ppid}.sock`), "");
    await egress.close();
    egress = await createEgressSocket({ directory });
    expect((await readdir(directory)).sort()).toEqual([`${process.pid}.sock`, `${process.ppid}.sock`].sort());
  });

  it("hands a connection with an admitted token to its handler, with the bytes after the header", async () => {
    const admission = egress.admit((socket: Socket) => {
      socket.once("data", (chunk) => socket.end(`got ${chunk.toString("latin1")}`));
    });
    expect(admission.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(await exchange(`PAI-EGRESS/1 ${admission.token}\nhello`)).toBe("got hello");
    expect(egress.refused()).toBe(0);
  });

  it("closes a connection with a wrong, revoked or missing token at once, without calling any handler", async () => {
    const handled: string[] = [];
    const admission = egress.admit(() => handled.push("admitted"));
    const revoked = egress.admit(() => handled.push("revoked"));
    revoked.revoke();
    expect(await exchange("PAI-EGRESS/1 not-the-token\nGET / HTTP/1.1\r\n\r\n")).toBe("");
    expect(await exchange(`PAI-EGRESS/1 ${revoked.token}\nGET / HTTP/1.1\r\n\r\n`)).toBe("");
    expect(await exchange("GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")).toBe("");
    expect(await exchange(`PAI-EGRESS/1 ${admission.token.slice(1)}\n`)).toBe("");
    expect(await exchange(`PAI-EGRESS/1 ${"x".repeat(200)}`)).toBe(""); // no newline, over the header limit
    expect(handled).toEqual([]);
    expect(egress.refused()).toBe(5);
  });

  it("closes the oldest silent connection past 64, so silent ones cannot crowd out an agent's", async () => {
    const silent = await Promise.all(
      Array.from(
        { length: 64 },
        () =>
          new Promise<Socket>((resolve) => {
            const socket = connect(join(directory, egress.fileName), () => resolve(socket));
            socket.on("error", () => {});
          }),
      ),
    );
    await vi.waitUntil(() => egress.pending() === 64, { timeout: 10_000 });
    const firstClosed = new Promise<void>((resolve) => silent[0]!.once("close", () => resolve()));
    const admission = egress.admit((socket: Socket) => socket.end("admitted"));
    try {
      expect(await exchange(`PAI-EGRESS/1 ${admission.token}\n`)).toBe("admitted");
      await firstClosed;
      expect(egress.pending()).toBe(63);
    } finally {
      for (const socket of silent) socket.destroy();
    }
  });
});
