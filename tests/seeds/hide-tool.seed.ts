// Seed 001 "Hide a tool for some users", as written. Added: imports, deleteRecord.
import { defineAgent, defineTool } from "@pai/core";
import { z } from "zod";
import { searchDocs } from "./search-docs.seed.ts";

const deleteRecord = defineTool({
  id: "deleteRecord",
  description: "Delete a record",
  inputSchema: z.object({ recordId: z.string() }),
  execute: (ctx) => ({ deleted: ctx.input.recordId }),
});

export const agent = defineAgent({
  tools: {
    searchDocs,
    deleteRecord: {
      tool: deleteRecord,
      enabled: ({ runtimeContext }) => runtimeContext.permissions.canDelete,
    },
  },
});
