import { once } from "node:events";
import { createServer, request as httpRequest, type IncomingMessage, type Server } from "node:http";
import { type AddressInfo, connect, createServer as createNetServer, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { WebSocket, WebSocketServer } from "ws";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { defineCapability } from "../capabilities/define-capability.ts";
import { createPaiHandler } from "../http/create-pai-handler.ts";
import { createPreviewServer } from "../http/create-preview-server.ts";
import { toNodeListener } from "../http/node-listener.ts";
import { type AgentRuntime, createAgentRuntime } from "../runtime/create-agent-runtime.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import type { ExposePortOptions, PortPreview, PreviewExposer } from "./port-preview.ts";
import type { PreviewRequestEvent } from "./preview-request-event.ts";

/**
 * Previews through the HTTP handler, against real servers: the "resource" is a box whose ports are servers on this
 * host's loopback (`openPort` connects to them), so every byte crosses real sockets and the real handler. The
 * sandbox's own previews (through the container agent) are tested on the engine in tests/sandbox.
 */
interface Box {
  exposePort(port: number, options?: ExposePortOptions): Promise<PortPreview>;
}
const box = defineCapability<"box", Box>({
  name: "box",
  defaultLifetime: "thread",
  members: { exposePort: true },
});

/** What the servers "in the box" saw. */
const seen: IncomingMessage[] = [];
let app: Server;
let appPort: number;
let boxServer: Server;
let boxPort: number;
let runtime: AgentRuntime;
/** The handler as a fetch function (the app's server uses its Node route). */
let fetchHandler: (request: Request) => Promise<Response>;
let events: PreviewRequestEvent[];
let exposed: PortPreview | undefined;
/** What the model asks the next `expose` call for. */
let nextAccess: "token" | "identity" | undefined;
/** How long the next preview lives. */
let nextTtlMs: number | undefined;

function boxBinding(): CapabilityBinding<Box> {
  return {
    kind: "pai.capability-binding",
    capability: "box",
    async provision() {
      return {
        facade: { exposePort: () => Promise.reject(new Error("not bound")) },
        resourceId: "box-1",
        release: async () => {},
        bind: (scope: { previews?: PreviewExposer }) => ({
          exposePort: (port: number, options?: ExposePortOptions) => scope.previews!.expose(port, options),
        }),
        openPort: (port: number) =>
          new Promise((resolve, reject) => {
            const socket = connect(port, "127.0.0.1");
            socket.once("connect", () => resolve(socket));
            socket.once("error", reject);
          }),
      };
    },
    async close() {},
  };
}

const exposeTool = defineTool({
  id: "expose",
  description: "expose a port",
  inputSchema: z.object({
    port: z.number(),
    access: z.enum(["token", "identity"]).optional(),
    ttlMs: z.number().optional(),
  }),
  capabilities: { box },
  execute: async (ctx) => {
    exposed = await ctx.capabilities.box.exposePort(ctx.input.port, {
      access: ctx.input.access,
      ttlMs: ctx.input.ttlMs,
    });
    return { url: exposed.url };
  },
});

beforeEach(async () => {
  seen.length = 0;
  events = [];
  exposed = undefined;
  boxServer = createServer((req, res) => {
    seen.push(req);
    if (req.url === "/events") {
      res.writeHead(200, { "content-type": "text/event-stream" });
      let n = 0;
      const timer = setInterval(() => {
        res.write(`data: ${++n}\n\n`);
        if (n === 3) {
          clearInterval(timer);
          res.end();
        }
      }, 20);
      return;
    }
    if (req.url === "/big") {
      const chunk = Buffer.alloc(1024 * 1024, 7);
      let left = 100;
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const pump = () => {
        while (left > 0) {
          left -= 1;
          if (!res.write(chunk)) return void res.once("drain", pump);
        }
        res.end();
      };
      return pump();
    }
    let body = 0;
    req.on("data", (chunk: Buffer) => {
      body += chunk.length;
    });
    req.on("end", () => {
      res.setHeader("set-cookie", ["a=1; Domain=localhost; Path=/", "b=2"]);
      res.end(
        JSON.stringify({ host: req.headers.host, cookie: req.headers.cookie ?? null, url: req.url, body }),
      );
    });
  });
  const sockets = new WebSocketServer({ server: boxServer });
  sockets.on("connection", (socket) => socket.on("message", (data) => socket.send(`echo:${data}`)));
  await new Promise<void>((resolve) => boxServer.listen(0, "127.0.0.1", resolve));
  boxPort = (boxServer.address() as AddressInfo).port;

  runtime = createAgentRuntime({
    pai: createPai({
      agents: {
        a: defineAgent({ identity: z.object({ userId: z.string() }), tools: { expose: exposeTool } }),
      },
    }),
    store: createMemoryThreadStore(),
    // one tool call per user message, then a reply once its result is in
    model: createScriptedModel({
      steps: [],
      fallback: (call) =>
        call.prompt.at(-1)?.role === "tool"
          ? { text: "done" }
          : {
              toolCalls: [
                {
                  toolName: "expose",
                  input: {
                    port: boxPort,
                    ...(nextAccess ? { access: nextAccess } : {}),
                    ...(nextTtlMs ? { ttlMs: nextTtlMs } : {}),
                  },
                },
              ],
            },
    }),
    capabilities: { box: boxBinding() },
    previews: { onRequest: (event) => events.push(event) },
  });
  const handler = createPaiHandler({
    runtime,
    authenticate: (request) => {
      const user = request.headers.get("x-user");
      return user ? { userId: user } : null;
    },
  });
  fetchHandler = handler;
  app = createServer(toNodeListener(handler));
  app.on("upgrade", handler.upgrade);
  await new Promise<void>((resolve) => app.listen(0, "127.0.0.1", resolve));
  appPort = (app.address() as AddressInfo).port;
  // the first request on a loopback host tells the runtime where previews are served
  await send({ path: "/api/threads", headers: { "x-user": "alice" } });
});

afterEach(async () => {
  await runtime.close();
  app.closeAllConnections();
  boxServer.closeAllConnections();
  await new Promise<void>((resolve) => app.close(() => resolve()));
  await new Promise<void>((resolve) => boxServer.close(() => resolve()));
});

/** Runs the expose tool in a thread of alice's and returns the preview. */
async function openPreview(access?: "token" | "identity", ttlMs?: number): Promise<PortPreview> {
  nextAccess = access;
  nextTtlMs = ttlMs;
  exposed = undefined;
  const run = await runtime.run({
    agentId: "a",
    identity: { userId: "alice" },
    message: "expose",
    threadId: "t1",
  });
  await run.done;
  if (!exposed) throw new Error("the tool did not expose a port");
  return exposed;
}

interface Sent {
  status: number;
  headers: IncomingMessage["headers"];
  body: Buffer;
}

/** An HTTP request to the app on 127.0.0.1 with the `Host` a browser would send. */
function send(options: {
  path: string;
  host?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: Buffer;
}): Promise<Sent> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port: appPort,
        path: options.path,
        method: options.method ?? "GET",
        headers: { host: options.host ?? `127.0.0.1:${appPort}`, ...options.headers },
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

function hostOf(preview: PortPreview): string {
  return new URL(preview.url).host;
}

function cookieOf(preview: PortPreview): string {
  return `pai_preview=${new URL(preview.url).searchParams.get("pai_preview_token")}`;
}

describe("previews through createPaiHandler", () => {
  it("opens with the token: a cookie for its own origin, then the port's server answers as itself", async () => {
    const preview = await openPreview();
    expect(preview.url).toMatch(
      new RegExp(`^http://[0-9a-f]{32}\\.localhost:${appPort}/\\?pai_preview_token=`),
    );
    const url = new URL(preview.url);
    const first = await send({ path: `/?${url.searchParams}`, host: url.host });
    expect(first.status).toBe(302);
    expect(first.headers.location).toBe("/");
    const cookie = first.headers["set-cookie"]?.[0] ?? "";
    expect(cookie).toMatch(
      /^pai_preview=[^;]+; Path=\/; Max-Age=\d+; HttpOnly; SameSite=None; Secure; Partitioned$/,
    );
    expect(cookie).not.toMatch(/domain/i);
    expect(seen).toHaveLength(0);

    const page = await send({
      path: "/hello?x=1",
      host: url.host,
      method: "POST",
      headers: { cookie: `${cookieOf(preview)}; theirs=1` },
      body: Buffer.from("abc"),
    });
    expect(page.status).toBe(200);
    expect(JSON.parse(page.body.toString())).toEqual({
      host: `localhost:${boxPort}`,
      cookie: "theirs=1",
      url: "/hello?x=1",
      body: 3,
    });
    // cookies the server sets stay on the preview's host
    expect(page.headers["set-cookie"]).toEqual(["a=1; Path=/", "b=2"]);
    expect(events.at(-1)).toMatchObject({ decision: "allowed", status: 200, method: "POST", port: boxPort });
  });

  it("refuses a forged token, no token, an unknown preview and another identity; nothing reaches the port", async () => {
    const preview = await openPreview();
    const host = hostOf(preview);
    expect((await send({ path: "/", host })).status).toBe(403);
    expect((await send({ path: "/", host, headers: { cookie: "pai_preview=forged" } })).status).toBe(403);
    expect((await send({ path: "/?pai_preview_token=forged", host })).status).toBe(403);
    const unknown = `${"0".repeat(32)}.localhost:${appPort}`;
    expect((await send({ path: "/", host: unknown, headers: { cookie: cookieOf(preview) } })).status).toBe(
      404,
    );
    // a preview's host on another port is not one (and the app has no such route)
    expect(
      (await send({ path: "/", host: `${preview.id}.localhost:1`, headers: { cookie: cookieOf(preview) } }))
        .status,
    ).toBe(404);

    const own = await openPreview("identity");
    expect(own.url).not.toContain("pai_preview_token");
    expect((await send({ path: "/", host: hostOf(own), headers: { "x-user": "mallory" } })).status).toBe(403);
    expect((await send({ path: "/", host: hostOf(own) })).status).toBe(403);
    expect(seen).toHaveLength(0);
    expect(events.filter((event) => event.decision === "refused")).toHaveLength(6);
    expect((await send({ path: "/", host: hostOf(own), headers: { "x-user": "alice" } })).status).toBe(200);
    expect(seen).toHaveLength(1);
  });

  it("streams server-sent events and a 100 MiB body", async () => {
    const preview = await openPreview();
    const headers = { cookie: cookieOf(preview) };
    const sse = await send({ path: "/events", host: hostOf(preview), headers });
    expect(sse.body.toString()).toBe("data: 1\n\ndata: 2\n\ndata: 3\n\n");
    const big = await send({ path: "/big", host: hostOf(preview), headers });
    expect(big.body.length).toBe(100 * 1024 * 1024);
    expect(big.body.every((byte) => byte === 7)).toBe(true);
  });

  it("tunnels a WebSocket, and refuses one without the token", async () => {
    const preview = await openPreview();
    const socket = new WebSocket(`ws://127.0.0.1:${appPort}/ws`, {
      headers: { host: hostOf(preview), cookie: cookieOf(preview) },
    });
    const reply = await new Promise<string>((resolve, reject) => {
      socket.once("open", () => socket.send("hi"));
      socket.once("message", (data) => resolve(String(data)));
      socket.once("error", reject);
    });
    expect(reply).toBe("echo:hi");
    socket.close();

    const refused = new WebSocket(`ws://127.0.0.1:${appPort}/ws`, { headers: { host: hostOf(preview) } });
    const status = await new Promise<number>((resolve) =>
      refused.once("unexpected-response", (_req, res) => resolve(res.statusCode ?? 0)),
    );
    expect(status).toBe(403);
  });

  it("ends with close(), with the thread, and refuses the app's API from a preview's origin", async () => {
    const preview = await openPreview();
    const headers = { cookie: cookieOf(preview) };
    expect((await send({ path: "/", host: hostOf(preview), headers })).status).toBe(200);
    const fromPreview = await send({
      path: "/api/threads",
      headers: { "x-user": "alice", origin: `http://${hostOf(preview)}` },
    });
    expect(fromPreview.status).toBe(403);
    await preview.close();
    expect((await send({ path: "/", host: hostOf(preview), headers })).status).toBe(404);

    const second = await openPreview();
    expect(runtime.listPreviews("t1").map((entry) => entry.id)).toEqual([second.id]);
    const listed = await send({ path: "/api/threads/t1/previews", headers: { "x-user": "alice" } });
    expect(JSON.parse(listed.body.toString())).toEqual({
      previews: [
        { id: second.id, url: second.url, port: boxPort, access: "token", expiresAt: second.expiresAt },
      ],
    });
    expect((await send({ path: "/api/threads/t1/previews", headers: { "x-user": "mallory" } })).status).toBe(
      404,
    );
    await runtime.endThread("t1");
    expect(
      (await send({ path: "/", host: hostOf(second), headers: { cookie: cookieOf(second) } })).status,
    ).toBe(404);
    expect(runtime.listPreviews("t1")).toEqual([]);
  });

  it("expires: its token then opens nothing", async () => {
    const preview = await openPreview("token", 300);
    const headers = { cookie: cookieOf(preview) };
    expect(Date.parse(preview.expiresAt) - Date.now()).toBeLessThanOrEqual(300);
    expect((await send({ path: "/", host: hostOf(preview), headers })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect((await send({ path: "/", host: hostOf(preview), headers })).status).toBe(404);
    expect(seen).toHaveLength(1);
  });

  it("answers 502 when nothing listens on the port", async () => {
    const preview = await openPreview();
    boxServer.closeAllConnections();
    await new Promise<void>((resolve) => boxServer.close(() => resolve()));
    const response = await send({ path: "/", host: hostOf(preview), headers: { cookie: cookieOf(preview) } });
    expect(response.status).toBe(502);
    expect(JSON.parse(response.body.toString()).error.code).toBe("PREVIEW_UNREACHABLE");
    await new Promise<void>((resolve) => boxServer.listen(boxPort, "127.0.0.1", resolve));
  });

  it("keeps one connection to the port for a preview's requests, each request's bytes its own", async () => {
    const preview = await openPreview();
    const accepted: Socket[] = [];
    boxServer.on("connection", (socket) => accepted.push(socket));
    const headers = { cookie: cookieOf(preview) };
    for (const path of ["/a", "/b", "/c"]) {
      expect((await send({ path, host: hostOf(preview), headers })).status).toBe(200);
    }
    expect(accepted).toHaveLength(1);
    const served = events.filter((event) => event.decision === "allowed");
    expect(served.map((event) => event.path)).toEqual(["/a", "/b", "/c"]);
    // the same response each time: the same bytes, not a running total of the connection's
    const [first] = served;
    expect(first!.bytesDown).toBeGreaterThan(0);
    expect(served.map((event) => event.bytesDown)).toEqual([
      first!.bytesDown,
      first!.bytesDown,
      first!.bytesDown,
    ]);
  });

  it("serves the fetch-style handler the same way, over the kept connection", async () => {
    const preview = await openPreview();
    const accepted: Socket[] = [];
    boxServer.on("connection", (socket) => accepted.push(socket));
    const headers = { cookie: cookieOf(preview), host: hostOf(preview) };
    const fetchPreview = async (path: string, init: RequestInit = {}) => {
      const response = await fetchHandler(
        new Request(`http://${hostOf(preview)}${path}`, { ...init, headers }),
      );
      const text = await response.text();
      // the next request comes on a later turn of the event loop, as one from the network does
      await new Promise((resolve) => setImmediate(resolve));
      return { status: response.status, text };
    };
    const posted = await fetchPreview("/form", { method: "POST", body: "abcd" });
    expect(posted.status).toBe(200);
    expect(JSON.parse(posted.text)).toMatchObject({ url: "/form", body: 4, host: `localhost:${boxPort}` });
    expect(JSON.parse((await fetchPreview("/page")).text)).toMatchObject({ url: "/page", body: 0 });
    expect(JSON.parse((await fetchPreview("/")).text).url).toBe("/");
    expect(accepted).toHaveLength(1);
    expect(await fetchPreview("/page", { method: "HEAD" })).toEqual({ status: 200, text: "" });
    expect(events.slice(-4).map((event) => [event.method, event.status, event.bytesUp])).toEqual([
      ["POST", 200, 4],
      ["GET", 200, 0],
      ["GET", 200, 0],
      ["HEAD", 200, 0],
    ]);
  });

  it("closes the kept connections when the preview closes", async () => {
    const preview = await openPreview();
    const accepted: Socket[] = [];
    boxServer.on("connection", (socket) => accepted.push(socket));
    expect(
      (await send({ path: "/", host: hostOf(preview), headers: { cookie: cookieOf(preview) } })).status,
    ).toBe(200);
    const [kept] = accepted;
    expect(kept!.destroyed).toBe(false);
    const closed = once(kept!, "close");
    await preview.close();
    await closed;
  });

  it("does not fail a request when the server closed the kept connection, idle or as it was reused", async () => {
    const preview = await openPreview();
    const headers = { cookie: cookieOf(preview) };
    const host = hostOf(preview);
    boxServer.keepAliveTimeout = 100;
    expect((await send({ path: "/", host, headers })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 300)); // the server closed it
    expect((await send({ path: "/", host, headers })).status).toBe(200);

    // a server that answers one request per connection and drops the connection when a second one comes
    boxServer.closeAllConnections();
    await new Promise<void>((resolve) => boxServer.close(() => resolve()));
    let connections = 0;
    const once = createNetServer((socket) => {
      connections += 1;
      let answered = false;
      socket.on("data", () => {
        if (answered) return void socket.destroy();
        answered = true;
        socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
      });
    });
    await new Promise<void>((resolve) => once.listen(boxPort, "127.0.0.1", resolve));
    try {
      expect((await send({ path: "/", host, headers })).body.toString()).toBe("ok");
      // on the kept connection, dropped: sent again on a new one
      expect((await send({ path: "/", host, headers })).body.toString()).toBe("ok");
      expect(connections).toBe(2);
      // a request with a body is never sent twice
      const posted = await send({ path: "/", host, headers, method: "POST", body: Buffer.from("x") });
      expect(posted.status).toBe(502);
      expect(connections).toBe(2);
      expect(events.at(-1)).toMatchObject({ decision: "allowed", status: 502 });
    } finally {
      await new Promise<void>((resolve) => once.close(() => resolve()));
      await new Promise<void>((resolve) => boxServer.listen(boxPort, "127.0.0.1", resolve));
    }
  });

  it("serves previews from a preview server of their own", async () => {
    await using previews = await createPreviewServer({ runtime });
    expect(previews.url).toMatch(/^http:\/\/localhost:\d+$/);
    const preview = await openPreview();
    // the handler's address was learned first: previews stay there
    expect(new URL(preview.url).port).toBe(String(appPort));
  });
});
