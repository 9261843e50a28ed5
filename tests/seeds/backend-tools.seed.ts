// Seed 000 "Backend Tools", as written. Added: the defineAgent import.
import { defineAgent, defineTool } from "@pai/core";
import { z } from "zod";

export const createTask = defineTool({
  id: "createTask",
  description: "Create a workspace task",

  inputSchema: z.object({
    title: z.string(),
    description: z.string().optional(),
  }),

  outputSchema: z.object({
    taskId: z.string(),
  }),

  execute: async (ctx) => {
    const task = await ctx.context.tasks.create(
      {
        workspaceId: ctx.context.workspace.id,
        title: ctx.input.title,
        description: ctx.input.description,
      },
      { signal: ctx.signal },
    );

    return { taskId: task.id };
  },
});

export const agent = defineAgent({
  tools: {
    createTask,
  },
});
