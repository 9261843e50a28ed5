import { spawn } from "node:child_process";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { defineCapability } from "../capabilities/define-capability.ts";
import { type AgentRuntime, createAgentRuntime } from "../runtime/create-agent-runtime.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createPaiHandler } from "./create-pai-handler.ts";
import { toNodeListener } from "./node-listener.ts";
import type { TerminalSessionLike } from "./terminal-socket.ts";

/**
 * The terminal route of the HTTP handler, over a real WebSocket, against a capability whose terminal is a real
 * `bash` on this host (no pseudo-terminal: the sandbox's, with resize and Ctrl-C, is tested on the engine).
 */
interface Shell {
  openTerminal(options: { cols: number; rows: number; signal?: AbortSignal }): Promise<TerminalSessionLike>;
}
const shell = defineCapability<"shell", Shell>({
  name: "shell",
  defaultLifetime: "thread",
  members: { openTerminal: true },
});

/** The capability is declared by a tool, as a sandbox is by the tools that use it. */
const useShell = defineTool({
  id: "useShell",
  description: "uses the shell",
  inputSchema: z.object({}),
  capabilities: { shell },
  execute: async () => "unused",
});

let sizes: Array<{ cols: number; rows: number }>;
let closed: number;

function bashTerminal(size: { cols: number; rows: number }): TerminalSessionLike {
  sizes.push({ cols: size.cols, rows: size.rows });
  const child = spawn("bash", ["--norc", "-i"], {
    stdio: "pipe",
    env: { PATH: process.env.PATH, PS1: "$ " },
  });
  const exit = new Promise<{ exitCode: number | null; signal: string | null }>((resolve) =>
    child.once("exit", (exitCode, signal) => resolve({ exitCode, signal })),
  );
  return {
    pid: child.pid ?? 0,
    write: async (data) => void child.stdin.write(data),
    resize: async (next) => void sizes.push(next),
    signal: async (name) => void child.kill(name as NodeJS.Signals),
    output: Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>,
    exit,
    close: async () => {
      closed += 1;
      child.kill("SIGKILL");
      await exit;
    },
  };
}

function shellBinding(): CapabilityBinding<Shell> {
  return {
    kind: "pai.capability-binding",
    capability: "shell",
    async provision() {
      return {
        facade: { openTerminal: async (options) => bashTerminal(options) },
        resourceId: "shell-1",
        release: async () => {},
      };
    },
    async close() {},
  };
}

let runtime: AgentRuntime;
let server: Server;
let port: number;

beforeEach(async () => {
  sizes = [];
  closed = 0;
  runtime = createAgentRuntime({
    pai: createPai({
      agents: { a: defineAgent({ identity: z.object({ userId: z.string() }), tools: { useShell } }) },
    }),
    store: createMemoryThreadStore(),
    model: createScriptedModel({ steps: [], fallback: { text: "hello" } }),
    capabilities: { shell: shellBinding() },
  });
  const handler = createPaiHandler({
    runtime,
    terminalCapability: "shell",
    authenticate: (request) => {
      const user = request.headers.get("x-user") ?? new URL(request.url).searchParams.get("user");
      return user ? { userId: user } : null;
    },
  });
  server = createServer(toNodeListener(handler));
  server.on("upgrade", handler.upgrade);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
  const run = await runtime.run({
    agentId: "a",
    identity: { userId: "alice" },
    message: "hi",
    threadId: "t1",
  });
  await run.done;
});

afterEach(async () => {
  await runtime.close();
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function open(path: string, headers: Record<string, string> = { "x-user": "alice" }): WebSocket {
  return new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers });
}

function refusal(socket: WebSocket): Promise<number> {
  return new Promise((resolve) =>
    socket.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0)),
  );
}

describe("the terminal route", () => {
  it("runs a terminal for the thread's identity: ready, input, output, resize, exit", async () => {
    const socket = open("/api/threads/t1/terminal?cols=100&rows=30");
    const texts: Array<{ type: string; [key: string]: unknown }> = [];
    let output = "";
    socket.on("message", (data, isBinary) => {
      if (isBinary) output += String(data);
      else texts.push(JSON.parse(String(data)));
    });
    await new Promise<void>((resolve) => socket.once("open", () => resolve()));
    await expect.poll(() => JSON.stringify(texts[0])).toContain("ready");
    expect(sizes[0]).toEqual({ cols: 100, rows: 30 });
    socket.send(Buffer.from("echo hi-$((40+2))\n"));
    await expect.poll(() => output).toContain("hi-42");
    socket.send(JSON.stringify({ type: "resize", cols: 120, rows: 40 }));
    await expect.poll(() => sizes.at(-1)).toEqual({ cols: 120, rows: 40 });
    socket.send(JSON.stringify({ type: "nonsense" }));
    await expect.poll(() => texts.some((text) => text.code === "BAD_REQUEST")).toBe(true);
    const closedWith = new Promise<number>((resolve) => socket.once("close", (code) => resolve(code)));
    socket.send(JSON.stringify({ type: "input", data: "exit 3\n" }));
    expect(await closedWith).toBe(1000);

    expect(texts.at(-1)).toEqual({ type: "exit", exitCode: 3, signal: null });
  });

  it("refuses another identity, no identity, another origin, an unknown thread and a bad size", async () => {
    expect(await refusal(open("/api/threads/t1/terminal", { "x-user": "mallory" }))).toBe(404);
    expect(await refusal(open("/api/threads/t1/terminal", {}))).toBe(401);
    expect(
      await refusal(open("/api/threads/t1/terminal", { "x-user": "alice", origin: "http://evil.example" })),
    ).toBe(403);
    expect(await refusal(open("/api/threads/nope/terminal"))).toBe(404);
    expect(await refusal(open("/api/threads/t1/terminal?cols=0"))).toBe(400);
    expect(await refusal(open("/api/elsewhere"))).toBe(404);
    expect(sizes).toEqual([]);
  });

  it("ends the session when the page closes the socket", async () => {
    const socket = open("/api/threads/t1/terminal");
    await new Promise<void>((resolve) =>
      socket.on("message", (data, isBinary) => {
        if (!isBinary && JSON.parse(String(data)).type === "ready") resolve();
      }),
    );
    socket.close();
    await expect.poll(() => closed).toBe(1);
  });
});
