import type { UIMessage, UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { PendingActionAnswer } from "../actions/pending-action-answer.ts";
import type { PublicPendingAction } from "../actions/public-action.ts";
import { createPai } from "../agents/create-pai.ts";
import { type AnyAgentDefinition, defineAgent, type ToolResultEvent } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { isToolSuspension } from "../tools/tool-signals.ts";
import { type AgentRuntime, createAgentRuntime } from "./create-agent-runtime.ts";

/** Side effects, counted per key: what must happen exactly once. */
function counter() {
  const counts: Record<string, number> = {};
  const bump = (key: string) => {
    counts[key] = (counts[key] ?? 0) + 1;
  };
  return { counts, bump };
}

/** An approval tool: asks on its first entry, returns who approved on resume. */
const approve = defineTool({
  id: "approve",
  description: "Ask a person",
  inputSchema: z.object({ what: z.string() }),
  outputSchema: z.object({ approved: z.string(), by: z.string() }),
  suspendSchema: z.object({ question: z.string() }),
  resumeSchema: z.object({ by: z.string() }),
  execute: (ctx) =>
    ctx.entry.type === "resume"
      ? { approved: ctx.input.what, by: ctx.entry.resume.by }
      : ctx.suspend({ question: `Approve ${ctx.input.what}?` }),
});

/** Runs `agent` on one scripted tool call (`c1` of `toolName`), then a closing text step per run. */
function setup(agent: AnyAgentDefinition, toolName: string, input: unknown) {
  const model = createScriptedModel({
    steps: [],
    fallback: (call) =>
      call.prompt.some((message) => message.role === "tool")
        ? { text: "done" }
        : { toolCalls: [{ toolName, input, toolCallId: "c1" }] },
  });
  const store = createMemoryThreadStore();
  const runtime = createAgentRuntime({ pai: createPai({ agents: { shop: agent } }), store, model });
  return { runtime, store };
}

async function start(runtime: AgentRuntime) {
  const run = await runtime.run({ agentId: "shop", message: "go" });
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of run.stream) chunks.push(chunk);
  const result = await run.done;
  const actions = await runtime.listPendingActions({ threadId: run.threadId });
  return { run, result, chunks, actions };
}

async function answer(runtime: AgentRuntime, action: PublicPendingAction, value: PendingActionAnswer) {
  const answered = await runtime.respond({
    threadId: action.threadId,
    actionId: action.actionId,
    toolCallId: action.toolCallId,
    toolId: action.toolId,
    inputHash: action.inputHash,
    answer: value,
  });
  if (answered.status !== "accepted" || !answered.run) throw new Error(`not continued: ${answered.status}`);
  const result = await answered.run.done;
  const actions = await runtime.listPendingActions({ threadId: action.threadId });
  return { result, actions };
}

function partOf(messages: UIMessage[], toolCallId = "c1") {
  return messages
    .flatMap((message) => message.parts)
    .find((part) => (part as { toolCallId?: string }).toolCallId === toolCallId) as
    | { state: string; output?: unknown; errorText?: string }
    | undefined;
}

