// Seed 001 "Put the workspace and your services on runtimeContext", as written.
// Added: imports, createDocsClient, loadPermissions.
import { openai } from "@ai-sdk/openai";
import { defineAgent } from "@pai/core";
import { z } from "zod";
import { searchDocs } from "./search-docs.seed.ts";

function createDocsClient() {
  return {
    search: async (query: string, input: { workspaceId: string; signal: AbortSignal }) => [
      {
        title: `${query} in ${input.workspaceId}`,
        url: `https://docs.example/${input.workspaceId}/${query}`,
      },
    ],
  };
}
async function loadPermissions(identity: { userId: string; workspaceId: string }) {
  return { canDelete: identity.userId === "admin" };
}

export const assistantAgent = defineAgent({
  name: "assistant",
  model: openai("gpt-4.1-mini"),
  identity: z.object({
    userId: z.string(),
    workspaceId: z.string(),
  }),
  runtimeContext: async ({ identity }) => ({
    workspaceId: identity.workspaceId,
    docs: createDocsClient(),
    permissions: await loadPermissions(identity),
  }),
  instructions: "Help with this workspace. Prefer tools over guessing.",
  tools: { searchDocs },
});
