import type { LanguageModelV4Prompt } from "@ai-sdk/provider";
import { createAgentRuntime, createMemoryThreadStore, createPai, defineAgent, defineTool } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { dockerSandbox } from "@pai/sandbox";
import { defineCodeModeTool } from "@pai/sandbox/code-mode";
import { afterAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { dockerOptedOut, poolContainers, sandboxImage, uniquePoolId } from "./docker-helpers.ts";

const add = defineTool({
  id: "add",
  description: "Add two numbers",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  outputSchema: z.object({ sum: z.number() }),
  execute: (ctx) => ({ sum: ctx.input.a + ctx.input.b }),
});
const hostCalls: string[] = [];
const lookupUser = defineTool({
  id: "lookupUser",
  description: "Find a user by id",
  inputSchema: z.object({ id: z.string() }),
  outputSchema: z.object({ name: z.string() }),
  execute: (ctx) => {
    hostCalls.push(ctx.input.id);
    return { name: `User ${ctx.input.id}` };
  },
});

const hostCharges: number[] = [];
const charge = defineTool({
  id: "charge",
  description: "Charge a card (a side effect on the host)",
  inputSchema: z.object({ cents: z.number() }),
  execute: (ctx) => {
    hostCharges.push(ctx.input.cents);
    return { charged: ctx.input.cents };
  },
});
const approve = defineTool({
  id: "approve",
  description: "Ask a person to approve",
  inputSchema: z.object({ what: z.string() }),
  outputSchema: z.object({ by: z.string() }),
  resumeSchema: z.object({ by: z.string() }),
  execute: (ctx) =>
    ctx.entry.type === "resume"
      ? { by: ctx.entry.resume.by }
      : ctx.suspend({ question: `Approve ${ctx.input.what}?` }),
});

const code = defineCodeModeTool({ tools: { add, lookupUser, charge, approve } });
const poolId = uniquePoolId("code-mode");

function toolResult(prompt: LanguageModelV4Prompt | undefined): { type: string; value: unknown } | undefined {
  for (const message of prompt ?? [])
    if (message.role === "tool")
      return (message.content[0] as { output: { type: string; value: unknown } }).output;
  return undefined;
}

/** A runtime on one thread whose model writes `program` once, then ends with a text step. */
function runtimeFor(program: string) {
  const model = createScriptedModel({
    steps: [],
    fallback: (call) =>
      call.prompt.some((message) => message.role === "tool")
        ? { text: "" }
        : { toolCalls: [{ toolName: "code", input: { code: program }, toolCallId: "c1" }] },
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { coder: defineAgent({ tools: { code } }) } }),
    store: createMemoryThreadStore(),
    model,
    capabilities: { sandbox: dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: 2 } }) },
  });
  return { runtime, model };
}

async function play(program: string) {
  const model = createScriptedModel({
    steps: [{ toolCalls: [{ toolName: "code", input: { code: program } }] }, { text: "" }],
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { coder: defineAgent({ tools: { code } }) } }),
    store: createMemoryThreadStore(),
    model,
    capabilities: { sandbox: dockerSandbox({ image: sandboxImage, poolId, pool: { min: 1, max: 2 } }) },
  });
  try {
    const result = await (await runtime.run({ agentId: "coder", message: "go" })).done;
    return { result, seen: toolResult(model.doStreamCalls[1]?.prompt) };
  } finally {
    await runtime.close();
  }
}

