import { expectTypeOf, test } from "vitest";
import { z } from "zod";
import { createPai, type InferAgentUIMessage, type InferPaiContract } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { defineTool } from "../tools/define-tool.ts";

const searchDocs = defineTool({
  id: "searchDocs",
  description: "Search",
  inputSchema: z.object({ query: z.string() }),
  outputSchema: z.object({ hits: z.array(z.string()) }),
  execute: () => ({ hits: [] }),
});
const gated = defineTool({
  id: "gated",
  description: "Gated",
  inputSchema: z.object({ id: z.number() }),
  execute: () => ({ ok: true as const }),
});
const agent = defineAgent({ tools: { searchDocs, gated: { tool: gated, enabled: false } } });
const pai = createPai({ agents: { docs: agent } });

test("the contract types tool parts from each agent's schemas", () => {
  expectTypeOf<InferPaiContract<typeof pai>["docs"]["searchDocs"]>().toEqualTypeOf<{
    input: { query: string };
    output: { hits: string[] };
  }>();
  expectTypeOf<InferPaiContract<typeof pai>["docs"]["gated"]["output"]>().toEqualTypeOf<{ ok: true }>();
  type Message = InferAgentUIMessage<typeof agent>;
  type SearchPart = Extract<Message["parts"][number], { type: "tool-searchDocs" }>;
  expectTypeOf<Extract<SearchPart, { state: "output-available" }>["output"]>().toEqualTypeOf<{
    hits: string[];
  }>();
});
