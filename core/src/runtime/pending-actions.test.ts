import type { LanguageModelV4Prompt } from "@ai-sdk/provider";
import { readUIMessageStream, type UIMessage, type UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { PublicPendingAction } from "../actions/public-action.ts";
import { toolEndOf } from "../actions/tool-end.ts";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createScriptedModel, type ScriptedStepSource } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import type { ToolExecuteContext } from "../tools/tool-context.ts";
import type { AgentRun } from "./agent-run.ts";
import { type AgentRuntime, createAgentRuntime } from "./create-agent-runtime.ts";

const transfer = defineTool({
  id: "transfer",
  description: "Transfer money, after a person approves",
  inputSchema: z.object({ amount: z.number() }),
  outputSchema: z.object({ transferred: z.number(), approvedBy: z.array(z.string()) }),
  suspendSchema: z.object({ question: z.string() }),
  resumeSchema: z.object({ approvedBy: z.string() }),
  execute: (ctx) => {
    const seen = (ctx as ToolExecuteContext).suspendHistory;
    if (ctx.entry.type === "initial")
      return ctx.suspend({ question: `Transfer ${ctx.input.amount}?` }, { name: "manager" });
    if (ctx.entry.name === "manager" && ctx.input.amount > 1000) {
      return ctx.suspend({ question: `Second approval for ${ctx.input.amount}?` }, { name: "director" });
    }
    const approvers = [...seen.map(() => "x")].length;
    return {
      transferred: ctx.input.amount,
      approvedBy: Array.from(
        { length: approvers },
        (_, i) =>
          `${i}:${ctx.entry.type === "resume" ? (ctx.entry.resume as { approvedBy: string }).approvedBy : ""}`,
      ),
    };
  },
});

const pickColor = defineTool({
  id: "pickColor",
  description: "Ask the user to pick a color in the browser",
  inputSchema: z.object({ options: z.array(z.string()) }),
  outputSchema: z.object({ color: z.string() }),
});

function toolResultIn(prompt: LanguageModelV4Prompt | undefined, toolCallId: string): unknown {
  for (const message of prompt ?? []) {
    if (message.role !== "tool") continue;
    for (const part of message.content)
      if (part.type === "tool-result" && part.toolCallId === toolCallId) return part.output;
  }
  return undefined;
}

function partOf(messages: UIMessage[], toolCallId: string) {
  return messages
    .flatMap((m) => m.parts)
    .find((p) => (p as { toolCallId?: string }).toolCallId === toolCallId) as
    | { state: string; output?: unknown; errorText?: string }
    | undefined;
}

function streamOf(chunks: UIMessageChunk[]): ReadableStream<UIMessageChunk> {
  return new ReadableStream({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(chunk);
      controller.close();
    },
  });
}

function setup(
  steps: ScriptedStepSource[],
  options: {
    enabled?: () => boolean;
    onOutput?: (event: { output: unknown }) => void;
    afterToolResult?: (event: any) => any;
  } = {},
) {
  const model = createScriptedModel({ steps });
  const outputs: unknown[] = [];
  const agent = defineAgent({
    identity: z.object({ userId: z.string() }),
    tools: {
      transfer: {
        tool: transfer,
        ...(options.enabled ? { enabled: options.enabled } : {}),
        onOutput: ({ output }) => {
          outputs.push(output);
          options.onOutput?.({ output });
        },
      },
      pickColor: { tool: pickColor, onOutput: ({ output }) => void outputs.push(output) },
    },
    ...(options.afterToolResult ? { lifecycle: { afterToolResult: options.afterToolResult } } : {}),
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { bank: agent } }),
    store: createMemoryThreadStore(),
    model,
  });
  return { runtime, model, outputs };
}

const alice = { userId: "alice" };

async function suspendedRun(runtime: AgentRuntime, message = "pay") {
  const run = await runtime.run({ agentId: "bank", identity: alice, message });
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of run.stream) chunks.push(chunk);
  const result = await run.done;
  const [action] = await runtime.listPendingActions({ threadId: run.threadId, identity: alice });
  return { run, result, chunks, action: action as PublicPendingAction };
}

function answerFor(action: PublicPendingAction) {
  return {
    threadId: action.threadId,
    actionId: action.actionId,
    toolCallId: action.toolCallId,
    toolId: action.toolId,
    inputHash: action.inputHash,
    identity: alice,
  };
}

