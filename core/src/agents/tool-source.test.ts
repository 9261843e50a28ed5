import { jsonSchema } from "ai";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineCapability } from "../capabilities/define-capability.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createAgentRuntime } from "../runtime/create-agent-runtime.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createPai } from "./create-pai.ts";
import { defineAgent } from "./define-agent.ts";
import { defineToolSource } from "./tool-source.ts";

const ping = defineTool({
  id: "ping",
  description: "Ping",
  inputSchema: z.object({}),
  execute: () => ({ pong: true }),
});

/** A tool whose input is a JSON Schema given as is, as an MCP server's tools are. */
function remoteTool(name: string, calls: unknown[]) {
  return defineTool({
    id: `remote.${name}`,
    description: `Remote ${name}`,
    inputSchema: jsonSchema<{ n: number }>({
      type: "object",
      properties: { n: { type: "integer", minimum: 0 } },
      required: ["n"],
      additionalProperties: false,
    }),
    execute: (ctx) => {
      calls.push(ctx.input);
      return { doubled: ctx.input.n * 2 };
    },
  });
}

function namesOf(call: { tools?: Array<{ name: string }> | undefined }): string[] {
  return (call.tools ?? []).map((tool) => tool.name).sort();
}

describe("tool sources", () => {
  it("offers a tool the source adds during a run from the next model step on, with its JSON Schema as given", async () => {
    const calls: unknown[] = [];
    const offered: Record<string, unknown> = { remote_one: remoteTool("one", calls) };
    const asked: string[] = [];
    const remote = defineToolSource({
      tools: async ({ key, threadId }) => {
        asked.push(`${key}@${threadId}`);
        return { ...offered };
      },
    });
    const model = createScriptedModel({
      steps: [
        () => {
          // the server changes its list while the first step runs
          offered.remote_two = remoteTool("two", calls);
          return { toolCalls: [{ toolName: "remote_one", input: { n: 1 } }] };
        },
        { toolCalls: [{ toolName: "remote_two", input: { n: 2 } }] },
        { text: "done" },
      ],
    });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { helper: defineAgent({ tools: { ping, remote } }) } }),
      store: createMemoryThreadStore(),
      model,
    });
    const run = await runtime.run({ agentId: "helper", threadId: "t1", message: "go" });
    const result = await run.done;

    expect(result.status).toBe("completed");
    model.assertComplete();
    const steps = model.doStreamCalls;
    expect(namesOf(steps[0]!)).toEqual(["ping", "remote_one"]);
    expect(namesOf(steps[1]!)).toEqual(["ping", "remote_one", "remote_two"]);
    const schema = steps[1]!.tools?.find((tool) => tool.name === "remote_two") as { inputSchema: unknown };
    expect(schema.inputSchema).toEqual({
      type: "object",
      properties: { n: { type: "integer", minimum: 0 } },
      required: ["n"],
      additionalProperties: false,
    });
    expect(calls).toEqual([{ n: 1 }, { n: 2 }]);
    expect(asked.every((entry) => entry === "remote@t1")).toBe(true);
    await runtime.close();
  });

  it("takes a tool the source stops offering out of the model's list at the next step", async () => {
    const offered: Record<string, unknown> = { gone: remoteTool("gone", []) };
    const remote = defineToolSource({ tools: async () => ({ ...offered }) });
    const model = createScriptedModel({
      steps: [
        () => {
          delete offered.gone;
          return { toolCalls: [{ toolName: "ping", input: {} }] };
        },
        { text: "done" },
      ],
    });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { helper: defineAgent({ tools: { ping, remote } }) } }),
      store: createMemoryThreadStore(),
      model,
    });
    await (await runtime.run({ agentId: "helper", message: "go" })).done;
    expect(namesOf(model.doStreamCalls[0]!)).toEqual(["gone", "ping"]);
    expect(namesOf(model.doStreamCalls[1]!)).toEqual(["ping"]);
    await runtime.close();
  });

  it("keeps what a failing source offered before and reports its error", async () => {
    let fail = false;
    const errors: unknown[] = [];
    const remote = defineToolSource({
      tools: async () => {
        if (fail) throw new Error("server down");
        return { remote_one: remoteTool("one", []) };
      },
    });
    const model = createScriptedModel({
      steps: [
        () => {
          fail = true;
          return { toolCalls: [{ toolName: "ping", input: {} }] };
        },
        { text: "done" },
      ],
    });
    const agent = defineAgent({
      tools: { ping, remote },
      onRuntimeError: (error) => void errors.push(error),
    });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { helper: agent } }),
      store: createMemoryThreadStore(),
      model,
    });
    const result = await (await runtime.run({ agentId: "helper", message: "go" })).done;
    expect(result.status).toBe("completed");
    expect(namesOf(model.doStreamCalls[1]!)).toEqual(["ping", "remote_one"]);
    expect(errors.map((error) => (error as Error).message)).toContain("server down");
    await runtime.close();
  });

  it("fails the run with INVALID_ARGUMENT when a source offers a name the agent's own tool has", async () => {
    const remote = defineToolSource({ tools: async () => ({ ping: remoteTool("ping", []) }) });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { helper: defineAgent({ tools: { ping, remote } }) } }),
      store: createMemoryThreadStore(),
      model: createScriptedModel({ steps: [{ text: "never" }] }),
    });
    const error = await runtime.run({ agentId: "helper", message: "go" }).catch((caught: unknown) => caught);
    expect(PaiError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
    expect((error as Error).message).toMatch(/tool source "remote" offers "ping"/);
    await runtime.close();
  });

  it("refuses a runtime without a binding for a capability a source declares", () => {
    const box = defineCapability<"box", { open(): void }>({ name: "box", members: { open: true } });
    const remote = defineToolSource({ capabilities: { box }, tools: async () => ({}) });
    expect(() =>
      createAgentRuntime({
        pai: createPai({ agents: { helper: defineAgent({ tools: { remote } }) } }),
        store: createMemoryThreadStore(),
        model: createScriptedModel({ steps: [] }),
      }),
    ).toThrow(/tool "remote" of agent "helper" needs capability "box"/);
  });
});
