// Previews and terminals of real sandboxes, end to end: a tool starts a server in the conversation's sandbox
// (network `none`) and exposes its port; the browser's requests go to createPaiHandler on 127.0.0.1 with the
// preview's `Host`, and reach the server over the container agent's connection. Every refusal is checked against
// the server's own request log: nothing reaches the container.

import { Agent, createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type AgentRuntime,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  defineTool,
  type PreviewRequestEvent,
  toNodeListener,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { type DockerSandboxBinding, dockerSandbox, sandbox } from "@pai/sandbox";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { z } from "zod";
import {
  docker,
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";

/** A server for the sandbox: JSON echo, SSE, a chunked reply, 100 MiB, a WebSocket echo; each request logged. */
const SERVER_JS = String.raw`
const http = require("node:http");
const crypto = require("node:crypto");
const fs = require("node:fs");
const port = Number(process.argv[2]);
const log = (line) => fs.appendFileSync("/workspace/requests-" + port + ".log", line + "\n");
const server = http.createServer((req, res) => {
  log(req.method + " " + req.url + " " + req.headers.host);
  if (req.url === "/events") {
    res.writeHead(200, { "content-type": "text/event-stream" });
    let n = 0;
    const timer = setInterval(() => { res.write("data: " + ++n + "\n\n"); if (n === 3) { clearInterval(timer); res.end(); } }, 30);
    return;
  }
  if (req.url === "/chunked") { res.write("first,"); setTimeout(() => res.end("second"), 30); return; }
  if (req.url === "/big") {
    // MiB number i is all bytes i % 251: a byte out of place shows
    let sent = 0;
    res.writeHead(200, { "content-length": String(100 << 20) });
    const pump = () => { while (sent < 100) { if (!res.write(Buffer.alloc(1 << 20, sent++ % 251))) return res.once("drain", pump); } res.end(); };
    return pump();
  }
  let body = 0;
  req.on("data", (c) => { body += c.length; });
  req.on("end", () => res.end(JSON.stringify({ port, host: req.headers.host, cookie: req.headers.cookie || null, body })));
});
server.on("upgrade", (req, socket) => {
  log("UPGRADE " + req.url + " " + req.headers.host);
  const accept = crypto.createHash("sha1").update(req.headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").digest("base64");
  socket.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: " + accept + "\r\n\r\n");
  socket.on("data", (frame) => {
    const length = frame[1] & 0x7f;
    const mask = frame.subarray(2, 6);
    const text = Buffer.from(frame.subarray(6, 6 + length).map((byte, i) => byte ^ mask[i % 4])).toString();
    const reply = Buffer.from("echo:" + text);
    socket.write(Buffer.concat([Buffer.from([0x81, reply.length]), reply]));
  });
});
server.listen(port, "127.0.0.1");
`;

const serve = defineTool({
  id: "serve",
  description: "start the test server on a port, and expose it unless told not to",
  inputSchema: z.object({
    port: z.number(),
    expose: z.boolean(),
    access: z.enum(["token", "identity"]).optional(),
  }),
  capabilities: { sandbox },
  execute: async (ctx) => {
    const box = ctx.capabilities.sandbox;
    await box.writeFiles([{ path: "server.js", content: SERVER_JS }]);
    await box.spawn({ command: "node", args: ["server.js", String(ctx.input.port)] });
    await waitFor(
      async () =>
        (await box.runCommand({ command: `exec 3<>/dev/tcp/127.0.0.1/${ctx.input.port}` })).exitCode === 0,
      "the server to listen",
    );
    if (!ctx.input.expose) return { url: null };
    const preview = await box.exposePort(ctx.input.port, { access: ctx.input.access });
    return { url: preview.url, id: preview.id, expiresAt: preview.expiresAt };
  },
});

/** The model calls the tool the user's message names as JSON (`{"toolName":..,"input":..}`), then says done. */
const model = createScriptedModel({
  steps: [],
  fallback: (call) => {
    const last = call.prompt.at(-1);
    if (last?.role !== "user") return { text: "done" };
    const text = last.content.map((part) => (part.type === "text" ? part.text : "")).join("");
    return { toolCalls: [JSON.parse(text)] };
  },
});

const identity = { userId: "alice" };
const pai = createPai({
  agents: { coder: defineAgent({ identity: z.object({ userId: z.string() }), tools: { serve } }) },
});

interface App {
  runtime: AgentRuntime;
  binding: DockerSandboxBinding;
  server: Server;
  port: number;
  events: PreviewRequestEvent[];
  poolId: string;
}

async function startApp(name: string, hibernateAfterMs: number): Promise<App> {
  const poolId = uniquePoolId(name);
  const binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2, hibernateAfterMs } });
  const events: PreviewRequestEvent[] = [];
  const runtime = createAgentRuntime({
    pai,
    store: createMemoryThreadStore(),
    model,
    capabilities: { sandbox: binding },
    previews: { onRequest: (event) => events.push(event) },
  });
  const handler = createPaiHandler({
    runtime,
    authenticate: (request) => {
      const user = request.headers.get("x-user");
      return user ? { userId: user } : null;
    },
  });
  const server = createServer(toNodeListener(handler));
  server.on("upgrade", handler.upgrade);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as AddressInfo).port;
  return { runtime, binding, server, port, events, poolId };
}

