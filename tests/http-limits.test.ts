// Limits at the HTTP edge, through a real node:http server on 127.0.0.1: an oversized body is refused with 413
// while it streams (memory stays flat), and a new user message, an answer and clientData have their own caps,
// checked before anything is stored or sent to a model.
import { createServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import {
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  defineTool,
  type MessageLimits,
  toNodeListener,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { describe, expect, it } from "vitest";
import { z } from "zod";

const MiB = 1024 * 1024;

const approve = defineTool({
  id: "approve",
  description: "Waits for a person",
  inputSchema: z.object({}),
  execute: (ctx) => (ctx.entry.type === "resume" ? { done: true } : ctx.suspend({ question: "ok?" })),
});

/** A runtime behind `createPaiHandler` on a real `node:http` server; closed by `await using`. */
async function startServer(options: { limits?: MessageLimits; maxBodyBytes?: number } = {}) {
  const model = createScriptedModel({
    steps: [{ toolCalls: [{ toolName: "approve", input: {}, toolCallId: "c1" }] }],
    fallback: { text: "ok" },
  });
  const store = createMemoryThreadStore();
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { ops: defineAgent({ tools: { approve } }) } }),
    store,
    model,
    ...(options.limits ? { limits: options.limits } : {}),
  });
  const handler = createPaiHandler({
    runtime,
    authenticate: () => ({ userId: "alice" }),
    ...(options.maxBodyBytes !== undefined ? { maxBodyBytes: options.maxBodyBytes } : {}),
  });
  const server = createServer(toNodeListener(handler));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
  return {
    base,
    runtime,
    store,
    model,
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await runtime.close();
    },
  };
}

/**
 * POSTs a chunked JSON body of about `totalBytes` without `Content-Length`, as fast as the server reads it, until
 * the server answers or closes the connection. One 64 KiB buffer is reused, so the client holds no body.
 */
function streamBody(
  url: string,
  totalBytes: number,
): Promise<{ status?: number; body: string; sent: number }> {
  return new Promise((resolve) => {
    const chunk = Buffer.alloc(64 * 1024, "a");
    const req = httpRequest(url, { method: "POST", headers: { "content-type": "application/json" } });
    let sent = 0;
    let status: number | undefined;
    let body = "";
    let settled = false;
    const finish = () => {
      if (settled) return;
      settled = true;
      req.destroy();
      resolve({ ...(status !== undefined ? { status } : {}), body, sent });
    };
    req.on("response", (response) => {
      status = response.statusCode;
      response.setEncoding("utf8");
      response.on("data", (text: string) => {
        body += text;
      });
      response.on("end", finish);
      response.on("error", finish);
    });
    req.on("error", () => setTimeout(finish, 100));
    req.on("close", () => setTimeout(finish, 100));
    const writable = () =>
      new Promise<void>((next) => {
        const go = () => {
          req.off("drain", go);
          req.off("close", go);
          next();
        };
        req.once("drain", go);
        req.once("close", go);
      });
    void (async () => {
      if (!req.write('{"messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"'))
        await writable();
      while (sent < totalBytes && status === undefined && !req.destroyed) {
        sent += chunk.byteLength;
        if (!req.write(chunk)) await writable();
      }
      if (status === undefined && !req.destroyed) req.end('"}]}]}');
    })();
  });
}