describe("suspend and resume", () => {
  it("ends the step with a durable pending action and resumes execute with the answer", async () => {
    const { runtime, model, outputs } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 50 }, toolCallId: "c1" }] },
      { text: "Transferred." },
    ]);
    const { run, result, chunks, action } = await suspendedRun(runtime);

    expect(result.status).toBe("suspended");
    expect(model.doStreamCalls).toHaveLength(1);
    expect(action).toMatchObject({
      kind: "suspend",
      name: "manager",
      payload: { question: "Transfer 50?" },
      toolName: "transfer",
      toolCallId: "c1",
      status: "pending",
    });
    // stored and streamed as the AI SDK's native approval, its id the action's
    expect(partOf(result.messages, "c1")).toMatchObject({
      state: "approval-requested",
      approval: { id: action.actionId },
    });
    expect(chunks.some((chunk) => chunk.type === "tool-output-available")).toBe(false);
    const types = chunks.map((chunk) => chunk.type);
    expect(types.indexOf("tool-approval-request")).toBeGreaterThan(types.indexOf("tool-input-available"));
    expect(chunks.find((chunk) => chunk.type === "tool-approval-request")).toEqual({
      type: "tool-approval-request",
      approvalId: action.actionId,
      toolCallId: "c1",
    });
    expect(chunks.find((chunk) => chunk.type === "data-pai-action")).toMatchObject({
      data: { actionId: action.actionId },
    });
    expect((await runtime.store.getRun(run.runId))?.status).toBe("suspended");
    expect(outputs).toEqual([]);

    const answered = await runtime.respond({
      ...answerFor(action),
      answer: { type: "resume", resume: { approvedBy: "bob" } },
    });
    expect(answered.status).toBe("accepted");
    const continued = await (
      answered as { run: { done: Promise<{ status: string; messages: UIMessage[]; text: string }> } }
    ).run.done;
    expect(continued.status).toBe("completed");
    expect(continued.text).toBe("Transferred.");
    expect(toolResultIn(model.doStreamCalls[1]?.prompt, "c1")).toEqual({
      type: "json",
      value: { transferred: 50, approvedBy: ["0:bob"] },
    });
    expect(partOf(continued.messages, "c1")).toMatchObject({ state: "output-available" });
    expect(outputs).toEqual([{ transferred: 50, approvedBy: ["0:bob"] }]);
    model.assertComplete();
  });

  it("supports a tool that suspends twice, naming each point, with suspendHistory holding earlier payloads", async () => {
    const { runtime, model } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5000 }, toolCallId: "c1" }] },
      { text: "ok" },
    ]);
    const { action: first } = await suspendedRun(runtime);
    const afterFirst = await runtime.respond({
      ...answerFor(first),
      answer: { type: "resume", resume: { approvedBy: "manager-bob" } },
    });
    const firstRun = (afterFirst as { run: AgentRun }).run;
    const continuationChunks: UIMessageChunk[] = [];
    for await (const chunk of firstRun.stream) continuationChunks.push(chunk);
    const firstContinuation = await firstRun.done;
    expect(firstContinuation.status).toBe("suspended");
    const [second] = await runtime.listPendingActions({ threadId: first.threadId, identity: alice });
    expect(second).toMatchObject({ name: "director", payload: { question: "Second approval for 5000?" } });
    // the call is asked again, in the message the client already has, under the new action's id
    expect(continuationChunks.filter((chunk) => chunk.type === "tool-approval-request")).toEqual([
      { type: "tool-approval-request", approvalId: second!.actionId, toolCallId: "c1" },
    ]);
    expect(partOf(firstContinuation.messages, "c1")).toMatchObject({
      state: "approval-requested",
      approval: { id: second!.actionId },
    });
    const afterSecond = await runtime.respond({
      ...answerFor(second!),
      answer: { type: "resume", resume: { approvedBy: "director-eve" } },
    });
    const done = await (afterSecond as { run: { done: Promise<{ status: string }> } }).run.done;
    expect(done.status).toBe("completed");
    expect(toolResultIn(model.doStreamCalls[1]?.prompt, "c1")).toEqual({
      type: "json",
      value: { transferred: 5000, approvedBy: ["0:director-eve", "1:director-eve"] },
    });
  });

  it("validates resume payloads against resumeSchema and keeps the action pending", async () => {
    const { runtime } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
      { text: "" },
    ]);
    const { action } = await suspendedRun(runtime);
    await expect(
      runtime.respond({ ...answerFor(action), answer: { type: "resume", resume: { approvedBy: 7 } } }),
    ).rejects.toSatisfy((e) => PaiError.hasCode(e, "INVALID_INPUT"));
    expect(await runtime.listPendingActions({ threadId: action.threadId })).toHaveLength(1);
  });

  it("refuses a stale or forged answer and treats a second answer to a settled action as a no-op", async () => {
    const { runtime, outputs } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
      { text: "" },
    ]);
    const { action } = await suspendedRun(runtime);
    const resume = { type: "resume" as const, resume: { approvedBy: "bob" } };
    await expect(
      runtime.respond({ ...answerFor(action), inputHash: "0".repeat(32), answer: resume }),
    ).rejects.toSatisfy((e) => PaiError.hasCode(e, "STALE_ANSWER"));
    await expect(
      runtime.respond({ ...answerFor(action), toolCallId: "other", answer: resume }),
    ).rejects.toSatisfy((e) => PaiError.hasCode(e, "STALE_ANSWER"));
    await expect(
      runtime.respond({ ...answerFor(action), identity: { userId: "mallory" }, answer: resume }),
    ).rejects.toSatisfy((e) => PaiError.hasCode(e, "NOT_FOUND"));
    const first = await runtime.respond({ ...answerFor(action), answer: resume });
    await (first as { run: { done: Promise<unknown> } }).run.done;
    const second = await runtime.respond({ ...answerFor(action), answer: resume });
    expect(second).toMatchObject({ status: "already-settled", action: { status: "resumed" } });
    expect(outputs).toHaveLength(1);
  });

  it("gives the model an execution-denied result for a denial, and never runs onOutput", async () => {
    const { runtime, model, outputs } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
      { text: "Understood." },
    ]);
    const { action } = await suspendedRun(runtime);
    const answered = await runtime.respond({
      ...answerFor(action),
      answer: { type: "deny", reason: "over budget" },
    });
    await (answered as { run: { done: Promise<unknown> } }).run.done;
    expect(toolResultIn(model.doStreamCalls[1]?.prompt, "c1")).toEqual({
      type: "execution-denied",
      reason: "over budget",
    });
    expect(outputs).toEqual([]);
  });

  it("gives the model a synthetic output for a skip and runs onOutput on it", async () => {
    const { runtime, model, outputs } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
      { text: "" },
    ]);
    const { action } = await suspendedRun(runtime);
    const synthetic = { transferred: 0, approvedBy: [] };
    const answered = await runtime.respond({
      ...answerFor(action),
      answer: { type: "skip", output: synthetic },
    });
    await (answered as { run: { done: Promise<unknown> } }).run.done;
    expect(toolResultIn(model.doStreamCalls[1]?.prompt, "c1")).toEqual({ type: "json", value: synthetic });
    expect(outputs).toEqual([synthetic]);
  });

  it("runs onOutput for a failure that afterToolResult turned into an output, and not for a plain failure", async () => {
    const rescued = setup(
      [{ toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] }, { text: "" }],
      {
        afterToolResult: (event: { error?: unknown }) =>
          event.error ? { output: { transferred: -1, approvedBy: [] } } : undefined,
      },
    );
    const { action } = await suspendedRun(rescued.runtime);
    await (
      (await rescued.runtime.respond({
        ...answerFor(action),
        answer: { type: "fail", message: "bank offline" },
      })) as { run: { done: Promise<unknown> } }
    ).run.done;
    expect(rescued.outputs).toEqual([{ transferred: -1, approvedBy: [] }]);

    const plain = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
      { text: "" },
    ]);
    const { action: other } = await suspendedRun(plain.runtime);
    await (
      (await plain.runtime.respond({
        ...answerFor(other),
        answer: { type: "fail", message: "bank offline" },
      })) as { run: { done: Promise<unknown> } }
    ).run.done;
    expect(plain.outputs).toEqual([]);
    expect(toolResultIn(plain.model.doStreamCalls[1]?.prompt, "c1")).toMatchObject({
      value: expect.stringContaining("bank offline"),
    });
  });

  it("rejects success and resume for a tool disabled while pending, but still accepts cancel", async () => {
    let enabled = true;
    const { runtime, model } = setup(
      [
        { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
        { text: "cancelled then" },
      ],
      { enabled: () => enabled },
    );
    const { action } = await suspendedRun(runtime);
    enabled = false;
    await expect(
      runtime.respond({ ...answerFor(action), answer: { type: "resume", resume: { approvedBy: "bob" } } }),
    ).rejects.toSatisfy((e) => PaiError.hasCode(e, "TOOL_DISABLED"));
    expect(await runtime.listPendingActions({ threadId: action.threadId })).toHaveLength(1);
    const cancelled = await runtime.respond({ ...answerFor(action), answer: { type: "cancel" } });
    expect(cancelled.status).toBe("accepted");
    await (cancelled as { run: { done: Promise<unknown> } }).run.done;
    expect(toolResultIn(model.doStreamCalls[1]?.prompt, "c1")).toMatchObject({
      value: expect.stringContaining("cancelled"),
    });
  });

  it("settles pending actions when a new user message arrives, so the model never sees an orphan call", async () => {
    const { runtime, model } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
      { text: "new topic" },
    ]);
    const { run, action } = await suspendedRun(runtime);
    const next = await runtime.run({
      agentId: "bank",
      identity: alice,
      threadId: run.threadId,
      message: "never mind",
    });
    const result = await next.done;
    expect(result.status).toBe("completed");
    expect(await runtime.listPendingActions({ threadId: run.threadId })).toEqual([]);
    expect((await runtime.store.getPendingAction(action.actionId))?.status).toBe("cancelled");
    const prompt = model.doStreamCalls[1]?.prompt;
    expect(toolResultIn(prompt, "c1")).toMatchObject({ value: expect.stringContaining("new message") });
    expect(partOf(result.messages, "c1")?.state).toBe("output-error");
  });
});

