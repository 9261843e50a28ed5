import { expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

it("smoke", async () => {
  const add = defineTool({
    id: "add",
    description: "add",
    inputSchema: z.object({ a: z.number(), b: z.number() }),
    outputSchema: z.object({ sum: z.number() }),
    data: { progress: z.object({ pct: z.number() }) },
    execute: async (ctx) => {
      await ctx.data.write("progress", { pct: 50 });
      return { sum: ctx.input.a + ctx.input.b };
    },
  });
  const model = createScriptedModel({ steps: [{ toolCalls: [{ toolName: "add", input: { a: 1, b: 2 } }, { toolName: "nope", input: {} }, { toolName: "add", input: { a: "x" } }] }, { text: "3" }] });
  const pai = createPai({ agents: { calc: defineAgent({ tools: { add } }) } });
  const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore(), model });
  const run = await runtime.run({ agentId: "calc", message: "1+2" });
  const chunks: unknown[] = [];
  for await (const c of run.stream) chunks.push(c);
  const result = await run.done;
  console.log(JSON.stringify(chunks));
  console.log(JSON.stringify(result.messages, null, 1));
  console.log(JSON.stringify(model.doStreamCalls[1]?.prompt, null, 1));
  expect(result.status).toBe("completed");
});