/** Samples this process's RSS and heap while `work` runs; returns the largest growth over the start. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ result: T; rss: number; heap: number }> {
  const start = process.memoryUsage();
  let rss = 0;
  let heap = 0;
  const sample = () => {
    const now = process.memoryUsage();
    rss = Math.max(rss, now.rss - start.rss);
    heap = Math.max(heap, now.heapUsed - start.heapUsed);
  };
  const timer = setInterval(sample, 20);
  try {
    const result = await work();
    sample();
    return { result, rss, heap };
  } finally {
    clearInterval(timer);
  }
}

function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

function userMessage(parts: unknown[]) {
  return { id: "m1", role: "user", parts };
}

describe("HTTP body limit", () => {
  it("refuses a 300 MiB streamed body with 413 while it streams, and the server's memory stays flat", async () => {
    await using server = await startServer();
    const { result, rss, heap } = await peakGrowth(() => streamBody(`${server.base}/chat`, 300 * MiB));
    expect(result.status).toBe(413);
    expect(JSON.parse(result.body)).toMatchObject({ error: { code: "BODY_TOO_LARGE" } });
    // The server stopped reading soon after the limit: the client got nowhere near 300 MiB out.
    expect(result.sent).toBeLessThan(64 * MiB);
    expect(rss).toBeLessThan(50 * MiB);
    expect(heap).toBeLessThan(50 * MiB);
    expect(
      await server.store.listThreads({ ownerKey: server.runtime.identityKey({ userId: "alice" }) }),
    ).toEqual([]);
    expect(server.model.stepsPlayed).toBe(0);
  });

  it("refuses a body whose Content-Length is over the limit without reading it", async () => {
    await using server = await startServer({ maxBodyBytes: 1000 });
    const response = await post(`${server.base}/chat`, {
      messages: [userMessage([{ type: "text", text: "x".repeat(2000) }])],
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({
      error: { code: "BODY_TOO_LARGE", message: expect.stringContaining("Content-Length") },
    });
  });

  it("accepts a body up to the configured limit and keeps the connection usable afterwards", async () => {
    await using server = await startServer({ maxBodyBytes: 4096 });
    const small = await post(`${server.base}/chat`, {
      messages: [userMessage([{ type: "text", text: "hi" }])],
    });
    expect(small.status).toBe(200);
    await small.text();
    const refused = await streamBody(`${server.base}/chat`, 64 * 1024);
    expect(refused.status).toBe(413);
    expect((await fetch(`${server.base}/threads`)).status).toBe(200);
  });

  it("refuses a maxBodyBytes that is not a whole number of bytes", async () => {
    await using server = await startServer();
    expect(() =>
      createPaiHandler({ runtime: server.runtime, authenticate: () => ({}), maxBodyBytes: -1 }),
    ).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });
});

describe("message, answer and clientData limits", () => {
  it("refuses a user message over maxMessageBytes with 413 before anything is stored or sent to the model", async () => {
    await using server = await startServer({ limits: { maxMessageBytes: 1000 } });
    const response = await post(`${server.base}/chat`, {
      id: "t-big",
      messages: [userMessage([{ type: "text", text: "é".repeat(600) }])],
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: "MESSAGE_TOO_LARGE" } });
    expect(await server.store.getThread("t-big")).toBeUndefined();
    expect(server.model.stepsPlayed).toBe(0);
  });

  it("refuses a user message with more parts than maxMessageParts with 400", async () => {
    await using server = await startServer({ limits: { maxMessageParts: 3 } });
    const parts = Array.from({ length: 4 }, (_, index) => ({ type: "text", text: `part ${index}` }));
    const response = await post(`${server.base}/chat`, { id: "t-parts", messages: [userMessage(parts)] });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: "TOO_MANY_PARTS" } });
    expect(await server.store.getThread("t-parts")).toBeUndefined();
    expect(server.model.stepsPlayed).toBe(0);
  });

  it("refuses clientData over maxClientDataBytes with 413", async () => {
    await using server = await startServer({ limits: { maxClientDataBytes: 100 } });
    const response = await post(`${server.base}/chat`, {
      id: "t-data",
      messages: [userMessage([{ type: "text", text: "hi" }])],
      clientData: { note: "x".repeat(200) },
    });
    expect(response.status).toBe(413);
    expect(await response.json()).toMatchObject({ error: { code: "CLIENT_DATA_TOO_LARGE" } });
    expect(await server.store.getThread("t-data")).toBeUndefined();
  });

  it("refuses an answer over maxAnswerBytes with 413 and leaves the action pending", async () => {
    await using server = await startServer({ limits: { maxAnswerBytes: 200 } });
    const sent = await post(`${server.base}/chat`, {
      id: "t-answer",
      messages: [userMessage([{ type: "text", text: "go" }])],
    });
    await sent.text();
    const [action] = await server.runtime.listPendingActions({ threadId: "t-answer" });
    const answer = (reason: string) =>
      post(`${server.base}/threads/t-answer/actions/${action!.actionId}`, {
        toolCallId: action!.toolCallId,
        toolId: action!.toolId,
        inputHash: action!.inputHash,
        answer: { type: "deny", reason },
      });
    const refused = await answer("x".repeat(500));
    expect(refused.status).toBe(413);
    expect(await refused.json()).toMatchObject({ error: { code: "ANSWER_TOO_LARGE" } });
    expect(await server.runtime.listPendingActions({ threadId: "t-answer" })).toHaveLength(1);
    const accepted = await answer("no");
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toMatchObject({ status: "accepted" });
  });
});