describe("answers and a busy thread", () => {
  it("never takes an answer and then refuses it as busy: the thread is reserved before the answer is stored", async () => {
    const model = createScriptedModel({
      steps: [
        { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
        { text: "Transferred." },
      ],
    });
    const memory = createMemoryThreadStore();
    let racer: Promise<unknown> | undefined;
    let runtime!: AgentRuntime;
    let threadId = "";
    // A message for the same thread arrives while the answer is being stored.
    const store = {
      ...memory,
      settlePendingAction: async (...args: Parameters<typeof memory.settlePendingAction>) => {
        const settled = await memory.settlePendingAction(...args);
        racer ??= runtime.run({ agentId: "bank", identity: alice, threadId, message: "hi" }).then(
          () => "started",
          (error: unknown) => error,
        );
        await racer;
        return settled;
      },
    };
    runtime = createAgentRuntime({
      pai: createPai({
        agents: { bank: defineAgent({ identity: z.object({ userId: z.string() }), tools: { transfer } }) },
      }),
      store,
      model,
    });
    const { run, action } = await suspendedRun(runtime);
    threadId = run.threadId;
    const answered = await runtime.respond({
      ...answerFor(action),
      answer: { type: "resume", resume: { approvedBy: "m" } },
    });
    expect(answered.status).toBe("accepted");
    expect(await racer).toSatisfy((error) => PaiError.hasCode(error, "THREAD_BUSY"));
    const result = await (answered as { run: { done: Promise<{ status: string; text: string }> } }).run.done;
    expect(result).toMatchObject({ status: "completed", text: "Transferred." });
  });
});

describe("a new message while an action is pending", () => {
  it("streams the superseded action's new state to clients following the new run, and stores it beside its call", async () => {
    const { runtime } = setup([
      { toolCalls: [{ toolName: "transfer", input: { amount: 5 }, toolCallId: "c1" }] },
      { text: "new topic" },
    ]);
    const { run, action } = await suspendedRun(runtime);
    const next = await runtime.run({
      agentId: "bank",
      identity: alice,
      threadId: run.threadId,
      message: "never mind",
    });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of next.stream) chunks.push(chunk);
    const result = await next.done;

    const actionChunks = chunks.filter((chunk) => chunk.type === "data-pai-action") as Array<{
      id: string;
      data: PublicPendingAction;
    }>;
    expect(actionChunks).toEqual([
      expect.objectContaining({
        id: action.actionId,
        data: expect.objectContaining({ status: "cancelled" }),
      }),
    ]);
    // The call lives in the earlier message: a tool chunk for it would break a client's stream.
    expect(chunks.some((chunk) => "toolCallId" in chunk && chunk.toolCallId === "c1")).toBe(false);
    let replyOnClient: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream: streamOf(chunks), terminateOnError: true }))
      replyOnClient = message;
    expect(replyOnClient?.parts.some((part) => part.type === "text")).toBe(true);

    const stored = await runtime.store.loadMessages(run.threadId);
    const holder = stored.find((message) => partOf([message], "c1"));
    expect(holder?.parts).toContainEqual(
      expect.objectContaining({
        type: "data-pai-action",
        id: action.actionId,
        data: expect.objectContaining({ status: "cancelled" }),
      }),
    );
    expect(result.messages).toEqual(stored);
  });
});

