import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type AgentRuntime,
  createAgentRuntime,
  createMemoryThreadStore,
  createPai,
  createPaiHandler,
  defineAgent,
  defineTool,
  type PublicPendingAction,
  toNodeListener,
} from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import {
  parseJsonEventStream,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema,
} from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";

const deploy = defineTool({
  id: "deploy",
  description: "Deploy after approval",
  inputSchema: z.object({ service: z.string() }),
  outputSchema: z.object({ deployed: z.string() }),
  data: { log: z.string() },
  execute: async (ctx) => {
    if (ctx.entry.type === "initial") return ctx.suspend({ question: `Deploy ${ctx.input.service}?` });
    await ctx.data.write("log", `deploying ${ctx.input.service}`);
    return { deployed: ctx.input.service };
  },
});

let reachedWait!: () => void;
let waiting: Promise<void>;
const waitForStop = defineTool({
  id: "waitForStop",
  description: "Blocks until the run is stopped",
  inputSchema: z.object({}),
  execute: (ctx) => {
    reachedWait();
    return new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)));
  },
});

let server: Server;
let base: string;
let runtime: AgentRuntime;
const errors: unknown[] = [];

beforeEach(async () => {
  const model = createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "deploy", input: { service: "api" }, toolCallId: "c1" }] },
      { text: "Deployed api." },
    ],
    fallback: { text: "ok" },
  });
  const agent = defineAgent({
    identity: z.object({ userId: z.string() }),
    tools: { deploy },
    onRuntimeError: (error) => void errors.push(error),
  });
  waiting = new Promise((resolve) => {
    reachedWait = resolve;
  });
  const waiter = defineAgent({
    identity: z.object({ userId: z.string() }),
    tools: { waitForStop },
    model: createScriptedModel({ steps: [{ toolCalls: [{ toolName: "waitForStop", input: {} }] }] }),
  });
  runtime = createAgentRuntime({
    pai: createPai({ agents: { ops: agent, waiter } }),
    store: createMemoryThreadStore(),
    model,
  });
  const handler = createPaiHandler({
    runtime,
    defaultAgentId: "ops",
    authenticate: (request) => {
      const user = request.headers.get("x-user");
      return user ? { userId: user } : null;
    },
  });
  server = createServer(toNodeListener(handler));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api`;
});

afterEach(async () => {
  await runtime.close();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

function call(path: string, init: RequestInit & { user?: string } = {}) {
  const { user = "alice", ...rest } = init;
  return fetch(`${base}${path}`, {
    ...rest,
    headers: { "content-type": "application/json", ...(user ? { "x-user": user } : {}) },
  });
}

/** Reads an SSE response the way the AI SDK's client does, down to the final assistant message. */
async function readMessage(
  response: Response,
  resumeFrom?: UIMessage,
): Promise<{ message: UIMessage | undefined; chunks: UIMessageChunk[] }> {
  const chunks: UIMessageChunk[] = [];
  const parsed = parseJsonEventStream({ stream: response.body!, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error;
        chunks.push(result.value as UIMessageChunk);
        controller.enqueue(result.value as UIMessageChunk);
      },
    }),
  );
  let message: UIMessage | undefined;
  const stream = readUIMessageStream({
    stream: parsed,
    terminateOnError: true,
    ...(resumeFrom ? { message: resumeFrom } : {}),
  });
  for await (const snapshot of stream) message = snapshot;
  return { message, chunks };
}

describe("HTTP interface", () => {
  it("streams a reply as SSE, round-trips an approval, and serves the thread", async () => {
    const send = await call("/chat", {
      method: "POST",
      body: JSON.stringify({
        id: "t1",
        messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "deploy api" }] }],
      }),
    });
    expect(send.status).toBe(200);
    expect(send.headers.get("content-type")).toContain("text/event-stream");
    const first = await readMessage(send);
    const pendingPart = first.chunks.find((chunk) => chunk.type === "data-pai-action") as {
      data: PublicPendingAction;
    };
    expect(pendingPart.data).toMatchObject({
      toolName: "deploy",
      payload: { question: "Deploy api?" },
      status: "pending",
    });
    expect(first.message?.parts.find((part) => part.type === "tool-deploy")).toMatchObject({
      state: "approval-requested",
      approval: { id: pendingPart.data.actionId },
    });

    const read = await (await call("/threads/t1")).json();
    expect(read.pendingActions).toHaveLength(1);
    const waitingList = await (await call("/threads")).json();
    expect(waitingList.threads).toEqual([
      expect.objectContaining({
        id: "t1",
        pendingActionCount: 1,
        lastRunStatus: "suspended",
        lastAnswer: null,
      }),
    ]);
    const action = read.pendingActions[0] as PublicPendingAction;

    const answer = await fetch(`${base}/threads/t1/actions/${action.actionId}`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "text/event-stream", "x-user": "alice" },
      body: JSON.stringify({
        toolCallId: action.toolCallId,
        toolId: action.toolId,
        inputHash: action.inputHash,
        answer: { type: "resume", resume: { ok: true } },
      }),
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get("x-pai-run-id")).toBeTruthy();
    const continuation = await readMessage(answer, first.message);
    expect(continuation.chunks.some((chunk) => chunk.type === "data-log")).toBe(true);
    expect(
      continuation.message?.parts.some((part) => part.type === "text" && part.text === "Deployed api."),
    ).toBe(true);
    expect(continuation.message?.parts.find((part) => part.type === "tool-deploy")).toMatchObject({
      state: "output-available",
    });

    const again = await call(`/threads/t1/actions/${action.actionId}`, {
      method: "POST",
      body: JSON.stringify({
        toolCallId: action.toolCallId,
        toolId: action.toolId,
        inputHash: action.inputHash,
        answer: { type: "resume", resume: {} },
      }),
    });
    expect(await again.json()).toMatchObject({ status: "already-settled" });

    await waitForIdle("t1");
    const thread = await (await call("/threads/t1")).json();
    const parts = (thread.messages as UIMessage[]).flatMap((message) => message.parts);
    expect(parts.find((part) => part.type === "tool-deploy")).toMatchObject({
      state: "output-available",
      output: { deployed: "api" },
    });
    expect(thread.toolData.map((record: { data: unknown }) => record.data)).toEqual(["deploying api"]);
    expect(thread.pendingActions).toEqual([]);

    const list = await (await call("/threads")).json();
    expect(list.threads).toEqual([
      expect.objectContaining({
        id: "t1",
        pendingActionCount: 0,
        lastRunStatus: "completed",
        lastAnswer: "resumed",
      }),
    ]);
  });

  it("hides a thread from another identity and requires authentication", async () => {
    const send = await call("/chat", {
      method: "POST",
      body: JSON.stringify({
        id: "t2",
        messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "deploy" }] }],
      }),
    });
    await readMessage(send);
    expect((await call("/threads/t2", { user: "mallory" })).status).toBe(404);
    expect((await call("/chat/t2/stream", { user: "mallory" })).status).toBe(404);
    expect((await call("/threads", { user: "mallory" }).then((r) => r.json())).threads).toEqual([]);
    const anonymous = await call("/threads/t2", { user: "" });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ error: { code: "UNAUTHENTICATED" } });
    const hijack = await call("/chat", {
      method: "POST",
      user: "mallory",
      body: JSON.stringify({
        id: "t2",
        messages: [{ id: "m2", role: "user", parts: [{ type: "text", text: "mine now" }] }],
        clientData: { userId: "alice" },
      }),
    });
    expect(hijack.status).toBe(404);
  });

  it("renames a thread for its owner only, keeps the name through a run, and deletes it", async () => {
    await readMessage(
      await call("/chat", {
        method: "POST",
        body: JSON.stringify({
          id: "t3",
          messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "deploy api" }] }],
        }),
      }),
    );
    const rename = (title: unknown, user?: string) =>
      call("/threads/t3", { method: "PATCH", body: JSON.stringify({ title }), ...(user ? { user } : {}) });
    const titles = async () =>
      ((await (await call("/threads")).json()).threads as Array<{ title?: string }>).map((t) => t.title);
    expect(await titles()).toEqual(["deploy api"]);

    const renamed = await rename("  Deploy the API  ");
    expect(renamed.status).toBe(200);
    expect(await renamed.json()).toMatchObject({ thread: { id: "t3", title: "Deploy the API" } });
    expect(await titles()).toEqual(["Deploy the API"]);

    expect((await rename("Mine now", "mallory")).status).toBe(404);
    expect(
      (await call("/threads/nope", { method: "PATCH", body: JSON.stringify({ title: "x" }) })).status,
    ).toBe(404);
    const tooLong = await rename("x".repeat(201));
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({ error: { code: "BAD_REQUEST" } });
    expect((await rename(42)).status).toBe(400);
    expect(await titles()).toEqual(["Deploy the API"]);

    // the run that the approval continues commits the thread again: the new name stands
    const read = await (await call("/threads/t3")).json();
    const action = read.pendingActions[0] as PublicPendingAction;
    const continued = await (
      await fetch(`${base}/threads/t3/actions/${action.actionId}`, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream", "x-user": "alice" },
        body: JSON.stringify({
          toolCallId: action.toolCallId,
          toolId: action.toolId,
          inputHash: action.inputHash,
          answer: { type: "resume", resume: {} },
        }),
      })
    ).text();
    expect(continued).toContain("Deployed api.");
    await waitForIdle("t3");
    expect(await titles()).toEqual(["Deploy the API"]);

    expect((await rename("")).status).toBe(200);
    expect(await titles()).toEqual([undefined]);

    expect((await call("/threads/t3", { method: "DELETE", user: "mallory" })).status).toBe(404);
    expect(await (await call("/threads/t3", { method: "DELETE" })).json()).toEqual({ deleted: true });
    expect(await titles()).toEqual([]);
    expect((await call("/threads/t3")).status).toBe(404);
  });

  it("answers bad input with typed 4xx errors", async () => {
    const badJson = await call("/chat", { method: "POST", body: "{not json" });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ error: { code: "BAD_REQUEST" } });
    const wrongShape = await call("/chat", { method: "POST", body: JSON.stringify({ messages: [] }) });
    expect(wrongShape.status).toBe(400);
    expect((await call("/threads/nope")).status).toBe(404);
    expect((await call("/nowhere")).status).toBe(404);
    expect((await call("/threads", { method: "PUT" })).status).toBe(405);
    const forged = await call("/threads/nope/actions/x", {
      method: "POST",
      body: JSON.stringify({
        toolCallId: "c",
        toolId: "deploy",
        inputHash: "h",
        answer: { type: "resume", resume: {} },
      }),
    });
    expect(forged.status).toBe(404);
  });

  it("replays a run in progress to a late reader and stops it through the stop route", async () => {
    const send = await call("/chat", {
      method: "POST",
      body: JSON.stringify({
        id: "t3",
        messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "wait" }] }],
        agentId: "waiter",
      }),
    });
    const runId = send.headers.get("x-pai-run-id");
    await waiting;
    const late = await call("/chat/t3/stream");
    expect(late.status).toBe(200);
    expect(late.headers.get("x-pai-run-id")).toBe(runId);
    const stop = await call(`/runs/${runId}/stop`, { method: "POST" });
    expect(await stop.json()).toMatchObject({ runId, stopped: true });
    const [original, replay] = await Promise.all([readMessage(send), readMessage(late)]);
    expect(replay.chunks).toEqual(original.chunks);
    await waitForIdle("t3");
    const thread = await (await call("/threads/t3")).json();
    expect(thread.runs.map((run: { status: string }) => run.status)).toEqual(["cancelled"]);
    expect((await call("/chat/t3/stream")).status).toBe(204);
    expect((await (await call("/threads")).json()).threads).toEqual([
      expect.objectContaining({ id: "t3", lastRunStatus: "cancelled", lastAnswer: null }),
    ]);
  });
});

async function waitForIdle(threadId: string) {
  for (let i = 0; i < 100 && runtime.activeRun(threadId); i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
}

describe("HTTP interface over a store slow to give a thread up", () => {
  it("ends a reply's stream once the thread is free: the next message, sent at once, is never refused as busy", async () => {
    const memory = createMemoryThreadStore();
    const store = {
      ...memory,
      releaseThreadLease: async (threadId: string, runId: string) => {
        await new Promise((resolve) => setTimeout(resolve, 200));
        await memory.releaseThreadLease(threadId, runId);
      },
    };
    const own = createAgentRuntime({
      pai: createPai({ agents: { chat: defineAgent({ tools: {} }) } }),
      store,
      model: createScriptedModel({ steps: [], fallback: { text: "ok" } }),
    });
    const ownServer = createServer(
      toNodeListener(createPaiHandler({ runtime: own, authenticate: () => ({ userId: "alice" }) })),
    );
    await new Promise<void>((resolve) => ownServer.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(ownServer.address() as AddressInfo).port}/api/chat`;
    try {
      for (let n = 1; n <= 3; n++) {
        const response = await fetch(url, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            id: "t9",
            messages: [{ id: `m${n}`, role: "user", parts: [{ type: "text", text: `message ${n}` }] }],
          }),
        });
        expect(response.status, `message ${n}`).toBe(200);
        await response.text();
      }
    } finally {
      await own.close();
      await new Promise<void>((resolve) => ownServer.close(() => resolve()));
    }
  });
});