async function stopApp(app: App | undefined): Promise<void> {
  if (!app) return;
  try {
    await app.runtime.close();
    app.server.closeAllConnections();
    await new Promise<void>((resolve) => app.server.close(() => resolve()));
    expect(await poolContainers(app.poolId)).toEqual([]);
  } finally {
    await removePoolContainers(app.poolId);
  }
}

interface Reply {
  status: number;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

/** A request to the app on 127.0.0.1 with the `Host` a browser would send (`*.localhost` resolves to loopback). */
function send(
  app: App,
  options: {
    path: string;
    host?: string;
    method?: string;
    headers?: Record<string, string>;
    body?: Buffer;
    agent?: Agent;
  },
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        ...(options.agent ? { agent: options.agent } : {}),
        host: "127.0.0.1",
        port: app.port,
        path: options.path,
        method: options.method ?? "GET",
        headers: { host: options.host ?? `127.0.0.1:${app.port}`, ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

async function runTool(app: App, input: Record<string, unknown>, threadId?: string) {
  const run = await app.runtime.run({
    agentId: "coder",
    identity,
    message: JSON.stringify({ toolName: "serve", input }),
    ...(threadId ? { threadId } : {}),
  });
  const result = await run.done;
  expect(result.status).toBe("completed");
  const output = result.messages
    .flatMap((message) => message.parts)
    .findLast((part) => part.type === "tool-serve" && "output" in part) as
    | { output: { url: string | null } }
    | undefined;
  return { threadId: result.threadId, url: output?.output.url ?? null };
}

const hostOf = (url: string) => new URL(url).host;
/** The MiB blocks of a /big body whose first or last byte is not its number % 251. */
const misplacedMebibytes = (body: Buffer) =>
  Array.from({ length: body.length >> 20 }, (_, i) => i).filter(
    (i) => body[i << 20] !== i % 251 || body[((i + 1) << 20) - 1] !== i % 251,
  );
/** A keep-alive agent that counts the connections it opens. */
class CountingAgent extends Agent {
  opened = 0;
  override createConnection(...args: Parameters<Agent["createConnection"]>) {
    this.opened++;
    return super.createConnection(...args);
  }
}
/** `pai-splice` processes of this process, running now. */
async function spliceHelpersRunning(): Promise<number> {
  const { stdout } = await execa("pgrep", ["-P", String(process.pid), "-c", "pai-splice"], { reject: false });
  return Number(stdout.trim() || 0);
}
const cookieOf = (url: string) => `pai_preview=${new URL(url).searchParams.get("pai_preview_token")}`;

describe.skipIf(dockerOptedOut)("previews and terminals of a real sandbox through createPaiHandler", () => {
  let app: App;
  let threadId: string;
  let url: string;

  /** What the sandbox's server on `port` logged, read with `docker exec` (outside PAI). */
  async function requestsSeen(port: number): Promise<string[]> {
    const containerId = app.runtime.leases().find((lease) => lease.key === threadId)?.resourceId ?? "";
    const log = await docker(
      "exec",
      containerId,
      "sh",
      "-c",
      `cat /workspace/requests-${port}.log 2>/dev/null || true`,
    );
    return log.split("\n").filter(Boolean);
  }

  beforeAll(async () => {
    app = await startApp("previews", 600_000);
    // the first request the handler serves on loopback sets where previews are
    expect((await send(app, { path: "/api/threads", headers: { "x-user": "alice" } })).status).toBe(200);
    const started = await runTool(app, { port: 8080, expose: true });
    threadId = started.threadId;
    url = started.url as string;
    // a second server that is never exposed
    await runTool(app, { port: 8081, expose: false }, threadId);
  }, 120_000);

  afterAll(async () => {
    await stopApp(app);
  });

  it("serves HTTP through the preview: token → cookie for its own origin, the server sees its own Host", async () => {
    expect(url).toMatch(new RegExp(`^http://[0-9a-f]{32}\\.localhost:${app.port}/\\?pai_preview_token=`));
    const first = await send(app, { path: new URL(url).pathname + new URL(url).search, host: hostOf(url) });
    expect(first.status).toBe(302);
    expect(first.headers["set-cookie"]?.[0]).toMatch(
      /^pai_preview=.*HttpOnly; SameSite=None; Secure; Partitioned$/,
    );
    const reply = await send(app, {
      path: "/echo",
      method: "POST",
      host: hostOf(url),
      headers: { cookie: `${cookieOf(url)}; app=1` },
      body: Buffer.from("hello"),
    });
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body.toString())).toEqual({
      port: 8080,
      host: "localhost:8080",
      cookie: "app=1",
      body: 5,
    });
    expect(app.events.at(-1)).toMatchObject({ decision: "allowed", status: 200, port: 8080, threadId });
  });

  it("streams server-sent events, a chunked body and 100 MiB", async () => {
    const headers = { cookie: cookieOf(url) };
    expect((await send(app, { path: "/events", host: hostOf(url), headers })).body.toString()).toBe(
      "data: 1\n\ndata: 2\n\ndata: 3\n\n",
    );
    const chunked = await send(app, { path: "/chunked", host: hostOf(url), headers });
    expect(chunked.headers["transfer-encoding"]).toBe("chunked");
    expect(chunked.body.toString()).toBe("first,second");
    // Large bodies are moved in the kernel (pai-splice); one kept-alive browser connection carries two of them, then
    // a small request: each body whole and in order, the connection's framing intact.
    const agent = new CountingAgent({ keepAlive: true, maxSockets: 1 });
    try {
      for (let round = 0; round < 2; round++) {
        const big = await send(app, { path: "/big", host: hostOf(url), headers, agent });
        expect(big.body.length).toBe(100 * 1024 * 1024);
        expect(misplacedMebibytes(big.body)).toEqual([]);
        // the event comes as the server ends the response, which may be just after the browser has the last byte
        await expect.poll(() => app.events.filter((event) => event.path === "/big").length).toBe(round + 1);
        expect(app.events.at(-1)!.bytesDown).toBeGreaterThan(100 * 1024 * 1024);
      }
      const small = await send(app, { path: "/echo", host: hostOf(url), headers, agent });
      expect(JSON.parse(small.body.toString())).toMatchObject({ port: 8080 });
      expect(agent.opened).toBe(1);
    } finally {
      agent.destroy();
    }
  }, 120_000);

  it("ends a large body's kernel copy when the browser goes away mid-body, and serves the next request", async () => {
    const received = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        {
          host: "127.0.0.1",
          port: app.port,
          path: "/big",
          headers: { host: hostOf(url), cookie: cookieOf(url) },
        },
        (res) => {
          let bytes = 0;
          res.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes > 20 * 1024 * 1024) {
              req.destroy();
              resolve(bytes);
            }
          });
        },
      );
      req.on("error", reject);
      req.end();
    });
    expect(received).toBeLessThan(100 * 1024 * 1024);
    await expect.poll(() => spliceHelpersRunning(), { timeout: 10_000 }).toBe(0);
    const reply = await send(app, { path: "/echo", host: hostOf(url), headers: { cookie: cookieOf(url) } });
    expect(reply.status).toBe(200);
  }, 60_000);

  it("tunnels a WebSocket to the server", async () => {
    const socket = new WebSocket(`ws://127.0.0.1:${app.port}/socket`, {
      headers: { host: hostOf(url), cookie: cookieOf(url) },
    });
    const reply = await new Promise<string>((resolve, reject) => {
      socket.once("open", () => socket.send("ping"));
      socket.once("message", (data) => resolve(String(data)));
      socket.once("error", reject);
    });
    expect(reply).toBe("echo:ping");
    socket.close();
  });

  it("refuses a forged token, no token, another identity, an unknown preview and a rebound Host: nothing reaches the container", async () => {
    const before = await requestsSeen(8080);
    const host = hostOf(url);
    const refused = [
      await send(app, { path: "/", host }),
      await send(app, { path: "/", host, headers: { cookie: "pai_preview=forged" } }),
      await send(app, { path: "/?pai_preview_token=forged", host }),
      await send(app, {
        path: "/",
        host: `${"0".repeat(32)}.localhost:${app.port}`,
        headers: { cookie: cookieOf(url) },
      }),
      // DNS rebinding: a name the attacker controls, pointed at this machine
      await send(app, {
        path: "/",
        host: `${new URL(url).hostname.split(".")[0]}.attacker.example:${app.port}`,
        headers: { cookie: cookieOf(url) },
      }),
    ];
    expect(refused.map((reply) => reply.status)).toEqual([403, 403, 403, 404, 404]);
    const ws = new WebSocket(`ws://127.0.0.1:${app.port}/socket`, { headers: { host } });
    expect(
      await new Promise((resolve) => ws.once("unexpected-response", (_req, res) => resolve(res.statusCode))),
    ).toBe(403);

    const own = await runTool(app, { port: 8080, expose: true, access: "identity" }, threadId);
    expect(own.url).not.toContain("pai_preview_token");
    expect(
      (await send(app, { path: "/", host: hostOf(own.url!), headers: { "x-user": "mallory" } })).status,
    ).toBe(403);
    expect((await send(app, { path: "/", host: hostOf(own.url!) })).status).toBe(403);
    expect(await requestsSeen(8080)).toEqual(before);
    expect(
      (await send(app, { path: "/mine", host: hostOf(own.url!), headers: { "x-user": "alice" } })).status,
    ).toBe(200);
    expect((await requestsSeen(8080)).at(-1)).toBe("GET /mine localhost:8080");
  }, 60_000);

  it("reaches only the exposed port: no Host, path or absolute URL leads to another port", async () => {
    const headers = { cookie: cookieOf(url) };
    const attempts = [
      await send(app, { path: "http://localhost:8081/", host: hostOf(url), headers }),
      await send(app, {
        path: "/",
        host: hostOf(url),
        headers: { ...headers, "x-forwarded-port": "8081", "x-forwarded-host": "localhost:8081" },
      }),
      await send(app, { path: "//localhost:8081/", host: hostOf(url), headers }),
    ];
    for (const reply of attempts) {
      if (reply.status === 200) expect(JSON.parse(reply.body.toString()).port).toBe(8080);
    }
    expect(await requestsSeen(8081)).toEqual([]);
  });

  it("opens a terminal for the thread's identity only: echo, resize, Ctrl-C", async () => {
    const other = new WebSocket(`ws://127.0.0.1:${app.port}/api/threads/${threadId}/terminal`, {
      headers: { "x-user": "mallory" },
    });
    expect(
      await new Promise((resolve) =>
        other.once("unexpected-response", (_req, res) => resolve(res.statusCode)),
      ),
    ).toBe(404);

    const terminal = await openTerminal(threadId, 80, 24);
    try {
      await terminal.ready;
      terminal.send("echo hi-$((40+2)); stty size\n");
      await terminal.until(/hi-42\r\n24 80\r\n/);
      terminal.resize(132, 43);
      terminal.send("stty size\n");
      await terminal.until(/43 132\r\n/);
      terminal.send("sleep 100; echo after-sleep-$?\n");
      await new Promise((resolve) => setTimeout(resolve, 500));
      terminal.send("\x03");
      terminal.send("echo alive-$((1+1))\n");
      await terminal.until(/alive-2\r\n/);
    } finally {
      terminal.close();
    }
  }, 60_000);

  it("ends previews with the thread", async () => {
    const headers = { cookie: cookieOf(url) };
    expect((await send(app, { path: "/", host: hostOf(url), headers })).status).toBe(200);
    await app.runtime.endThread(threadId);
    expect((await send(app, { path: "/", host: hostOf(url), headers })).status).toBe(404);
    expect(app.runtime.listPreviews(threadId)).toEqual([]);
  }, 60_000);

  /** A terminal WebSocket of `threadId` as alice, with its output collected. */
  async function openTerminal(id: string, cols = 80, rows = 24) {
    const socket = new WebSocket(
      `ws://127.0.0.1:${app.port}/api/threads/${id}/terminal?cols=${cols}&rows=${rows}`,
      {
        headers: { "x-user": "alice" },
      },
    );
    let output = "";
    let readyResolve!: () => void;
    const ready = new Promise<void>((resolve) => {
      readyResolve = resolve;
    });
    socket.on("message", (data, isBinary) => {
      if (isBinary) output += String(data);
      else if (JSON.parse(String(data)).type === "ready") readyResolve();
    });
    return {
      ready,
      send: (text: string) => socket.send(Buffer.from(text)),
      resize: (c: number, r: number) => socket.send(JSON.stringify({ type: "resize", cols: c, rows: r })),
      async until(pattern: RegExp): Promise<string> {
        await waitFor(() => pattern.test(output), `${pattern} in ${JSON.stringify(output.slice(-300))}`);
        return output;
      },
      close: () => socket.close(),
    };
  }
});

describe.skipIf(dockerOptedOut)("a preview of a hibernated sandbox", () => {
  let app: App | undefined;
  afterAll(async () => {
    await stopApp(app);
  });

  it("is woken by a request; the server's process is gone (502) until it runs again", async () => {
    app = await startApp("previews-hibernate", 300);
    await send(app, { path: "/api/threads", headers: { "x-user": "alice" } });
    const { threadId, url } = await runTool(app, { port: 8090, expose: true });
    const headers = { cookie: cookieOf(url!) };
    expect((await send(app, { path: "/", host: hostOf(url!), headers })).status).toBe(200);
    await waitFor(async () => app!.binding.metrics()?.hibernated === 1, "hibernation");
    const asleep = await send(app, { path: "/", host: hostOf(url!), headers });
    expect(asleep.status).toBe(502);
    expect(JSON.parse(asleep.body.toString()).error.code).toBe("PREVIEW_UNREACHABLE");
    expect(app.binding.metrics()?.hibernated).toBe(0);
    // the server started again: the same URL serves it
    await runTool(app, { port: 8090, expose: false }, threadId);
    expect((await send(app, { path: "/", host: hostOf(url!), headers })).status).toBe(200);
  }, 120_000);
});