describe("client-executed tools", () => {
  it("waits for the client's output, validates it against outputSchema, then continues", async () => {
    const { runtime, model, outputs } = setup([
      { toolCalls: [{ toolName: "pickColor", input: { options: ["red", "blue"] }, toolCallId: "c1" }] },
      { text: "Nice color." },
    ]);
    const { result, action, chunks } = await suspendedRun(runtime, "pick");
    expect(result.status).toBe("suspended");
    // a client tool waits as the AI SDK's client tools do: input available, no approval asked
    expect(partOf(result.messages, "c1")?.state).toBe("input-available");
    expect(chunks.some((chunk) => chunk.type === "tool-approval-request")).toBe(false);
    expect(action).toMatchObject({
      kind: "client",
      toolName: "pickColor",
      payload: { options: ["red", "blue"] },
    });
    await expect(
      runtime.respond({ ...answerFor(action), answer: { type: "success", output: { colour: "red" } } }),
    ).rejects.toSatisfy((e) => PaiError.hasCode(e, "INVALID_OUTPUT"));
    expect(outputs).toEqual([]);
    const answered = await runtime.respond({
      ...answerFor(action),
      answer: { type: "success", output: { color: "red" } },
    });
    const done = await (answered as { run: { done: Promise<{ text: string }> } }).run.done;
    expect(done.text).toBe("Nice color.");
    expect(toolResultIn(model.doStreamCalls[1]?.prompt, "c1")).toEqual({
      type: "json",
      value: { color: "red" },
    });
    expect(outputs).toEqual([{ color: "red" }]);
  });
});

