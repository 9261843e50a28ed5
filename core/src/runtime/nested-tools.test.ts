import { expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

const lookupPrice = defineTool({
  id: "lookupPrice",
  description: "Price of one item",
  inputSchema: z.object({ sku: z.string() }),
  outputSchema: z.object({ cents: z.number().int() }),
  contextSchema: z.object({ prices: z.record(z.string(), z.number()) }),
  execute: (ctx) => ({ cents: ctx.context.prices[ctx.input.sku] ?? 0 }),
});

const quote = defineTool({
  id: "quote",
  description: "Quote a basket",
  inputSchema: z.object({ skus: z.array(z.string()) }),
  tools: { lookupPrice },
  execute: async (ctx) => {
    const prices = await Promise.all(ctx.input.skus.map((sku) => ctx.tools.lookupPrice({ sku })));
    expectTypeOf(prices).toEqualTypeOf<Array<{ cents: number }>>();
    let refused = "";
    try {
      await ctx.tools.lookupPrice({ sku: 42 } as unknown as { sku: string });
    } catch (error) {
      refused = (error as Error).message;
    }
    return { total: prices.reduce((sum, price) => sum + price.cents, 0), refused };
  },
});

it("runs nested tools in the same call with their own schemas, and lists them in the manifest", async () => {
  const model = createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "quote", input: { skus: ["a", "b"] }, toolCallId: "c1" }] },
      { text: "" },
    ],
  });
  const pai = createPai({
    agents: {
      shop: defineAgent({ runtimeContext: async () => ({ prices: { a: 150, b: 275 } }), tools: { quote } }),
    },
  });
  const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore(), model });
  const result = await (await runtime.run({ agentId: "shop", message: "quote a and b" })).done;
  const part = result.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-quote") as {
    output: { total: number; refused: string };
  };
  expect(part.output.total).toBe(425);
  expect(part.output.refused).toContain('nested tool "quote.lookupPrice"');
  expect(pai.manifest().agents[0]?.tools[0]?.nestedTools).toEqual({ lookupPrice: "lookupPrice" });
});
