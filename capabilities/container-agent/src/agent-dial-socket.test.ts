import { mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type AgentDialSocket, createAgentDialSocket } from "./agent-dial-socket.ts";

let directory: string;
let dial: AgentDialSocket;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), "pai-dial-"));
  dial = await createAgentDialSocket({ directory });
});

afterEach(async () => {
  await dial.close();
  await rm(directory, { recursive: true, force: true });
});

/** Connects as an agent would and sends `bytes`; resolves to the client socket and a promise of its close. */
async function dialIn(bytes: string): Promise<{ client: Socket; closed: Promise<string> }> {
  const client = connect(join(directory, dial.fileName));
  await new Promise<void>((resolve, reject) => client.once("connect", resolve).once("error", reject));
  let received = "";
  client.on("data", (chunk: Buffer) => {
    received += chunk.toString();
  });
  const closed = new Promise<string>((resolve) => client.once("close", () => resolve(received)));
  client.write(bytes);
  return { client, closed };
}

function read(socket: Socket, length: number): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const onData = (chunk: Buffer) => {
      text += chunk.toString();
      if (text.length >= length) {
        socket.off("data", onData);
        resolve(text);
      }
    };
    socket.on("data", onData);
    socket.resume();
  });
}

describe("agent dial socket", () => {
  it("hands over the connection that says a token, with the bytes after the header, and admits that token once", async () => {
    const token = dial.admit();
    const agent = await dialIn(`PAI-AGENT/1 ${token}\nhello`);
    const socket = await dial.connection(token, { timeoutMs: 5_000 });
    expect(await read(socket, 5)).toBe("hello");
    socket.write("frames");
    socket.end();
    expect(await agent.closed).toBe("frames");

    // The same token again (a program that read it from /proc/1/environ) is closed unseen.
    const replay = await dialIn(`PAI-AGENT/1 ${token}\n`);
    expect(await replay.closed).toBe("");
    expect(dial.refused()).toBe(1);
    await expect(dial.connection(token, { timeoutMs: 100 })).rejects.toMatchObject({
      code: "SANDBOX_PROTOCOL",
    });
  });

  it("waits for an agent that dials later", async () => {
    const token = dial.admit();
    const waiting = dial.connection(token, { timeoutMs: 5_000 });
    await dialIn(`PAI-AGENT/1 ${token}\nlater`);
    expect(await read(await waiting, 5)).toBe("later");
  });

  it("closes connections with a wrong token, a garbled header or an overlong one", async () => {
    dial.admit();
    for (const bytes of ["PAI-AGENT/1 guessed\n", "GET / HTTP/1.1\r\n\r\n", "x".repeat(4096)]) {
      const forged = await dialIn(bytes);
      expect(await forged.closed).toBe("");
    }
    expect(dial.refused()).toBe(3);
  });

  it("rejects with SANDBOX_PROTOCOL when no agent dials in time, and spends the token", async () => {
    const token = dial.admit();
    await expect(dial.connection(token, { timeoutMs: 50 })).rejects.toMatchObject({
      code: "SANDBOX_PROTOCOL",
      message: expect.stringContaining("did not dial in within 50 ms"),
    });
    const late = await dialIn(`PAI-AGENT/1 ${token}\n`);
    expect(await late.closed).toBe("");
  });

  it("rejects with the signal's reason on abort", async () => {
    const token = dial.admit();
    const controller = new AbortController();
    const waiting = dial.connection(token, { timeoutMs: 5_000, signal: controller.signal });
    controller.abort(new Error("stopped"));
    await expect(waiting).rejects.toThrow("stopped");
  });

  it("removes its socket file on close and a dead process's file on start", async () => {
    await writeFile(join(directory, "999999999.agent.sock"), ""); // no such process
    await dial.close();
    expect(await readdir(directory)).toEqual(["999999999.agent.sock"]);
    dial = await createAgentDialSocket({ directory });
    expect(await readdir(directory)).toEqual([dial.fileName]);
  });
});
