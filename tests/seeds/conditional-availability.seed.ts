// Seed 000 "Conditional Availability", as written. Added: imports, deleteAccount, loadPermissions.
import { defineAgent, defineTool } from "@pai/core";
import { z } from "zod";

export const deletedAccounts: string[] = [];

export const deleteAccount = defineTool({
  id: "deleteAccount",
  description: "Delete the user's account",
  inputSchema: z.object({ accountId: z.string() }),
  execute: (ctx) => {
    deletedAccounts.push(ctx.input.accountId);
    return { deleted: ctx.input.accountId };
  },
});

export async function loadPermissions(userId: string, workspaceId: string) {
  return { canDeleteAccounts: userId === "admin" && workspaceId === "w1" };
}

export const agent = defineAgent({
  runtimeContext: async ({ identity }) => ({
    permissions: await loadPermissions(identity.userId, identity.workspaceId),
  }),
  tools: {
    deleteAccount: {
      tool: deleteAccount,
      enabled: ({ runtimeContext }) => runtimeContext.permissions.canDeleteAccounts,
    },
  },
});
