// Seed 001 "Tools" (server/tools/search-docs.ts), as written.
import { defineTool } from "@pai/core";
import { z } from "zod";

type DocsSearch = {
  search: (
    query: string,
    input: { workspaceId: string; signal: AbortSignal },
  ) => Promise<Array<{ title: string; url: string }>>;
};

export const searchDocs = defineTool({
  id: "searchDocs",
  description: "Search workspace documentation",
  inputSchema: z.object({ query: z.string() }),
  outputSchema: z.object({
    hits: z.array(z.object({ title: z.string(), url: z.string() })),
  }),
  contextSchema: z.object({
    workspaceId: z.string(),
    docs: z.custom<DocsSearch>(),
  }),
  execute: async (ctx) => {
    const hits = await ctx.context.docs.search(ctx.input.query, {
      workspaceId: ctx.context.workspaceId,
      signal: ctx.signal,
    });
    return { hits };
  },
});
