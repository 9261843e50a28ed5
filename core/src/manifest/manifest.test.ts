import { expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { defineToolSource } from "../agents/tool-source.ts";
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

it("lists each agent's tool sources by key, name, description and capabilities, without asking them for tools", () => {
  let asked = 0;
  const plugins = defineToolSource({
    description: "The workspace's plugins",
    capabilities: { box },
    tools: async () => {
      asked += 1;
      return { openBox };
    },
  });
  const remote = defineToolSource({ name: "remote-server", tools: async () => ({}) });
  const pai = createPai({
    agents: {
      docs: defineAgent({ tools: { searchDocs, plugins, remote } }),
      plain: defineAgent({ tools: { searchDocs } }),
    },
  });
  const manifest = pai.manifest();
  expect(JSON.parse(JSON.stringify(manifest))).toEqual(manifest);
  const [docs, plain] = manifest.agents;
  // A source's tools are known at run time only: the agent's `tools` are its registrations, as before.
  expect(docs?.tools.map((tool) => tool.key)).toEqual(["searchDocs"]);
  expect(docs?.toolSources).toEqual([
    { key: "plugins", name: "plugins", description: "The workspace's plugins", capabilities: ["box"] },
    { key: "remote", name: "remote-server", description: null, capabilities: [] },
  ]);
  expect(plain?.toolSources).toEqual([]);
  expect(asked).toBe(0);
});
