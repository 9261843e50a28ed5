import type { LanguageModelV4Prompt } from "@ai-sdk/provider";
import { type AnyAgentDefinition, createAgentRuntime, createMemoryThreadStore, createPai } from "@pai/core";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { describe, expect, it } from "vitest";
import { assistantAgent } from "./assistant-agent.seed.ts";
import { agent as backendAgent } from "./backend-tools.seed.ts";
import { agent as conditionalAgent, deletedAccounts } from "./conditional-availability.seed.ts";
import { agent as hideAgent } from "./hide-tool.seed.ts";
import { agent as outputAgent, recorded } from "./observing-tool-output.seed.ts";
import { agent as contextAgent, created } from "./tool-context.seed.ts";

/** Runs one agent on the scripted model and returns what the model saw and the run's result. */
async function play(agent: AnyAgentDefinition, steps: ScriptedStep[], identity?: unknown) {
  const model = createScriptedModel({ steps });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { seed: agent } }),
    store: createMemoryThreadStore(),
    overrideModel: model,
  });
  const result = await (await runtime.run({ agentId: "seed", identity, message: "go" })).done;
  await runtime.close();
  model.assertComplete();
  return { result, model };
}

function toolResult(prompt: LanguageModelV4Prompt | undefined): unknown {
  for (const message of prompt ?? []) {
    if (message.role === "tool") return (message.content[0] as { output: unknown }).output;
  }
  return undefined;
}

describe("the documented snippets run as written", () => {
  it("Backend Tools: createTask reads the runtime context as is", async () => {
    const tasks = {
      create: async (input: { title: string; workspaceId: string }) => ({
        id: `${input.workspaceId}:${input.title}`,
      }),
    };
    const agent = { ...backendAgent, runtimeContext: async () => ({ tasks, workspace: { id: "w1" } }) };
    const { model } = await play(agent, [
      { toolCalls: [{ toolName: "createTask", input: { title: "Ship" } }] },
      { text: "created" },
    ]);
    expect(toolResult(model.doStreamCalls[1]?.prompt)).toEqual({
      type: "json",
      value: { taskId: "w1:Ship" },
    });
  });

  it("Conditional Availability: deleteAccount is hidden and refused unless permitted", async () => {
    const steps: ScriptedStep[] = [
      { toolCalls: [{ toolName: "deleteAccount", input: { accountId: "a1" } }] },
      { text: "" },
    ];
    const denied = await play(conditionalAgent, steps, { userId: "guest", workspaceId: "w1" });
    expect(denied.model.doStreamCalls[0]?.tools ?? []).toEqual([]);
    expect(deletedAccounts).toEqual([]);
    const allowed = await play(conditionalAgent, steps, { userId: "admin", workspaceId: "w1" });
    expect(allowed.model.doStreamCalls[0]?.tools?.map((tool) => tool.name)).toEqual(["deleteAccount"]);
    expect(deletedAccounts).toEqual(["a1"]);
  });

  it("Tool Context: mapContext projects the runtime context onto the tool's contextSchema", async () => {
    const { model } = await play(contextAgent, [
      { toolCalls: [{ toolName: "createTask", input: { title: "Plan" } }] },
      { text: "" },
    ]);
    expect(created).toEqual([{ workspaceId: "w7", title: "Plan" }]);
    expect(toolResult(model.doStreamCalls[1]?.prompt)).toEqual({ type: "json", value: { taskId: "w7-1" } });
  });

  it("Observing Tool Output: onOutput records the typed output", async () => {
    await play(
      outputAgent,
      [{ toolCalls: [{ toolName: "openDocument", input: { docId: "d9" } }] }, { text: "" }],
      { userId: "u" },
    );
    expect(recorded).toEqual([["d9", 3]]);
  });

  it("Tools: the assistant agent runs searchDocs with its runtime context", async () => {
    const { model, result } = await play(
      assistantAgent,
      [{ toolCalls: [{ toolName: "searchDocs", input: { query: "billing" } }] }, { text: "Found it." }],
      { userId: "u1", workspaceId: "acme" },
    );
    expect(result.text).toBe("Found it.");
    expect(model.doStreamCalls[0]?.prompt[0]).toMatchObject({
      role: "system",
      content: "Help with this workspace. Prefer tools over guessing.",
    });
    expect(toolResult(model.doStreamCalls[1]?.prompt)).toEqual({
      type: "json",
      value: { hits: [{ title: "billing in acme", url: "https://docs.example/acme/billing" }] },
    });
  });

  it("Hide a tool for some users: the model does not see a disabled tool", async () => {
    const docs = { search: async (query: string) => [{ title: query, url: `/${query}` }] };
    const agent = {
      ...hideAgent,
      runtimeContext: async () => ({ permissions: { canDelete: false }, workspaceId: "w", docs }),
    };
    const { model } = await play(agent, [
      { toolCalls: [{ toolName: "searchDocs", input: { query: "x" } }] },
      { text: "" },
    ]);
    expect(model.doStreamCalls[0]?.tools?.map((tool) => tool.name)).toEqual(["searchDocs"]);
    expect(toolResult(model.doStreamCalls[1]?.prompt)).toEqual({
      type: "json",
      value: { hits: [{ title: "x", url: "/x" }] },
    });
  });
});
