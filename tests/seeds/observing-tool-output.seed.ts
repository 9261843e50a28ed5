// Seed 000 "Observing Tool Output", as written. Added: imports, openDocument, loadRecentDocuments.
import { defineAgent, defineTool } from "@pai/core";
import { z } from "zod";

export const recorded: Array<[string, number]> = [];

export const openDocument = defineTool({
  id: "openDocument",
  description: "Open a document",
  inputSchema: z.object({ docId: z.string() }),
  outputSchema: z.object({ title: z.string(), revision: z.number() }),
  execute: (ctx) => ({ title: `Doc ${ctx.input.docId}`, revision: 3 }),
});

async function loadRecentDocuments(_userId: string) {
  return {
    record: async (docId: string, revision: number) => {
      recorded.push([docId, revision]);
    },
  };
}

export const agent = defineAgent({
  runtimeContext: async ({ identity }) => ({
    recents: await loadRecentDocuments(identity.userId),
  }),
  tools: {
    openDocument: {
      tool: openDocument,
      onOutput: async ({ runtimeContext, input, output }) => {
        await runtimeContext.recents.record(input.docId, output.revision);
      },
    },
  },
});
