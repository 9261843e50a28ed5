import type { UIMessage, UIMessageChunk } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { type AgentLifecycle, defineAgent, type RuntimeErrorInfo } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { type AnyToolDefinition, defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

const input = z.object({ n: z.number() });

const planned = defineTool({
  id: "planned",
  description: "fails on purpose",
  inputSchema: input,
  execute: (ctx) => ctx.fail(`quota exhausted for ${ctx.input.n}`, { code: "QUOTA" }),
});

const broken = defineTool({
  id: "broken",
  description: "throws",
  inputSchema: input,
  execute: () => {
    throw new Error("db password=hunter2 rejected");
  },
});

const doubler = defineTool({
  id: "doubler",
  description: "doubles",
  inputSchema: input,
  outputSchema: z.object({ doubled: z.number() }),
  execute: (ctx) => ({ doubled: ctx.input.n * 2 }),
});

const liar = defineTool({
  id: "liar",
  description: "returns the wrong shape",
  inputSchema: input,
  outputSchema: z.object({ doubled: z.number() }),
  execute: () => ({ doubled: "two" }) as unknown as { doubled: number },
});

async function collect(stream: ReadableStream<UIMessageChunk>): Promise<UIMessageChunk[]> {
  const chunks: UIMessageChunk[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return chunks;
}

/** The text the model received as the result of `toolCallId` in its last request. */
function modelSawResult(model: ReturnType<typeof createScriptedModel>, toolCallId: string): unknown {
  const prompt = model.doStreamCalls.at(-1)?.prompt ?? [];
  for (const message of prompt) {
    if (message.role !== "tool") continue;
    for (const part of message.content) {
      if (part.type === "tool-result" && part.toolCallId === toolCallId) return part.output;
    }
  }
  return undefined;
}

function setup(
  tool: AnyToolDefinition,
  options: { lifecycle?: AgentLifecycle<any, any>; onOutput?: (event: any) => unknown } = {},
) {
  const errors: Array<{ error: unknown; info: RuntimeErrorInfo }> = [];
  const model = createScriptedModel({
    steps: [{ toolCalls: [{ toolName: "t", input: { n: 2 }, toolCallId: "c1" }] }, { text: "after" }],
  });
  const agent = defineAgent({
    tools: { t: options.onOutput ? { tool, onOutput: options.onOutput } : tool },
    ...(options.lifecycle ? { lifecycle: options.lifecycle } : {}),
    onRuntimeError: (error, info) => {
      errors.push({ error, info });
    },
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { agent } }),
    store: createMemoryThreadStore(),
    model,
  });
  return { runtime, model, errors };
}

function errorTextOf(messages: UIMessage[]): string | undefined {
  const part = messages.flatMap((m) => m.parts).find((p) => p.type === "tool-t") as
    | { errorText?: string }
    | undefined;
  return part?.errorText;
}