describe("cancellation", () => {
  it("cancels a run by id: status stored, tool signal fired, the open call ended as cancelled", async () => {
    let aborted = false;
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const wait = defineTool({
      id: "wait",
      description: "waits",
      inputSchema: z.object({}),
      execute: (ctx) =>
        new Promise((_, reject) => {
          started();
          ctx.signal.addEventListener("abort", () => {
            aborted = true;
            reject(new Error("stopped"));
          });
        }),
    });
    const model = createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "wait", input: {}, toolCallId: "c1" }] }],
    });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { a: defineAgent({ tools: { wait } }) } }),
      store: createMemoryThreadStore(),
      model,
    });
    const run = await runtime.run({ agentId: "a", message: "go" });
    const chunks: UIMessageChunk[] = [];
    const reading = (async () => {
      for await (const chunk of run.stream) chunks.push(chunk);
    })();
    await running;
    expect(runtime.cancel(run.runId)).toBe(true);
    const result = await run.done;
    await reading;
    expect(result.status).toBe("cancelled");
    expect(aborted).toBe(true);
    expect((await runtime.store.getRun(run.runId))?.status).toBe("cancelled");
    // No result is invented: the call ends as an error that says why, in the thread and on the stream.
    const stored = partOf(await runtime.store.loadMessages(run.threadId), "c1");
    expect(stored).toMatchObject({ state: "output-error", errorText: expect.stringContaining("stopped") });
    expect(toolEndOf(stored)).toEqual({ reason: "cancelled" });
    let onClient: UIMessage | undefined;
    for await (const message of readUIMessageStream({ stream: streamOf(chunks), terminateOnError: true }))
      onClient = message;
    expect(toolEndOf(partOf(onClient ? [onClient] : [], "c1"))).toEqual({ reason: "cancelled" });
    expect(runtime.cancel(run.runId)).toBe(false);
  });
});
