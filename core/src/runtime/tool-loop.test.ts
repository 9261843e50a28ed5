import type { UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

const echo = defineTool({
  id: "echo.v1",
  description: "Echo the text back",
  inputSchema: z.object({ text: z.string() }),
  outputSchema: z.object({ echoed: z.string() }),
  execute: (ctx) => ({ echoed: ctx.input.text }),
});

const remove = defineTool({
  id: "deleteRecord",
  description: "Delete a record",
  inputSchema: z.object({ id: z.string() }),
  execute: () => ({ deleted: true }),
});

function toolNamesOf(call: { tools?: Array<{ name: string }> | undefined }): string[] {
  return (call.tools ?? []).map((tool) => tool.name).sort();
}

function toolParts(messages: UIMessage[]) {
  return messages
    .flatMap((message) => message.parts)
    .filter((part) => part.type.startsWith("tool-")) as Array<{
    type: string;
    state: string;
    output?: unknown;
    errorText?: string;
    toolMetadata?: { paiToolId?: string };
  }>;
}

describe("the tool loop", () => {
  it("runs several model steps on streamText and records the tool id on every stored tool part", async () => {
    const model = createScriptedModel({
      steps: [
        { toolCalls: [{ toolName: "echo", input: { text: "one" } }] },
        { toolCalls: [{ toolName: "say", input: { text: "two" } }] },
        { text: "done" },
      ],
    });
    const pai = createPai({ agents: { helper: defineAgent({ tools: { echo, say: echo } }) } });
    const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore(), model });
    const run = await runtime.run({ agentId: "helper", message: "go" });
    const result = await run.done;

    expect(result.status).toBe("completed");
    expect(result.text).toBe("done");
    model.assertComplete();
    const parts = toolParts(result.messages);
    expect(parts.map((part) => [part.type, part.toolMetadata?.paiToolId, part.output])).toEqual([
      ["tool-echo", "echo.v1", { echoed: "one" }],
      ["tool-say", "echo.v1", { echoed: "two" }],
    ]);
    const stored = await runtime.store.loadMessages(run.threadId);
    expect(toolParts(stored).map((part) => part.toolMetadata?.paiToolId)).toEqual(["echo.v1", "echo.v1"]);
    await runtime.close();
  });

  it("leaves a disabled tool out of every model request, refuses to run it, and keeps it in the manifest", async () => {
    let executed = 0;
    const guarded = defineTool({
      id: "deleteRecord",
      description: "Delete a record",
      inputSchema: z.object({ id: z.string() }),
      execute: () => {
        executed += 1;
        return { deleted: true };
      },
    });
    const seen: unknown[] = [];
    const model = createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "deleteRecord", input: { id: "r1" } }] }, { text: "ok" }],
    });
    const agent = defineAgent({
      identity: z.object({ userId: z.string(), canDelete: z.boolean() }),
      runtimeContext: ({ identity }) => ({ permissions: { canDelete: identity.canDelete } }),
      tools: {
        echo,
        deleteRecord: {
          tool: guarded,
          enabled: async ({ runtimeContext, identity, threadId, signal, clientData }) => {
            seen.push({
              identity,
              threadId: typeof threadId,
              signal: signal instanceof AbortSignal,
              clientData,
            });
            return runtimeContext.permissions.canDelete;
          },
        },
      },
    });
    const pai = createPai({ agents: { admin: agent } });
    const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore(), model });
    const run = await runtime.run({
      agentId: "admin",
      identity: { userId: "u1", canDelete: false },
      clientData: { from: "client" },
      message: "delete r1",
    });
    const result = await run.done;

    expect(model.doStreamCalls).toHaveLength(2);
    for (const call of model.doStreamCalls) expect(toolNamesOf(call)).toEqual(["echo"]);
    expect(executed).toBe(0);
    expect(toolParts(result.messages)[0]).toMatchObject({ state: "output-error" });
    expect(seen.length).toBeGreaterThanOrEqual(2);
    expect(seen[0]).toEqual({
      identity: { userId: "u1", canDelete: false },
      threadId: "string",
      signal: true,
      clientData: { from: "client" },
    });
    const manifest = pai.manifest();
    expect(manifest.agents[0]?.tools.map((tool) => [tool.key, tool.hasEnabledGate])).toEqual([
      ["echo", false],
      ["deleteRecord", true],
    ]);
    await runtime.close();
  });

  it("resolves enabled before every step, so a tool can appear mid-run", async () => {
    let steps = 0;
    const model = createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "echo", input: { text: "a" } }] }, { text: "end" }],
    });
    const pai = createPai({
      agents: {
        a: defineAgent({
          tools: { echo, deleteRecord: { tool: remove, enabled: () => steps++ > 0 } },
        }),
      },
    });
    const runtime = createAgentRuntime({ pai, store: createMemoryThreadStore(), model });
    await (await runtime.run({ agentId: "a", message: "x" })).done;
    expect(toolNamesOf(model.doStreamCalls[0]!)).toEqual(["echo"]);
    expect(toolNamesOf(model.doStreamCalls[1]!)).toEqual(["deleteRecord", "echo"]);
    await runtime.close();
  });
});
