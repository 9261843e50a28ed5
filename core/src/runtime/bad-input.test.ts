import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

const add = defineTool({
  id: "add",
  description: "Add two numbers",
  inputSchema: z.object({ a: z.number(), b: z.number() }),
  execute: (ctx) => ({ sum: ctx.input.a + ctx.input.b }),
});

function setup(steps: Parameters<typeof createScriptedModel>[0]["steps"]) {
  const model = createScriptedModel({ steps });
  let contextBuilt = 0;
  const agent = defineAgent({
    identity: z.object({ userId: z.string().min(1) }),
    runtimeContext: () => {
      contextBuilt += 1;
      return {};
    },
    tools: { add },
  });
  const store = createMemoryThreadStore();
  const runtime = createAgentRuntime({ pai: createPai({ agents: { calc: agent } }), store, model });
  return { runtime, model, store, contextBuilt: () => contextBuilt };
}

describe("bad input", () => {
  it("refuses an identity that fails its schema with a typed error, and runs nothing", async () => {
    const { runtime, model, store, contextBuilt } = setup([{ text: "never" }]);
    const attempt = runtime.run({ agentId: "calc", identity: { userId: 42 }, message: "hi", threadId: "t1" });
    await expect(attempt).rejects.toSatisfy((error) => PaiError.hasCode(error, "INVALID_IDENTITY"));
    expect(model.doStreamCalls).toHaveLength(0);
    expect(contextBuilt()).toBe(0);
    expect(await store.getThread("t1")).toBeUndefined();
  });

  it("refuses an unknown agent id", async () => {
    const { runtime } = setup([]);
    await expect(runtime.run({ agentId: "nobody", message: "hi" })).rejects.toSatisfy(
      (error) => PaiError.hasCode(error, "UNKNOWN_AGENT") && (error as Error).message.includes('"nobody"'),
    );
  });

  it("gives the model a tool error for input that fails the schema, without crashing the run", async () => {
    const { runtime, model } = setup([
      { toolCalls: [{ toolName: "add", input: { a: "one" }, toolCallId: "c1" }] },
      { text: "sorry" },
    ]);
    const result = await (await runtime.run({ agentId: "calc", identity: { userId: "u" }, message: "add" }))
      .done;
    expect(result.status).toBe("completed");
    const toolMessage = model.doStreamCalls[1]?.prompt.find((message) => message.role === "tool");
    const output = (toolMessage!.content[0] as { output: { type: string; value: string } }).output;
    expect(output.type).toBe("error-text");
    expect(output.value).toContain("Invalid input for tool add");
  });

  it("gives the model a tool error when it names an unknown tool", async () => {
    const { runtime, model } = setup([
      { toolCalls: [{ toolName: "multiply", input: {}, toolCallId: "c1" }] },
      { text: "ok" },
    ]);
    const result = await (await runtime.run({ agentId: "calc", identity: { userId: "u" }, message: "mul" }))
      .done;
    expect(result.status).toBe("completed");
    const toolMessage = model.doStreamCalls[1]?.prompt.find((message) => message.role === "tool");
    const output = (toolMessage!.content[0] as { output: { type: string; value: string } }).output;
    expect(output).toMatchObject({ type: "error-text" });
    expect(output.value).toContain("multiply");
  });

  it("hides another identity's thread", async () => {
    const { runtime } = setup([{ text: "one" }, { text: "two" }]);
    const run = await runtime.run({ agentId: "calc", identity: { userId: "alice" }, message: "hi" });
    await run.done;
    await expect(
      runtime.run({
        agentId: "calc",
        identity: { userId: "mallory" },
        threadId: run.threadId,
        message: "hi",
      }),
    ).rejects.toSatisfy((error) => PaiError.hasCode(error, "NOT_FOUND"));
    expect(await runtime.getThread(run.threadId, { identity: { userId: "mallory" } })).toBeUndefined();
    expect(await runtime.getThread(run.threadId, { identity: { userId: "alice" } })).toBeDefined();
  });

  it("refuses a second run on a thread while one is in progress", async () => {
    const { runtime } = setup([{ text: "one" }]);
    const run = await runtime.run({ agentId: "calc", identity: { userId: "u" }, message: "hi" });
    await expect(
      runtime.run({ agentId: "calc", identity: { userId: "u" }, threadId: run.threadId, message: "again" }),
    ).rejects.toSatisfy((error) => PaiError.hasCode(error, "THREAD_BUSY"));
    await run.done;
  });
});