describe("approvals below a top-level call", () => {
  it("turns a suspend two levels down into one pending action with its path, and resumes only the call that waited", async () => {
    const { counts, bump } = counter();
    const entries: string[] = [];
    const charge = defineTool({
      id: "charge",
      description: "Charge a card",
      inputSchema: z.object({ cents: z.number() }),
      outputSchema: z.object({ charged: z.number() }),
      execute: (ctx) => {
        bump(`charge ${ctx.input.cents}`);
        return { charged: ctx.input.cents };
      },
    });
    const review = defineTool({
      id: "review",
      description: "Review an order",
      inputSchema: z.object({ order: z.string() }),
      tools: { approve },
      execute: async (ctx) => {
        entries.push(`review ${ctx.entry.type}`);
        return { review: await ctx.tools.approve({ what: ctx.input.order }) };
      },
    });
    const checkout = defineTool({
      id: "checkout",
      description: "Check out",
      inputSchema: z.object({ order: z.string() }),
      tools: { charge, review },
      execute: async (ctx) => {
        entries.push(`checkout ${ctx.entry.type}`);
        const deposit = await ctx.tools.charge({ cents: 100 });
        const reviewed = await ctx.tools.review({ order: ctx.input.order });
        const rest = await ctx.tools.charge({ cents: 900 });
        return { deposit, reviewed, rest };
      },
    });
    const { runtime } = setup(defineAgent({ tools: { checkout } }), "checkout", { order: "o-7" });

    const first = await start(runtime);
    expect(first.result.status).toBe("suspended");
    expect(partOf(first.result.messages)?.state).toBe("approval-requested");
    expect(first.actions).toHaveLength(1);
    const [action] = first.actions;
    expect(action).toMatchObject({
      toolCallId: "c1",
      toolId: "checkout",
      toolName: "checkout",
      kind: "suspend",
      path: ["checkout", "review", "approve"],
      payload: { question: "Approve o-7?" },
      input: { order: "o-7" },
      inner: { toolId: "approve", input: { what: "o-7" } },
    });
    const streamed = first.chunks.filter((chunk) => chunk.type === "data-pai-action");
    expect(streamed.map((chunk) => (chunk as { data: PublicPendingAction }).data.path)).toEqual([
      ["checkout", "review", "approve"],
    ]);
    expect(counts).toEqual({ "charge 100": 1 });

    const second = await answer(runtime, action!, { type: "resume", resume: { by: "ana" } });
    expect(second.result.status).toBe("completed");
    expect(second.actions).toEqual([]);
    expect(partOf(second.result.messages)).toMatchObject({
      state: "output-available",
      output: {
        deposit: { charged: 100 },
        reviewed: { review: { approved: "o-7", by: "ana" } },
        rest: { charged: 900 },
      },
    });
    // The deposit was charged once; the callers ran again from their start, each as a first entry.
    expect(counts).toEqual({ "charge 100": 1, "charge 900": 1 });
    expect(entries).toEqual(["checkout initial", "review initial", "checkout initial", "review initial"]);
  });

  it.each([
    {
      answer: { type: "deny", reason: "Too expensive" } as const,
      caught: { message: "Too expensive", code: "DENIED" },
    },
    {
      answer: { type: "cancel" } as const,
      caught: { message: "The action was cancelled.", code: "CANCELLED" },
    },
    { answer: { type: "fail", message: "Card declined" } as const, caught: { message: "Card declined" } },
    { answer: { type: "skip" } as const, returned: { skipped: true } },
  ])("gives the inner caller the outcome a top-level call gets for $answer.type", async (row) => {
    const { counts, bump } = counter();
    const checkout = defineTool({
      id: "checkout",
      description: "Check out",
      inputSchema: z.object({}),
      tools: {
        approve: defineTool({
          id: "ask",
          description: "Ask a person",
          inputSchema: z.object({ what: z.string() }),
          execute: (ctx) => (ctx.entry.type === "resume" ? { by: "someone" } : ctx.suspend(ctx.input.what)),
        }),
      },
      execute: async (ctx) => {
        bump("checkout");
        try {
          return { returned: await ctx.tools.approve({ what: "the order" }) };
        } catch (error) {
          if (isToolSuspension(error)) throw error;
          const { message, code } = error as Error & { code?: string };
          return { caught: code === undefined ? { message } : { message, code } };
        }
      },
    });
    const { runtime } = setup(defineAgent({ tools: { checkout } }), "checkout", {});
    const { actions } = await start(runtime);
    const { result } = await answer(runtime, actions[0]!, row.answer);
    expect(result.status).toBe("completed");
    expect(partOf(result.messages)?.output).toEqual(
      row.caught ? { caught: row.caught } : { returned: row.returned },
    );
    expect(counts).toEqual({ checkout: 2 });
  });

  it("runs nested calls through the agent's registration of their tool: enabled, onOutput and afterToolResult, with their path", async () => {
    let lookupsAllowed = true;
    const observed: Array<{ path: string[]; name: string; output: unknown }> = [];
    const seen: Array<Pick<ToolResultEvent, "name" | "path" | "toolId">> = [];
    const lookupPrice = defineTool({
      id: "lookupPrice",
      description: "Price of one item",
      inputSchema: z.object({ sku: z.string() }),
      outputSchema: z.object({ cents: z.number() }),
      execute: (ctx) => ({ cents: ctx.input.sku.length * 100 }),
    });
    const quote = defineTool({
      id: "quote",
      description: "Quote a basket",
      inputSchema: z.object({ skus: z.array(z.string()) }),
      tools: { lookupPrice },
      execute: async (ctx) => {
        const prices = [];
        for (const sku of ctx.input.skus) {
          prices.push(await ctx.tools.lookupPrice({ sku }).catch((error: Error) => error.message));
        }
        return { prices };
      },
    });
    const agent = defineAgent({
      tools: {
        quote,
        lookupPrice: {
          tool: lookupPrice,
          enabled: () => lookupsAllowed,
          onOutput: ({ path, tool, output }) => void observed.push({ path, name: tool.name, output }),
        },
      },
      lifecycle: {
        afterToolResult: (event) => {
          seen.push({ name: event.name, path: event.path, toolId: event.toolId });
          if (event.path.length > 1 && event.input && (event.input as { sku: string }).sku === "zz")
            return { output: { cents: 1 } };
        },
      },
    });
    const { runtime } = setup(agent, "quote", { skus: ["a", "zz"] });
    const allowed = await start(runtime);
    expect(partOf(allowed.result.messages)?.output).toEqual({ prices: [{ cents: 100 }, { cents: 1 }] });
    expect(observed).toEqual([
      { path: ["quote", "lookupPrice"], name: "lookupPrice", output: { cents: 100 } },
      { path: ["quote", "lookupPrice"], name: "lookupPrice", output: { cents: 1 } },
    ]);
    expect(seen).toEqual([
      { name: "quote.lookupPrice", path: ["quote", "lookupPrice"], toolId: "lookupPrice" },
      { name: "quote.lookupPrice", path: ["quote", "lookupPrice"], toolId: "lookupPrice" },
      { name: "quote", path: ["quote"], toolId: "quote" },
    ]);

    lookupsAllowed = false;
    const refused = await start(runtime);
    expect(partOf(refused.result.messages)?.output).toEqual({
      prices: [
        'The tool "quote.lookupPrice" is not available.',
        'The tool "quote.lookupPrice" is not available.',
      ],
    });
    expect(observed).toHaveLength(2);
  });

  it("resumes a top-level suspend without running the nested calls it made before", async () => {
    const { counts, bump } = counter();
    const reserve = defineTool({
      id: "reserve",
      description: "Reserve stock",
      inputSchema: z.object({ sku: z.string() }),
      execute: (ctx) => {
        bump(ctx.input.sku);
        return { reserved: ctx.input.sku };
      },
    });
    const order = defineTool({
      id: "order",
      description: "Order after approval",
      inputSchema: z.object({ sku: z.string() }),
      tools: { reserve },
      execute: async (ctx) => {
        const reserved = await ctx.tools.reserve({ sku: ctx.input.sku });
        if (ctx.entry.type === "initial") return ctx.suspend({ question: "Order it?" });
        return { ...reserved, ordered: true };
      },
    });
    const { runtime } = setup(defineAgent({ tools: { order } }), "order", { sku: "s1" });
    const { actions } = await start(runtime);
    expect(actions[0]).toMatchObject({ path: ["order"], payload: { question: "Order it?" } });
    expect(actions[0]).not.toHaveProperty("inner");
    const { result } = await answer(runtime, actions[0]!, { type: "resume", resume: true });
    expect(partOf(result.messages)?.output).toEqual({ reserved: "s1", ordered: true });
    expect(counts).toEqual({ s1: 1 });
  });

  it("resumes a call that waits twice, itself and then below it, running each nested call once", async () => {
    const { counts, bump } = counter();
    const reserve = defineTool({
      id: "reserve",
      description: "Reserve stock",
      inputSchema: z.object({ sku: z.string() }),
      execute: (ctx) => {
        bump(`reserve ${ctx.input.sku}`);
        return { reserved: ctx.input.sku };
      },
    });
    const order = defineTool({
      id: "order",
      description: "Order after two approvals",
      inputSchema: z.object({}),
      tools: { reserve, approve },
      execute: async (ctx) => {
        await ctx.tools.reserve({ sku: "a" });
        if (ctx.entry.type === "initial") return ctx.suspend({ question: "Order?" }, { name: "manager" });
        await ctx.tools.reserve({ sku: "b" });
        const { by } = await ctx.tools.approve({ what: "shipping" });
        return { manager: ctx.entry.resume, shipping: by, history: ctx.suspendHistory };
      },
    });
    const { runtime } = setup(defineAgent({ tools: { order } }), "order", {});
    const first = await start(runtime);
    expect(first.actions[0]).toMatchObject({ path: ["order"], name: "manager" });
    const second = await answer(runtime, first.actions[0]!, { type: "resume", resume: "max" });
    expect(second.actions[0]).toMatchObject({ path: ["order", "approve"], name: "default" });
    const third = await answer(runtime, second.actions[0]!, { type: "resume", resume: { by: "sue" } });
    expect(partOf(third.result.messages)?.output).toEqual({
      manager: "max",
      shipping: "sue",
      history: [{ question: "Order?" }],
    });
    expect(counts).toEqual({ "reserve a": 1, "reserve b": 1 });
  });

  it("keeps one wait when two nested calls suspend at once, lets their siblings settle, and asks again for the second", async () => {
    const { counts, bump } = counter();
    const log = defineTool({
      id: "log",
      description: "Append to the audit log",
      inputSchema: z.object({ line: z.string() }),
      execute: async (ctx) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        bump(ctx.input.line);
        return { logged: true };
      },
    });
    const both = defineTool({
      id: "both",
      description: "Two approvals and an audit line",
      inputSchema: z.object({}),
      tools: { approve, log },
      execute: async (ctx) => {
        const [a, b] = await Promise.all([
          ctx.tools.approve({ what: "a" }),
          ctx.tools.approve({ what: "b" }),
          ctx.tools.log({ line: "audit" }),
        ]);
        return { a: a.by, b: b.by };
      },
    });
    const { runtime } = setup(defineAgent({ tools: { both } }), "both", {});
    const first = await start(runtime);
    expect(first.actions.map((action) => action.payload)).toEqual([{ question: "Approve a?" }]);
    expect(counts).toEqual({ audit: 1 });
    const second = await answer(runtime, first.actions[0]!, { type: "resume", resume: { by: "ana" } });
    expect(second.result.status).toBe("suspended");
    expect(second.actions.map((action) => action.payload)).toEqual([{ question: "Approve b?" }]);
    const third = await answer(runtime, second.actions[0]!, { type: "resume", resume: { by: "bo" } });
    expect(partOf(third.result.messages)?.output).toEqual({ a: "ana", b: "bo" });
    expect(counts).toEqual({ audit: 1 });
  });

  it("ends a nested wait superseded by a new message without running its call again", async () => {
    const { counts, bump } = counter();
    const checkout = defineTool({
      id: "checkout",
      description: "Check out",
      inputSchema: z.object({}),
      tools: { approve },
      execute: async (ctx) => {
        bump("checkout");
        return ctx.tools.approve({ what: "it" });
      },
    });
    const { runtime } = setup(defineAgent({ tools: { checkout } }), "checkout", {});
    const { run, actions } = await start(runtime);
    const next = await (await runtime.run({ agentId: "shop", threadId: run.threadId, message: "never mind" }))
      .done;
    expect(partOf(next.messages)).toMatchObject({
      state: "output-error",
      errorText: "The action was cancelled: the user sent a new message.",
    });
    expect(counts).toEqual({ checkout: 1 });
    expect(await runtime.store.getPendingAction(actions[0]!.actionId)).toMatchObject({ status: "cancelled" });
  });

  it("fails a resumed call whose nested calls differ from its journal, saying where", async () => {
    let runs = 0;
    const errors: unknown[] = [];
    const charge = defineTool({
      id: "charge",
      description: "Charge",
      inputSchema: z.object({ cents: z.number() }),
      execute: (ctx) => ({ charged: ctx.input.cents }),
    });
    const flaky = defineTool({
      id: "flaky",
      description: "Charges a different amount each time it runs",
      inputSchema: z.object({}),
      tools: { charge, approve },
      execute: async (ctx) => {
        runs += 1;
        await ctx.tools.charge({ cents: runs * 100 });
        return ctx.tools.approve({ what: "it" });
      },
    });
    const { runtime } = setup(
      defineAgent({ tools: { flaky }, onRuntimeError: (error) => void errors.push(error) }),
      "flaky",
      {},
    );
    const { actions } = await start(runtime);
    const { result } = await answer(runtime, actions[0]!, { type: "resume", resume: { by: "ana" } });
    const part = partOf(result.messages);
    expect(part?.state).toBe("output-error");
    expect(part?.errorText).toContain('call 0 (flaky › charge) is "charge" with other input');
    expect(errors.map((error) => PaiError.isInstance(error) && error.code)).toEqual(["JOURNAL_DIVERGED"]);
  });

  it("refuses a resume for a nested tool whose registration was disabled while it waited", async () => {
    let approvals = true;
    const checkout = defineTool({
      id: "checkout",
      description: "Check out",
      inputSchema: z.object({}),
      tools: { approve },
      execute: (ctx) => ctx.tools.approve({ what: "it" }),
    });
    const agent = defineAgent({
      tools: { checkout, approve: { tool: approve, enabled: () => approvals } },
    });
    const { runtime } = setup(agent, "checkout", {});
    const { actions } = await start(runtime);
    approvals = false;
    const action = actions[0]!;
    const refused = await runtime
      .respond({ ...action, answer: { type: "resume", resume: { by: "ana" } } })
      .catch((error: unknown) => error);
    expect(PaiError.hasCode(refused, "TOOL_DISABLED")).toBe(true);
    const invalid = await runtime
      .respond({ ...action, answer: { type: "resume", resume: { by: 7 } } })
      .catch((error: unknown) => error);
    expect(PaiError.hasCode(invalid, "TOOL_DISABLED")).toBe(true);
    approvals = true;
    const badResume = await runtime
      .respond({ ...action, answer: { type: "resume", resume: { by: 7 } } })
      .catch((error: unknown) => error);
    expect(PaiError.hasCode(badResume, "INVALID_INPUT")).toBe(true);
    expect(await runtime.listPendingActions({ threadId: action.threadId })).toHaveLength(1);
    const { result } = await answer(runtime, action, { type: "cancel" });
    expect(partOf(result.messages)?.state).toBe("output-error");
  });

  it("waits for a nested client-executed tool and validates its output against its schema", async () => {
    const askCity = defineTool({
      id: "askCity",
      description: "Ask the browser for the user's city",
      inputSchema: z.object({ why: z.string() }),
      outputSchema: z.object({ city: z.string() }),
    });
    const weather = defineTool({
      id: "weather",
      description: "Weather where the user is",
      inputSchema: z.object({}),
      tools: { askCity },
      execute: async (ctx) => ({ forecast: `sun in ${(await ctx.tools.askCity({ why: "forecast" })).city}` }),
    });
    const { runtime } = setup(defineAgent({ tools: { weather } }), "weather", {});
    const { actions } = await start(runtime);
    expect(actions[0]).toMatchObject({
      kind: "client",
      path: ["weather", "askCity"],
      payload: { why: "forecast" },
    });
    const wrong = await runtime
      .respond({ ...actions[0]!, answer: { type: "success", output: { city: 1 } } })
      .catch((error: unknown) => error);
    expect(PaiError.hasCode(wrong, "INVALID_OUTPUT")).toBe(true);
    const { result } = await answer(runtime, actions[0]!, { type: "success", output: { city: "Porto" } });
    expect(partOf(result.messages)?.output).toEqual({ forecast: "sun in Porto" });
  });
});
