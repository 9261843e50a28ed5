import type { UIMessage, UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { toolEndOf } from "../actions/tool-end.ts";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import type { ThreadStore } from "../threads/thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

const waitForStop = defineTool({
  id: "waitForStop",
  description: "Runs until the run is stopped",
  inputSchema: z.object({}),
  execute: (ctx) =>
    new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))),
});
const deploy = defineTool({
  id: "deploy",
  description: "Deploys after approval",
  inputSchema: z.object({}),
  execute: (ctx) => (ctx.entry.type === "resume" ? { deployed: true } : ctx.suspend({ question: "Deploy?" })),
});

function partOf(messages: UIMessage[], toolCallId: string): Record<string, unknown> | undefined {
  return messages
    .flatMap((message) => message.parts as Array<Record<string, unknown>>)
    .find((part) => part.toolCallId === toolCallId);
}

function runtimeOn(store: ThreadStore, model = createScriptedModel({ steps: [], fallback: { text: "ok" } })) {
  return createAgentRuntime({
    pai: createPai({ agents: { a: defineAgent({ tools: { waitForStop, deploy } }) } }),
    store,
    model,
    ownerId: "owner-live",
    ownerTtlMs: 1000,
  });
}

/** A thread whose run died mid-call: `c1` open with no action, `c2` waiting for an approval. */
async function threadOfDeadRun(store: ThreadStore, ownerId: string | undefined): Promise<void> {
  const now = Date.now();
  const messages: UIMessage[] = [
    { id: "m1", role: "user", parts: [{ type: "text", text: "go" }] },
    {
      id: "m2",
      role: "assistant",
      parts: [
        { type: "step-start" },
        { type: "tool-waitForStop", toolCallId: "c1", state: "input-available", input: {} },
        { type: "tool-deploy", toolCallId: "c2", state: "input-available", input: {} },
      ],
    },
  ];
  await store.commitRun({
    thread: { id: "t1", agentId: "a", ownerKey: "anonymous", createdAt: now, updatedAt: now },
    messages,
    run: { id: "r1", threadId: "t1", agentId: "a", status: "running", startedAt: now - 5000, ownerId },
  });
  await store.putPendingAction({
    id: "a2",
    threadId: "t1",
    runId: "r1",
    toolCallId: "c2",
    toolId: "deploy",
    toolName: "deploy",
    inputHash: "h",
    input: {},
    kind: "suspend",
    payload: { question: "Deploy?" },
    suspendHistory: [],
    status: "pending",
    createdAt: now,
  });
}

