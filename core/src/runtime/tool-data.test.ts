import type { UIMessageChunk } from "ai";
import { expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

const build = defineTool({
  id: "build",
  description: "Build and report progress",
  inputSchema: z.object({ target: z.string() }),
  data: { progress: z.object({ percent: z.number() }), log: z.string() },
  execute: async (ctx) => {
    const earlier = await ctx.data.list("progress");
    await ctx.data.write("progress", { percent: 50 });
    await ctx.data.write("log", `building ${ctx.input.target}`);
    await ctx.data.write("progress", { percent: 100 });
    return { earlierWrites: earlier.map((entry) => entry.data.percent) };
  },
});

it("streams typed tool data as data-* parts, stores it on the thread, and lists earlier writes", async () => {
  const model = createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "build", input: { target: "a" }, toolCallId: "c1" }] },
      { text: "built a" },
      { toolCalls: [{ toolName: "build", input: { target: "b" }, toolCallId: "c2" }] },
      { text: "built b" },
    ],
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { ci: defineAgent({ tools: { build } }) } }),
    store: createMemoryThreadStore(),
    model,
  });
  const first = await runtime.run({ agentId: "ci", message: "build a" });
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of first.stream) chunks.push(chunk);
  await first.done;

  const dataChunks = chunks.filter((chunk) => chunk.type.startsWith("data-")) as Array<{
    type: string;
    data: { value: unknown; toolCallId: string };
  }>;
  expect(dataChunks.map((chunk) => [chunk.type, chunk.data.value, chunk.data.toolCallId])).toEqual([
    ["data-progress", { percent: 50 }, "c1"],
    ["data-log", "building a", "c1"],
    ["data-progress", { percent: 100 }, "c1"],
  ]);

  const second = await runtime.run({ agentId: "ci", threadId: first.threadId, message: "build b" });
  const result = await second.done;
  const part = result.messages
    .flatMap((m) => m.parts)
    .find((p) => p.type === "tool-build" && (p as { toolCallId: string }).toolCallId === "c2") as {
    output: unknown;
  };
  expect(part.output).toEqual({ earlierWrites: [50, 100] });

  const snapshot = await runtime.getThread(first.threadId);
  expect(snapshot?.toolData.map((record) => [record.toolCallId, record.channel, record.data])).toEqual([
    ["c1", "progress", { percent: 50 }],
    ["c1", "log", "building a"],
    ["c1", "progress", { percent: 100 }],
    ["c2", "progress", { percent: 50 }],
    ["c2", "log", "building b"],
    ["c2", "progress", { percent: 100 }],
  ]);
  const storedDataParts = snapshot?.messages
    .flatMap((m) => m.parts)
    .filter((p) => p.type.startsWith("data-"));
  expect(storedDataParts).toHaveLength(6);
});

it("rejects a write that does not match the channel's schema", async () => {
  const bad = defineTool({
    id: "bad",
    description: "writes junk",
    inputSchema: z.object({}),
    data: { progress: z.object({ percent: z.number() }) },
    execute: async (ctx) => {
      await ctx.data.write("progress", { percent: "lots" } as unknown as { percent: number });
      return {};
    },
  });
  const model = createScriptedModel({
    steps: [{ toolCalls: [{ toolName: "bad", input: {}, toolCallId: "c1" }] }, { text: "" }],
  });
  const errors: unknown[] = [];
  const agent = defineAgent({ tools: { bad }, onRuntimeError: (error) => void errors.push(error) });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { agent } }),
    store: createMemoryThreadStore(),
    model,
  });
  const run = await runtime.run({ agentId: "agent", message: "go" });
  await run.done;
  expect(errors).toHaveLength(1);
  expect(await runtime.store.listToolData({ threadId: run.threadId })).toEqual([]);
});
