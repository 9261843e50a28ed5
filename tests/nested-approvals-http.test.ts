import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
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
import type { UIMessage } from "ai";
import { afterEach, beforeEach, expect, it } from "vitest";
import { z } from "zod";

const approveRelease = defineTool({
  id: "approveRelease",
  description: "Ask a person to approve a release",
  inputSchema: z.object({ version: z.string() }),
  resumeSchema: z.object({ by: z.string() }),
  execute: (ctx) =>
    ctx.entry.type === "resume"
      ? { approvedBy: ctx.entry.resume.by }
      : ctx.suspend({ question: `Release ${ctx.input.version}?` }),
});
const builds: string[] = [];
const build = defineTool({
  id: "build",
  description: "Build a version",
  inputSchema: z.object({ version: z.string() }),
  execute: (ctx) => {
    builds.push(ctx.input.version);
    return { artifact: `app-${ctx.input.version}.tgz` };
  },
});
const release = defineTool({
  id: "release",
  description: "Build, approve and release",
  inputSchema: z.object({ version: z.string() }),
  tools: { build, approveRelease },
  execute: async (ctx) => {
    const { artifact } = await ctx.tools.build({ version: ctx.input.version });
    const { approvedBy } = await ctx.tools.approveRelease({ version: ctx.input.version });
    return { artifact, approvedBy };
  },
});

let server: Server;
let base: string;
let close: () => Promise<void>;

beforeEach(async () => {
  builds.length = 0;
  const model = createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "release", input: { version: "2.1" }, toolCallId: "c1" }] },
      { text: "Released." },
    ],
  });
  const runtime = createAgentRuntime({
    pai: createPai({
      agents: { ops: defineAgent({ identity: z.object({ userId: z.string() }), tools: { release } }) },
    }),
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
  close = async () => {
    await runtime.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
});

afterEach(() => close());

function call(path: string, init: RequestInit & { user?: string } = {}) {
  const { user = "alice", ...rest } = init;
  return fetch(`${base}${path}`, {
    ...rest,
    headers: { "content-type": "application/json", ...(user ? { "x-user": user } : {}) },
  });
}

it("answers a nested approval through the same route and binding as a top-level one", async () => {
  const send = await call("/chat", {
    method: "POST",
    body: JSON.stringify({
      id: "t1",
      messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "release 2.1" }] }],
    }),
  });
  await send.text();
  const thread = await (await call("/threads/t1")).json();
  expect(thread.pendingActions).toHaveLength(1);
  const action = thread.pendingActions[0] as PublicPendingAction;
  expect(action).toMatchObject({
    toolCallId: "c1",
    toolId: "release",
    path: ["release", "approveRelease"],
    payload: { question: "Release 2.1?" },
    inner: { toolId: "approveRelease", input: { version: "2.1" } },
  });
  const body = (answer: unknown, overrides: Partial<PublicPendingAction> = {}) =>
    JSON.stringify({
      toolCallId: overrides.toolCallId ?? action.toolCallId,
      toolId: overrides.toolId ?? action.toolId,
      inputHash: overrides.inputHash ?? action.inputHash,
      answer,
    });

  const stale = await call(`/threads/t1/actions/${action.actionId}`, {
    method: "POST",
    body: body({ type: "resume", resume: { by: "ana" } }, { toolId: "approveRelease" }),
  });
  expect(stale.status).toBe(409);
  const invalid = await call(`/threads/t1/actions/${action.actionId}`, {
    method: "POST",
    body: body({ type: "resume", resume: { by: 1 } }),
  });
  expect(invalid.status).toBe(400);
  const stranger = await call(`/threads/t1/actions/${action.actionId}`, {
    method: "POST",
    user: "mallory",
    body: body({ type: "resume", resume: { by: "mallory" } }),
  });
  expect(stranger.status).toBe(404);

  const answered = await call(`/threads/t1/actions/${action.actionId}`, {
    method: "POST",
    body: body({ type: "resume", resume: { by: "ana" } }),
  });
  expect(answered.status).toBe(200);
  expect(await answered.json()).toMatchObject({ status: "accepted" });
  let parts: UIMessage["parts"] = [];
  for (let attempt = 0; attempt < 100; attempt++) {
    const after = await (await call("/threads/t1")).json();
    parts = (after.messages as UIMessage[]).flatMap((message) => message.parts);
    if (parts.some((part) => part.type === "text" && part.text === "Released.")) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(parts.find((part) => part.type === "tool-release")).toMatchObject({
    state: "output-available",
    output: { artifact: "app-2.1.tgz", approvedBy: "ana" },
  });
  expect(builds).toEqual(["2.1"]);
});