describe("clean endings", () => {
  it("ends the open call of a run that timed out as `timeout`, on the stream and in the thread", async () => {
    const runtime = runtimeOn(
      createMemoryThreadStore(),
      createScriptedModel({
        steps: [{ toolCalls: [{ toolName: "waitForStop", input: {}, toolCallId: "c1" }] }],
      }),
    );
    const run = await runtime.run({ agentId: "a", message: "go", signal: AbortSignal.timeout(150) });
    const chunks: UIMessageChunk[] = [];
    for await (const chunk of run.stream) chunks.push(chunk);
    const result = await run.done;
    expect(result.status).toBe("cancelled");
    expect(toolEndOf(partOf(await runtime.store.loadMessages(run.threadId), "c1"))).toEqual({
      reason: "timeout",
    });
    expect(chunks.at(-1)).toMatchObject({
      type: "tool-output-error",
      toolCallId: "c1",
      errorText: "The run timed out before this tool call finished.",
      toolMetadata: { paiToolId: "waitForStop", paiEnd: { reason: "timeout" } },
    });
    await runtime.close();
  });

  it("stores a call that runs past a moment (so a crash leaves it to close), yet serves readers the stream's base", async () => {
    const runtime = runtimeOn(
      createMemoryThreadStore(),
      createScriptedModel({
        steps: [{ toolCalls: [{ toolName: "waitForStop", input: {}, toolCallId: "c1" }] }],
      }),
    );
    const run = await runtime.run({ agentId: "a", message: "go" });
    while (!partOf(await runtime.store.loadMessages(run.threadId), "c1"))
      await new Promise((resolve) => setTimeout(resolve, 20));
    expect(partOf(await runtime.store.loadMessages(run.threadId), "c1")).toMatchObject({
      state: "input-available",
      toolMetadata: { paiToolId: "waitForStop" },
    });
    expect((await runtime.store.getRun(run.runId))?.status).toBe("running");
    // A reader following the run replays its stream on top of this: the reply is not in it yet.
    const snapshot = await runtime.getThread(run.threadId);
    expect(snapshot?.messages.map((message) => message.role)).toEqual(["user"]);
    run.cancel();
    expect((await run.done).status).toBe("cancelled");
    expect(toolEndOf(partOf((await runtime.getThread(run.threadId))!.messages, "c1"))).toEqual({
      reason: "cancelled",
    });
    await runtime.close();
  });

  it("marks a dead owner's running run interrupted on start and closes its open call; a call awaiting an answer stays", async () => {
    const store = createMemoryThreadStore();
    const long = Date.now() - 60_000;
    await store.heartbeatOwner({
      ownerId: "owner-dead",
      host: "h",
      pid: 1,
      startedAt: long,
      heartbeatAt: long,
    });
    await threadOfDeadRun(store, "owner-dead");
    const runtime = runtimeOn(store);
    await runtime.sweep();

    expect(await store.getRun("r1")).toMatchObject({ status: "interrupted", endedAt: expect.any(Number) });
    const messages = await store.loadMessages("t1");
    expect(partOf(messages, "c1")).toMatchObject({
      state: "output-error",
      errorText: "The process running this tool call stopped before it finished.",
    });
    expect(toolEndOf(partOf(messages, "c1"))).toEqual({ reason: "interrupted" });
    expect(partOf(messages, "c2")).toMatchObject({ state: "input-available" });
    expect((await runtime.listPendingActions({ threadId: "t1" })).map((action) => action.actionId)).toEqual([
      "a2",
    ]);
    // Without bindings this process cannot free the dead owner's containers: it stays known for one that can.
    expect((await store.listOwners()).map((owner) => owner.ownerId).sort()).toEqual([
      "owner-dead",
      "owner-live",
    ]);
    await runtime.close();
  });

  it("leaves a live owner's running run alone", async () => {
    const store = createMemoryThreadStore();
    await store.heartbeatOwner({
      ownerId: "owner-other",
      host: "h",
      pid: 2,
      startedAt: 1,
      heartbeatAt: Date.now(),
    });
    await threadOfDeadRun(store, "owner-other");
    const runtime = runtimeOn(store);
    await runtime.sweep();
    expect((await store.getRun("r1"))?.status).toBe("running");
    expect(partOf(await store.loadMessages("t1"), "c1")).toMatchObject({ state: "input-available" });
    await runtime.close();
  });

  it("closes a call its dead run left open when the next message arrives, so the model sees it ended", async () => {
    const store = createMemoryThreadStore();
    await threadOfDeadRun(store, "owner-other");
    await store.heartbeatOwner({
      ownerId: "owner-other",
      host: "h",
      pid: 2,
      startedAt: 1,
      heartbeatAt: Date.now(),
    });
    const model = createScriptedModel({ steps: [{ text: "Sorry, that was interrupted." }] });
    const runtime = runtimeOn(store, model);
    const result = await (await runtime.run({ agentId: "a", threadId: "t1", message: "and?" })).done;
    expect(result.status).toBe("completed");
    expect(toolEndOf(partOf(result.messages, "c1"))).toEqual({ reason: "interrupted" });
    const prompt = JSON.stringify(model.doStreamCalls[0]?.prompt);
    expect(prompt).toContain("The process running this tool call stopped before it finished.");
    await runtime.close();
  });

  it("applies an approval once: a call whose continuation died applying it ends interrupted, never executed again", async () => {
    const store = createMemoryThreadStore();
    await threadOfDeadRun(store, "owner-gone");
    // The answer was taken and a continuation claimed it, then its process died mid-execute.
    await store.settlePendingAction("a2", "pending", {
      status: "resumed",
      answer: { type: "resume", resume: {} },
      settledAt: Date.now(),
    });
    expect(await store.claimPendingAction("a2", "r-continuation")).toBe(true);
    const runtime = runtimeOn(store, createScriptedModel({ steps: [{ text: "It may not have run." }] }));

    const result = await (await runtime.run({ agentId: "a", threadId: "t1", message: "did it deploy?" }))
      .done;

    expect(result.status).toBe("completed");
    expect(partOf(result.messages, "c2")).toMatchObject({ state: "output-error" });
    expect(toolEndOf(partOf(result.messages, "c2"))).toEqual({ reason: "interrupted" });
    expect((await store.getPendingAction("a2"))?.appliedBy).toBe("r-continuation");
    await runtime.close();
  });

  it("applies an approval its continuation never got to: the next run claims it and executes it once", async () => {
    const store = createMemoryThreadStore();
    await threadOfDeadRun(store, "owner-gone");
    await store.settlePendingAction("a2", "pending", {
      status: "resumed",
      answer: { type: "resume", resume: {} },
      settledAt: Date.now(),
    });
    const runtime = runtimeOn(store, createScriptedModel({ steps: [{ text: "Deployed." }] }));

    const run = await runtime.run({ agentId: "a", threadId: "t1", message: "did it deploy?" });
    const result = await run.done;

    expect(partOf(result.messages, "c2")).toMatchObject({
      state: "output-available",
      output: { deployed: true },
    });
    expect((await store.getPendingAction("a2"))?.appliedBy).toBe(run.runId);
    await runtime.close();
  });

  it("applies an answer below a call once: a call whose continuation died applying it is not executed again", async () => {
    let releases = 0;
    const confirm = defineTool({
      id: "confirm",
      description: "Asks before a release",
      inputSchema: z.object({}),
      execute: (ctx) => (ctx.entry.type === "resume" ? { ok: true } : ctx.suspend({ question: "Release?" })),
    });
    const release = defineTool({
      id: "release",
      description: "Releases after a nested confirmation",
      inputSchema: z.object({}),
      tools: { confirm },
      execute: async (ctx) => {
        releases++;
        await ctx.tools.confirm({});
        return { released: true };
      },
    });
    const store = createMemoryThreadStore();
    const now = Date.now();
    await store.commitRun({
      thread: { id: "t1", agentId: "a", ownerKey: "anonymous", createdAt: now, updatedAt: now },
      messages: [
        { id: "m1", role: "user", parts: [{ type: "text", text: "release" }] },
        {
          id: "m2",
          role: "assistant",
          parts: [{ type: "tool-release", toolCallId: "c1", state: "input-available", input: {} }],
        },
      ],
      run: {
        id: "r1",
        threadId: "t1",
        agentId: "a",
        status: "running",
        startedAt: now - 5000,
        ownerId: "gone",
      },
    });
    // The wait was below the call; a deny was taken and a continuation claimed it, then its process died.
    await store.putPendingAction({
      id: "a1",
      threadId: "t1",
      runId: "r1",
      toolCallId: "c1",
      toolId: "release",
      toolName: "release",
      inputHash: "h",
      input: {},
      kind: "suspend",
      name: "default",
      payload: { question: "Release?" },
      suspendHistory: [],
      status: "denied",
      answer: { type: "deny", reason: "no" },
      createdAt: now,
      settledAt: now,
      inner: { path: ["release", "confirm"], key: "0", toolId: "confirm", input: {} },
      journal: [
        {
          key: "0",
          toolId: "confirm",
          inputHash: "h0",
          state: "waiting",
          name: "default",
          suspendHistory: [],
        },
      ],
    });
    expect(await store.claimPendingAction("a1", "r-continuation")).toBe(true);
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { a: defineAgent({ tools: { release } }) } }),
      store,
      model: createScriptedModel({ steps: [{ text: "It may not have run." }] }),
      ownerId: "owner-live",
      ownerTtlMs: 1000,
    });

    const result = await (await runtime.run({ agentId: "a", threadId: "t1", message: "did it release?" }))
      .done;

    expect(result.status).toBe("completed");
    expect(toolEndOf(partOf(result.messages, "c1"))).toEqual({ reason: "interrupted" });
    expect(releases).toBe(0);
    await runtime.close();
  });
});
