import { expectTypeOf, test } from "vitest";
import { z } from "zod";
import {
  createPai,
  type InferAgentUIMessage,
  type InferPaiContract,
  type InferToolPath,
} from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { defineTool } from "../tools/define-tool.ts";
import type { AgentManifest, PaiManifest, ToolManifest, ToolSourceManifest } from "./manifest.ts";

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
    path: ["searchDocs"];
  }>();
  expectTypeOf<InferPaiContract<typeof pai>["docs"]["gated"]["output"]>().toEqualTypeOf<{ ok: true }>();
  type Message = InferAgentUIMessage<typeof agent>;
  type SearchPart = Extract<Message["parts"][number], { type: "tool-searchDocs" }>;
  expectTypeOf<Extract<SearchPart, { state: "output-available" }>["output"]>().toEqualTypeOf<{
    hits: string[];
  }>();
});

test("the contract types where each tool's calls can wait: the tool, or a nested tool at any depth", () => {
  const approve = defineTool({
    id: "approve",
    description: "Ask",
    inputSchema: z.object({ what: z.string() }),
    execute: (ctx) => ctx.suspend(ctx.input.what),
  });
  const review = defineTool({
    id: "review",
    description: "Review",
    inputSchema: z.object({}),
    tools: { approve },
    execute: (ctx) => ctx.tools.approve({ what: "it" }),
  });
  const checkout = defineTool({
    id: "checkout",
    description: "Check out",
    inputSchema: z.object({}),
    tools: { review, search: searchDocs },
    execute: (ctx) => ctx.tools.review({}),
  });
  const shop = defineAgent({ tools: { checkout, gated: { tool: gated, enabled: true } } });
  type Tools = InferPaiContract<ReturnType<typeof createPai<{ shop: typeof shop }>>>["shop"];
  expectTypeOf<Tools["checkout"]["path"]>().toEqualTypeOf<
    ["checkout"] | ["checkout", "review"] | ["checkout", "review", "approve"] | ["checkout", "search"]
  >();
  expectTypeOf<Tools["gated"]["path"]>().toEqualTypeOf<["gated"]>();
  expectTypeOf<InferToolPath<"review", typeof review>>().toEqualTypeOf<["review"] | ["review", "approve"]>();
});

test("the manifest's JSON contract: its fields as they were, and each agent's tool sources added", () => {
  expectTypeOf<PaiManifest>().toEqualTypeOf<{ version: 1; agents: AgentManifest[] }>();
  expectTypeOf<AgentManifest>().toEqualTypeOf<{
    id: string;
    name: string;
    tools: ToolManifest[];
    toolSources: ToolSourceManifest[];
  }>();
  expectTypeOf<ToolSourceManifest>().toEqualTypeOf<{
    key: string;
    name: string;
    description: string | null;
    capabilities: string[];
  }>();
  expectTypeOf<ToolManifest>().toEqualTypeOf<{
    key: string;
    id: string;
    description: string;
    inputSchema: unknown;
    outputSchema: unknown;
    hasEnabledGate: boolean;
    clientExecuted: boolean;
    capabilities: string[];
    dataChannels: string[];
    nestedTools: Record<string, string>;
  }>();
});
