// Seed 000 "Tool Context", as written. Added: imports, createTaskInput/Output, identity, loadWorkspace, loadStores.
import { defineAgent, defineTool } from "@pai/core";
import { z } from "zod";

const createTaskInput = z.object({ title: z.string() });
const createTaskOutput = z.object({ taskId: z.string() });
const identity = { workspaceId: "w7" };
export const created: Array<{ workspaceId: string; title: string }> = [];
async function loadWorkspace(id: string) {
  return { id, name: `Workspace ${id}` };
}
async function loadStores(_workspaceId: string): Promise<{ tasks: TaskStore }> {
  return {
    tasks: {
      create: async (input) => {
        created.push(input);
        return { taskId: `${input.workspaceId}-${created.length}` };
      },
    },
  };
}

type TaskStore = {
  create(input: { workspaceId: string; title: string }): Promise<{ taskId: string }>;
};

export const createTask = defineTool({
  id: "createTask",
  description: "Create a workspace task",
  inputSchema: createTaskInput,
  outputSchema: createTaskOutput,
  contextSchema: z.object({
    workspaceId: z.string(),
    tasks: z.custom<TaskStore>(),
  }),
  execute: async (ctx) => {
    return ctx.context.tasks.create({
      workspaceId: ctx.context.workspaceId,
      title: ctx.input.title,
    });
  },
});

export const agent = defineAgent({
  runtimeContext: async ({ scope }) => ({
    workspace: await loadWorkspace(identity.workspaceId),
    stores: await loadStores(identity.workspaceId),
  }),
  tools: {
    createTask: {
      tool: createTask,
      mapContext: ({ runtimeContext }) => ({
        workspaceId: runtimeContext.workspace.id,
        tasks: runtimeContext.stores.tasks,
      }),
    },
  },
});
