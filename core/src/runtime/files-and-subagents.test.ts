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

it("suspends a subagent's own thread, shows its wait on the parent thread, and continues both with one answer", async () => {
  const published: string[] = [];
  let delegations = 0;
  const publish = defineTool({
    id: "publish",
    description: "Publish a draft after an editor approves",
    inputSchema: z.object({ title: z.string() }),
    resumeSchema: z.object({ editor: z.string() }),
    execute: (ctx) => {
      if (ctx.entry.type === "initial") return ctx.suspend({ question: `Publish "${ctx.input.title}"?` });
      published.push(ctx.input.title);
      return { published: ctx.input.title, by: ctx.entry.resume.editor };
    },
  });
  const delegate = defineTool({
    id: "delegate",
    description: "Ask the writer agent",
    inputSchema: z.object({ topic: z.string() }),
    execute: async (ctx) => {
      delegations += 1;
      const child = await ctx.agents.run({ agentId: "writer", prompt: `write about ${ctx.input.topic}` });
      return { text: child.text, status: child.status, threadId: child.threadId };
    },
  });
  let leadCalls = 0;
  const lead = createScriptedModel({
    steps: [],
    fallback: (call) =>
      call.prompt.at(-1)?.role === "tool" || JSON.stringify(call.prompt.at(-1)).includes("stop")
        ? { text: "lead done" }
        : {
            toolCalls: [{ toolName: "delegate", input: { topic: "tides" }, toolCallId: `c${++leadCalls}` }],
          },
  });
  const writerModel = createScriptedModel({
    steps: [],
    fallback: (call) => {
      const result = call.prompt.flatMap((message) => (message.role === "tool" ? message.content : []))[0];
      return result
        ? { text: `writer: ${JSON.stringify((result as { output: unknown }).output)}` }
        : { toolCalls: [{ toolName: "publish", input: { title: "Tides" }, toolCallId: "w1" }] };
    },
  });
  const pai = createPai({
    agents: {
      lead: defineAgent({ model: lead, tools: { delegate } }),
      writer: defineAgent({ model: writerModel, tools: { publish } }),
    },
  });
  const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore() });
  const identity = { userId: "u" };
  const first = await (await runtime.run({ agentId: "lead", identity, message: "go" })).done;
  expect(first.status).toBe("suspended");
  const [action, ...others] = await runtime.listPendingActions({ threadId: first.threadId, identity });
  expect(others).toEqual([]);
  expect(action).toMatchObject({
    toolCallId: "c1",
    toolId: "delegate",
    path: ["delegate", "writer", "publish"],
    payload: { question: 'Publish "Tides"?' },
    inner: { toolId: "publish", input: { title: "Tides" }, subagent: { agentId: "writer" } },
  });
  const threads = await runtime.listThreads({ identity });
  const writerThread = threads.find((thread) => thread.agentId === "writer")!;
  expect(action?.inner?.subagent?.threadId).toBe(writerThread.id);
  const writerActions = await runtime.listPendingActions({ threadId: writerThread.id, identity });
  expect(writerActions).toMatchObject([{ toolName: "publish", path: ["publish"] }]);
  expect((await runtime.getThread(writerThread.id))?.runs.map((run) => run.status)).toEqual(["suspended"]);

  const refused = await runtime
    .respond({ ...action!, identity, answer: { type: "resume", resume: { editor: 42 } } })
    .catch((error: unknown) => error);
  expect((refused as { code?: string }).code).toBe("INVALID_INPUT");

  const answered = await runtime.respond({
    ...action!,
    identity,
    answer: { type: "resume", resume: { editor: "eve" } },
  });
  const done = answered.status === "accepted" ? await answered.run?.done : undefined;
  expect(done?.status).toBe("completed");
  const part = done?.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-delegate") as {
    output: { text: string; status: string; threadId: string };
  };
  expect(part.output).toEqual({
    text: 'writer: {"type":"json","value":{"published":"Tides","by":"eve"}}',
    status: "completed",
    threadId: writerThread.id,
  });
  expect(published).toEqual(["Tides"]);
  expect(delegations).toBe(2);
  expect((await runtime.listThreads({ identity })).map((thread) => thread.agentId).sort()).toEqual([
    "lead",
    "writer",
  ]);
  expect((await runtime.getThread(writerThread.id))?.runs.map((run) => run.status)).toEqual([
    "suspended",
    "completed",
  ]);
  expect(await runtime.listPendingActions({ threadId: writerThread.id, identity })).toEqual([]);

  // A new message on the lead thread while the writer waits again cancels both waits.
  const again = await (
    await runtime.run({ agentId: "lead", identity, threadId: first.threadId, message: "more" })
  ).done;
  expect(again.status).toBe("suspended");
  const [second] = await runtime.listPendingActions({ threadId: first.threadId, identity });
  const secondWriter = second!.inner!.subagent!.threadId;
  const [secondWriterAction] = await runtime.listPendingActions({ threadId: secondWriter, identity });
  await (await runtime.run({ agentId: "lead", identity, threadId: first.threadId, message: "stop" })).done;
  expect(await runtime.listPendingActions({ threadId: first.threadId, identity })).toEqual([]);
  expect(await runtime.listPendingActions({ threadId: secondWriter, identity })).toEqual([]);
  expect((await runtime.store.getPendingAction(secondWriterAction!.actionId))?.status).toBe("cancelled");
  expect(published).toEqual(["Tides"]);
});
