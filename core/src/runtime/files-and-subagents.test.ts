import type { UIMessage } from "ai";
import { expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

it("lets a tool read the files attached to its thread", async () => {
  const readAttachment = defineTool({
    id: "readAttachment",
    description: "Read the first attached file",
    inputSchema: z.object({}),
    execute: async (ctx) => {
      const [file] = await ctx.files.list();
      const bytes = file ? await ctx.files.read(file.id) : null;
      return {
        name: file?.name,
        mediaType: file?.mediaType,
        text: bytes ? new TextDecoder().decode(bytes) : null,
        missing: await ctx.files.read("nope:0"),
      };
    },
  });
  const model = createScriptedModel({
    steps: [{ toolCalls: [{ toolName: "readAttachment", input: {}, toolCallId: "c1" }] }, { text: "" }],
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { a: defineAgent({ tools: { readAttachment } }) } }),
    store: createMemoryThreadStore(),
    model,
  });
  const message: UIMessage = {
    id: "m1",
    role: "user",
    parts: [
      { type: "text", text: "read this" },
      {
        type: "file",
        mediaType: "text/plain",
        filename: "notes.txt",
        url: `data:text/plain;base64,${Buffer.from("hello file").toString("base64")}`,
      },
    ],
  };
  const result = await (await runtime.run({ agentId: "a", message })).done;
  const part = result.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-readAttachment") as {
    output: unknown;
  };
  expect(part.output).toEqual({
    name: "notes.txt",
    mediaType: "text/plain",
    text: "hello file",
    missing: null,
  });
});

it("runs a registered agent as a subagent on a thread of its own", async () => {
  const summarize = defineTool({
    id: "delegate",
    description: "Ask the writer agent",
    inputSchema: z.object({ topic: z.string() }),
    execute: async (ctx) => {
      const child = await ctx.agents.run({ agentId: "writer", prompt: `write about ${ctx.input.topic}` });
      return { text: child.text, status: child.status, sameThread: child.threadId === ctx.thread.threadId };
    },
  });
  const lead = createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "delegate", input: { topic: "tides" }, toolCallId: "c1" }] },
      { text: "done" },
    ],
  });
  const writerModel = createScriptedModel({
    steps: [(call) => ({ text: `draft for: ${JSON.stringify(call.prompt.at(-1)?.content)}` })],
  });
  const pai = createPai({
    agents: {
      lead: defineAgent({ model: lead, tools: { delegate: summarize } }),
      writer: defineAgent({ model: writerModel }),
    },
  });
  const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore() });
  const result = await (await runtime.run({ agentId: "lead", identity: { userId: "u" }, message: "go" }))
    .done;
  const part = result.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-delegate") as {
    output: { text: string; status: string; sameThread: boolean };
  };
  expect(part.output.status).toBe("completed");
  expect(part.output.text).toContain("write about tides");
  expect(part.output.sameThread).toBe(false);
  expect(
    (await runtime.listThreads({ identity: { userId: "u" } })).map((thread) => thread.agentId).sort(),
  ).toEqual(["lead", "writer"]);
});
