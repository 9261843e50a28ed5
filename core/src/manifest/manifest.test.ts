import { expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { defineCapability } from "../capabilities/define-capability.ts";
import { defineTool } from "../tools/define-tool.ts";

const box = defineCapability<"box", { open(): Promise<void> }>({ name: "box", members: { open: true } });

const searchDocs = defineTool({
  id: "searchDocs",
  description: "Search workspace documentation",
  inputSchema: z.object({ query: z.string() }),
  outputSchema: z.object({ hits: z.array(z.object({ title: z.string(), url: z.string() })) }),
  data: { progress: z.number() },
  execute: () => ({ hits: [] }),
});
const openBox = defineTool({
  id: "openBox.v2",
  description: "Open the box",
  inputSchema: z.object({}),
  capabilities: { box },
  execute: async (ctx) => {
    await ctx.capabilities.box.open();
    return { opened: true };
  },
});
const pickFile = defineTool({
  id: "pickFile",
  description: "Ask the user to pick a file (runs in the browser)",
  inputSchema: z.object({ accept: z.string() }),
  outputSchema: z.object({ name: z.string() }),
});

it("describes every agent and tool as JSON: key, id, description, schemas, enabled gate", () => {
  const pai = createPai({
    agents: {
      docs: defineAgent({
        name: "Docs helper",
        tools: { searchDocs, find: searchDocs, openBox: { tool: openBox, enabled: false }, pickFile },
      }),
    },
  });
  const manifest = pai.manifest();
  expect(JSON.parse(JSON.stringify(manifest))).toEqual(manifest);
  const [agent] = manifest.agents;
  expect(agent?.id).toBe("docs");
  expect(agent?.name).toBe("Docs helper");
  expect(agent?.tools.map((t) => [t.key, t.id, t.hasEnabledGate, t.clientExecuted, t.capabilities])).toEqual([
    ["searchDocs", "searchDocs", false, false, []],
    ["find", "searchDocs", false, false, []],
    ["openBox", "openBox.v2", true, false, ["box"]],
    ["pickFile", "pickFile", false, true, []],
  ]);
  const search = agent?.tools[0];
  expect(search?.description).toBe("Search workspace documentation");
  expect(search?.inputSchema).toMatchObject({
    type: "object",
    properties: { query: { type: "string" } },
    required: ["query"],
  });
  expect(search?.outputSchema).toMatchObject({ type: "object", properties: { hits: { type: "array" } } });
  expect(search?.dataChannels).toEqual(["progress"]);
  expect(agent?.tools[2]?.outputSchema).toBeNull();
});
