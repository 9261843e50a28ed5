import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent, type RuntimeErrorInfo } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import type { ToolExecuteContext } from "../tools/tool-context.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

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

const tasks: TaskStore = { create: async (input) => ({ taskId: `${input.workspaceId}/${input.title}` }) };

function scripted() {
  return createScriptedModel({
    steps: [
      { toolCalls: [{ toolName: "createTask", input: { title: "write" }, toolCallId: "c1" }] },
      { text: "ok" },
    ],
  });
}

describe("tool context", () => {
  it("hands execute the mapped context, parsed with contextSchema", async () => {
    const agent = defineAgent({
      identity: z.object({ userId: z.string(), workspaceId: z.string() }),
      runtimeContext: async ({ identity }) => ({
        workspace: { id: identity.workspaceId },
        stores: { tasks },
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
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { agent } }),
      store: createMemoryThreadStore(),
      model: scripted(),
    });
    const run = await runtime.run({
      agentId: "agent",
      identity: { userId: "u", workspaceId: "w9" },
      message: "go",
    });
    const result = await run.done;
    const part = result.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-createTask") as {
      output?: unknown;
    };
    expect(part.output).toEqual({ taskId: "w9/write" });
  });

  it("fails the call with an error naming the tool when the mapped context does not match contextSchema", async () => {
    const errors: Array<{ error: unknown; info: RuntimeErrorInfo }> = [];
    const agent = defineAgent({
      runtimeContext: () => ({ workspace: { id: 7 }, stores: { tasks } }),
      tools: {
        createTask: {
          tool: createTask,
          mapContext: ({ runtimeContext }) => ({
            workspaceId: runtimeContext.workspace.id as unknown as string,
            tasks: runtimeContext.stores.tasks,
          }),
        },
      },
      onRuntimeError: (error, info) => {
        errors.push({ error, info });
      },
    });
    const model = scripted();
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { agent } }),
      store: createMemoryThreadStore(),
      model,
    });
    const result = await (await runtime.run({ agentId: "agent", message: "go" })).done;
    expect(result.status).toBe("completed");
    expect(errors).toHaveLength(1);
    const error = errors[0]?.error;
    expect(PaiError.hasCode(error, "INVALID_CONTEXT")).toBe(true);
    expect((error as Error).message).toMatch(
      /tool "createTask" \(id "createTask"\) of agent "agent".*workspaceId/s,
    );
  });

  it("gives a tool without contextSchema the runtime context as is, and fills thread and agent ids", async () => {
    let seen: ToolExecuteContext | undefined;
    const loose = defineTool({
      id: "loose",
      description: "reads context",
      inputSchema: z.object({}),
      execute: (ctx) => {
        seen = ctx as unknown as ToolExecuteContext;
        return { workspace: ctx.context.workspace.id as string };
      },
    });
    const model = createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "peek", input: {}, toolCallId: "c9" }] }, { text: "" }],
    });
    const agent = defineAgent({
      runtimeContext: () => ({ workspace: { id: "w1" } }),
      tools: { peek: loose },
    });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { registryKey: agent } }),
      store: createMemoryThreadStore(),
      model,
    });
    const run = await runtime.run({ agentId: "registryKey", message: "go" });
    await run.done;
    expect(seen?.context).toEqual({ workspace: { id: "w1" } });
    expect(seen?.agentId).toBe("registryKey");
    expect(seen?.thread).toEqual({
      threadId: run.threadId,
      runId: run.runId,
      toolCallId: "c9",
      toolName: "peek",
    });
    expect(seen?.entry).toEqual({ type: "initial" });
    expect(seen?.signal).toBeInstanceOf(AbortSignal);
  });
});
