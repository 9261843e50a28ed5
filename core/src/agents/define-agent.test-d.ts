import { expectTypeOf, test } from "vitest";
import { z } from "zod";
import { defineTool } from "../tools/define-tool.ts";
import { defineAgent } from "./define-agent.ts";

type TaskStore = { create(input: { workspaceId: string; title: string }): Promise<{ taskId: string }> };

const createTask = defineTool({
  id: "createTask",
  description: "Create a workspace task",
  inputSchema: z.object({ title: z.string() }),
  outputSchema: z.object({ taskId: z.string() }),
  contextSchema: z.object({ workspaceId: z.string(), tasks: z.custom<TaskStore>() }),
  execute: async (ctx) =>
    ctx.context.tasks.create({ workspaceId: ctx.context.workspaceId, title: ctx.input.title }),
});

declare const tasks: TaskStore;

test("direct registration compiles when the runtime context is assignable", () => {
  defineAgent({
    runtimeContext: async () => ({ workspaceId: "w", tasks, extra: 1 }),
    tools: { createTask },
  });
});

test("direct registration is refused when the runtime context does not fit", () => {
  defineAgent({
    runtimeContext: async () => ({ workspace: { id: "w" } }),
    // @ts-expect-error the runtime context lacks workspaceId and tasks: mapContext is required
    tools: { createTask },
  });
});

test("a configured registration without mapContext is refused for an incompatible context", () => {
  defineAgent({
    runtimeContext: async () => ({ workspace: { id: "w" } }),
    tools: {
      // @ts-expect-error mapContext is required
      createTask: { tool: createTask, enabled: true },
    },
  });
});

test("mapContext and onOutput are typed", () => {
  defineAgent({
    identity: z.object({ userId: z.string() }),
    runtimeContext: async ({ identity }) => ({ workspace: { id: identity.userId }, stores: { tasks } }),
    tools: {
      createTask: {
        tool: createTask,
        enabled: ({ runtimeContext }) => runtimeContext.workspace.id !== "",
        mapContext: ({ runtimeContext }) => ({
          workspaceId: runtimeContext.workspace.id,
          tasks: runtimeContext.stores.tasks,
        }),
        onOutput: ({ input, output, tool, call, identity }) => {
          expectTypeOf(input).toEqualTypeOf<{ title: string }>();
          expectTypeOf(output).toEqualTypeOf<{ taskId: string }>();
          expectTypeOf(tool.name).toBeString();
          expectTypeOf(call.toolCallId).toBeString();
          expectTypeOf(identity).toEqualTypeOf<{ userId: string }>();
        },
      },
    },
  });
});