describe("tool outcomes", () => {
  it("shows a planned failure to the model and does not report it as a runtime error", async () => {
    const { runtime, model, errors } = setup(planned);
    const run = await runtime.run({ agentId: "agent", message: "go" });
    const result = await run.done;
    expect(result.status).toBe("completed");
    expect(modelSawResult(model, "c1")).toEqual({ type: "error-text", value: "quota exhausted for 2" });
    expect(errorTextOf(result.messages)).toBe("quota exhausted for 2");
    expect(errors).toEqual([]);
  });

  it("reports a thrown error to onRuntimeError, redacts it for the client and gives the model a generic error", async () => {
    const { runtime, model, errors } = setup(broken);
    const run = await runtime.run({ agentId: "agent", message: "go" });
    const chunks = await collect(run.stream);
    const result = await run.done;
    expect(result.status).toBe("completed");
    expect(errors).toHaveLength(1);
    expect((errors[0]!.error as Error).message).toBe("db password=hunter2 rejected");
    expect(errors[0]?.info).toMatchObject({
      phase: "tool",
      toolName: "t",
      toolCallId: "c1",
      agentId: "agent",
    });
    expect(JSON.stringify(chunks)).not.toContain("hunter2");
    expect(JSON.stringify(result.messages)).not.toContain("hunter2");
    const seen = modelSawResult(model, "c1") as { type: string; value: string };
    expect(seen.type).toBe("error-text");
    expect(seen.value).not.toContain("hunter2");
  });

  it("validates output against outputSchema", async () => {
    const { runtime, model, errors } = setup(liar);
    const result = await (await runtime.run({ agentId: "agent", message: "go" })).done;
    expect(PaiError.hasCode(errors[0]?.error, "INVALID_OUTPUT")).toBe(true);
    expect((errors[0]!.error as Error).message).toContain('tool "t"');
    expect((modelSawResult(model, "c1") as { type: string }).type).toBe("error-text");
    expect(errorTextOf(result.messages)).toBeDefined();
  });

  it("lets afterToolResult turn a failure into an output and an output into an error", async () => {
    const events: unknown[] = [];
    const rescue = setup(planned, {
      lifecycle: {
        afterToolResult: (event) => {
          events.push(event);
          return event.error ? { output: { recovered: event.error.message } } : undefined;
        },
      },
    });
    await (await rescue.runtime.run({ agentId: "agent", message: "go" })).done;
    expect(events[0]).toMatchObject({
      name: "t",
      toolCallId: "c1",
      output: undefined,
      error: { kind: "planned" },
    });
    expect(modelSawResult(rescue.model, "c1")).toEqual({
      type: "json",
      value: { recovered: "quota exhausted for 2" },
    });

    const veto = setup(doubler, {
      lifecycle: { afterToolResult: (event) => ({ error: `vetoed ${JSON.stringify(event.output)}` }) },
    });
    await (await veto.runtime.run({ agentId: "agent", message: "go" })).done;
    expect(modelSawResult(veto.model, "c1")).toEqual({ type: "error-text", value: 'vetoed {"doubled":4}' });
  });

  it("runs onOutput once on the settled output, after afterToolResult and before the next model step", async () => {
    const order: string[] = [];
    const { runtime, model } = setup(doubler, {
      lifecycle: {
        afterToolResult: () => {
          order.push(`afterToolResult (model calls: ${model.doStreamCalls.length})`);
          return { output: { doubled: 40 } };
        },
      },
      onOutput: async (event: { input: unknown; output: unknown; tool: unknown; call: unknown }) => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        order.push(
          `onOutput ${JSON.stringify([event.input, event.output, event.tool, event.call])} (model calls: ${model.doStreamCalls.length})`,
        );
        return "ignored";
      },
    });
    await (await runtime.run({ agentId: "agent", message: "go" })).done;
    expect(order).toEqual([
      "afterToolResult (model calls: 1)",
      'onOutput [{"n":2},{"doubled":40},{"name":"t","id":"doubler"},{"toolCallId":"c1"}] (model calls: 1)',
    ]);
    expect(modelSawResult(model, "c1")).toEqual({ type: "json", value: { doubled: 40 } });
  });

  it("never runs onOutput for a failed call, nor for one afterToolResult turned into an error", async () => {
    let calls = 0;
    const failed = setup(planned, { onOutput: () => calls++ });
    await (await failed.runtime.run({ agentId: "agent", message: "go" })).done;
    const vetoed = setup(doubler, {
      onOutput: () => calls++,
      lifecycle: { afterToolResult: () => ({ error: "no" }) },
    });
    await (await vetoed.runtime.run({ agentId: "agent", message: "go" })).done;
    expect(calls).toBe(0);
  });

  it("fails the run when onOutput throws, reporting the error and redacting it from the client", async () => {
    const { runtime, errors, model } = setup(doubler, {
      onOutput: () => {
        throw new Error("recents table is gone: secret-42");
      },
    });
    const run = await runtime.run({ agentId: "agent", message: "go" });
    const chunks = await collect(run.stream);
    const result = await run.done;
    expect(result.status).toBe("failed");
    expect(errors.map((e) => [(e.error as Error).message, e.info.phase])).toEqual([
      ["recents table is gone: secret-42", "on-output"],
    ]);
    expect(JSON.stringify(chunks)).not.toContain("secret-42");
    expect(chunks.some((chunk) => chunk.type === "error")).toBe(true);
    expect(model.doStreamCalls).toHaveLength(1);
    const runs = await runtime.store.listRuns(run.threadId);
    expect(runs[0]).toMatchObject({ status: "failed" });
    expect(runs[0]?.error).not.toContain("secret-42");
  });

  it("ends the run cancelled when the user stops it, firing the tool's signal", async () => {
    let sawAbort = false;
    let started!: () => void;
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const slow = defineTool({
      id: "slow",
      description: "waits",
      inputSchema: input,
      execute: (ctx) =>
        new Promise((_resolve, reject) => {
          started();
          ctx.signal.addEventListener("abort", () => {
            sawAbort = true;
            reject(ctx.signal.reason);
          });
        }),
    });
    const { runtime, errors, model } = setup(slow);
    const stop = new AbortController();
    const run = await runtime.run({ agentId: "agent", message: "go", signal: stop.signal });
    await running;
    stop.abort();
    const result = await run.done;
    expect(result.status).toBe("cancelled");
    expect(sawAbort).toBe(true);
    expect(errors).toEqual([]);
    expect(model.doStreamCalls).toHaveLength(1);
    expect((await runtime.store.getRun(run.runId))?.status).toBe("cancelled");
    const resultPart = result.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-t") as
      | { state: string }
      | undefined;
    expect(resultPart?.state).not.toBe("output-available");
  });
});