describe.skipIf(dockerOptedOut)("code mode", () => {
  afterAll(async () => {
    expect(await poolContainers(poolId)).toEqual([]);
  });

  it("runs the model's program in the sandbox, answering its tool calls on the host", async () => {
    const { seen, result } = await play(`
      const total = await tools.add({ a: 2, b: 40 });
      const users = await Promise.all(["u1", "u2"].map((id) => tools.lookupUser({ id })));
      console.log("looked up", users.length, "users");
      const bad = await tools.add({ a: "two" }).catch((error) => error.message);
      return { sum: total.sum, names: users.map((user) => user.name), bad, where: process.cwd(), uid: process.getuid() };
    `);
    expect(result.status).toBe("completed");
    expect(seen?.type).toBe("json");
    const value = seen?.value as {
      result: Record<string, unknown>;
      logs: string;
      toolCalls: Array<{ tool: string; ok: boolean }>;
    };
    expect(value.result).toMatchObject({
      sum: 42,
      names: ["User u1", "User u2"],
      where: "/workspace",
      uid: 1000,
    });
    expect(String(value.result.bad)).toContain('nested tool "code.add"');
    expect(value.logs).toContain("looked up 2 users");
    expect(value.toolCalls).toEqual([
      { tool: "add", ok: true },
      { tool: "lookupUser", ok: true },
      { tool: "lookupUser", ok: true },
      { tool: "add", ok: false },
    ]);
    expect(hostCalls).toEqual(["u1", "u2"]);
    const logParts = result.messages.flatMap((m) => m.parts).filter((p) => p.type === "data-logs");
    expect(logParts.length).toBeGreaterThan(0);
  });

  it("stops a program at a tool that waits for a person, and runs it again once answered, its earlier calls answered from the journal", async () => {
    hostCharges.length = 0;
    const { runtime, model } = runtimeFor(`
      const total = await tools.add({ a: 2, b: 40 });
      await tools.charge({ cents: total.sum });
      console.log("asking for approval");
      const approval = await tools.approve({ what: "a refund of " + total.sum });
      return { sum: total.sum, by: approval.by };
    `);
    try {
      const first = await (await runtime.run({ agentId: "coder", message: "go" })).done;
      expect(first.status).toBe("suspended");
      const [action, ...others] = await runtime.listPendingActions({ threadId: first.threadId });
      expect(others).toEqual([]);
      expect(action).toMatchObject({
        toolName: "code",
        path: ["code", "approve"],
        payload: { question: "Approve a refund of 42?" },
        inner: { toolId: "approve", input: { what: "a refund of 42" } },
      });
      expect(hostCharges).toEqual([42]);

      const answered = await runtime.respond({
        ...action!,
        answer: { type: "resume", resume: { by: "ana" } },
      });
      const done = answered.status === "accepted" ? await answered.run?.done : undefined;
      expect(done?.status).toBe("completed");
      const seen = toolResult(model.doStreamCalls[1]?.prompt);
      expect(seen?.type).toBe("json");
      expect(seen?.value).toMatchObject({
        result: { sum: 42, by: "ana" },
        toolCalls: [
          { tool: "add", ok: true },
          { tool: "charge", ok: true },
          { tool: "approve", ok: true },
        ],
      });
      expect(hostCharges).toEqual([42]);
    } finally {
      await runtime.close();
    }
  });

  it("fails a program that, run again, calls other tools than its journal holds", async () => {
    const { runtime, model } = runtimeFor(`
      const fs = require("node:fs");
      const firstRun = !fs.existsSync("ran-before");
      fs.writeFileSync("ran-before", "");
      await tools.add(firstRun ? { a: 1, b: 1 } : { a: 2, b: 2 });
      return await tools.approve({ what: "it" });
    `);
    try {
      const first = await (await runtime.run({ agentId: "coder", message: "go" })).done;
      const [action] = await runtime.listPendingActions({ threadId: first.threadId });
      const answered = await runtime.respond({
        ...action!,
        answer: { type: "resume", resume: { by: "ana" } },
      });
      const done = answered.status === "accepted" ? await answered.run?.done : undefined;
      expect(done?.status).toBe("completed");
      const seen = toolResult(model.doStreamCalls[1]?.prompt);
      expect(seen?.type).toBe("error-text");
      expect(String(seen?.value)).toContain('call 0 (code › add) is "add" with other input');
      expect(await runtime.listPendingActions({ threadId: first.threadId })).toEqual([]);
    } finally {
      await runtime.close();
    }
  });

  it("tells the model when its program throws or names an unknown tool", async () => {
    const thrown = await play(`throw new Error("no such file: report.csv");`);
    expect(thrown.seen?.type).toBe("error-text");
    expect(String(thrown.seen?.value)).toContain("no such file: report.csv");
    const unknown = await play(`return await tools.deleteEverything({});`);
    expect(String(unknown.seen?.value)).toContain('there is no tool "deleteEverything"');
  });
});
