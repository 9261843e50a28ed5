import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createAgentRuntime } from "../runtime/create-agent-runtime.ts";
import { createScriptedModel, type ScriptedStep } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import type { CapabilityLifetime } from "../threads/thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import type { CapabilityBinding } from "./capability-binding.ts";
import { defineCapability } from "./define-capability.ts";

interface Counter {
  next(): Promise<number>;
}

const counter = defineCapability<"counter", Counter>({ name: "counter", defaultLifetime: "thread" });

/** A binding of our own interface: each resource is a counter; records what was provisioned and released. */
function fakeBinding(
  options: { lifetime?: CapabilityLifetime; idleTtlMs?: number; provisionDelayMs?: number } = {},
) {
  const live = new Set<string>();
  const provisioned: string[] = [];
  const released: string[] = [];
  let seq = 0;
  const binding: CapabilityBinding<Counter> = {
    kind: "pai.capability-binding",
    capability: "counter",
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
    async provision(request) {
      const id = `r${++seq}`;
      live.add(id);
      provisioned.push(`${id}@${request.leaseKey}`);
      await new Promise((resolve) => setTimeout(resolve, options.provisionDelayMs ?? 1));
      let value = 0;
      return {
        facade: { next: async () => ++value },
        resourceId: id,
        release: async () => {
          live.delete(id);
          released.push(id);
        },
      };
    },
    async close() {},
  };
  return { binding, live, provisioned, released };
}

const count = defineTool({
  id: "count",
  description: "Count up",
  inputSchema: z.object({}),
  capabilities: { counter },
  execute: async (ctx) => ({ value: await ctx.capabilities.counter.next() }),
});
const idle = defineTool({
  id: "idle",
  description: "Does nothing",
  inputSchema: z.object({}),
  execute: () => ({}),
});

function setup(steps: ScriptedStep[], options: Parameters<typeof fakeBinding>[0] = {}) {
  const fake = fakeBinding(options);
  const model = createScriptedModel({ steps, fallback: { text: "done" } });
  const agent = defineAgent({ identity: z.object({ userId: z.string() }), tools: { count, idle } });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { a: agent } }),
    store: createMemoryThreadStore(),
    model,
    capabilities: { counter: fake.binding },
  });
  return { ...fake, runtime };
}

const tenCalls: ScriptedStep = {
  toolCalls: Array.from({ length: 10 }, () => ({ toolName: "count", input: {} })),
};

describe("the capability layer", () => {
  it("fails at creation when a registered tool needs a capability with no binding, naming both", () => {
    const agent = defineAgent({ tools: { count } });
    let error: unknown;
    try {
      createAgentRuntime({
        pai: createPai({ agents: { a: agent } }),
        store: createMemoryThreadStore(),
        capabilities: {},
      } as never);
    } catch (caught) {
      error = caught;
    }
    expect(PaiError.hasCode(error, "MISSING_CAPABILITY")).toBe(true);
    expect((error as Error).message).toContain('tool "count"');
    expect((error as Error).message).toContain('capability "counter"');
  });

  it("acquires nothing for a run whose tools never touch the capability", async () => {
    const { runtime, provisioned } = setup([{ toolCalls: [{ toolName: "idle", input: {} }] }]);
    await (await runtime.run({ agentId: "a", identity: { userId: "u" }, message: "x" })).done;
    expect(provisioned).toEqual([]);
    await runtime.close();
  });

  it("gives ten parallel calls on one thread one resource, kept across runs and released on endThread", async () => {
    const { runtime, provisioned, live, released } = setup([
      tenCalls,
      { text: "" },
      { toolCalls: [{ toolName: "count", input: {} }] },
    ]);
    const first = await runtime.run({ agentId: "a", identity: { userId: "u" }, message: "x" });
    await first.done;
    expect(provisioned).toHaveLength(1);
    expect(provisioned[0]).toMatch(/@thread:/);
    const second = await runtime.run({
      agentId: "a",
      identity: { userId: "u" },
      threadId: first.threadId,
      message: "again",
    });
    const result = await second.done;
    const last = result.messages
      .flatMap((m) => m.parts)
      .filter((p) => p.type === "tool-count")
      .at(-1) as { output: { value: number } };
    expect(last.output.value).toBe(11);
    expect(provisioned).toHaveLength(1);
    expect(await runtime.store.listLeases({ capability: "counter" })).toHaveLength(1);
    await runtime.endThread(first.threadId);
    expect(live.size).toBe(0);
    expect(released).toEqual(["r1"]);
    expect(await runtime.store.listLeases({ capability: "counter" })).toEqual([]);
    await runtime.close();
  });

  it("releases run leases at run end, keys user leases by identity, shares process leases", async () => {
    const perRun = setup([tenCalls], { lifetime: "run" });
    const run = await perRun.runtime.run({ agentId: "a", identity: { userId: "u" }, message: "x" });
    await run.done;
    expect(perRun.provisioned).toEqual([`r1@run:${run.runId}`]);
    expect(perRun.live.size).toBe(0);
    await perRun.runtime.close();

    const perUser = setup(
      [
        { toolCalls: [{ toolName: "count", input: {} }] },
        { text: "" },
        { toolCalls: [{ toolName: "count", input: {} }] },
        { text: "" },
        { toolCalls: [{ toolName: "count", input: {} }] },
      ],
      { lifetime: "user" },
    );
    for (const userId of ["ann", "ann", "bob"])
      await (await perUser.runtime.run({ agentId: "a", identity: { userId }, message: "x" })).done;
    expect(perUser.provisioned).toEqual(["r1@user:user:ann", "r2@user:user:bob"]);
    await perUser.runtime.close();
    expect(perUser.live.size).toBe(0);

    const shared = setup(
      [
        { toolCalls: [{ toolName: "count", input: {} }] },
        { text: "" },
        { toolCalls: [{ toolName: "count", input: {} }] },
      ],
      { lifetime: "process" },
    );
    for (const userId of ["ann", "bob"])
      await (await shared.runtime.run({ agentId: "a", identity: { userId }, message: "x" })).done;
    expect(shared.provisioned).toEqual(["r1@process:process"]);
    await shared.runtime.close();
  });

  it("releases thread leases idle past their TTL", async () => {
    const { runtime, live } = setup([{ toolCalls: [{ toolName: "count", input: {} }] }], { idleTtlMs: 5 });
    await (await runtime.run({ agentId: "a", identity: { userId: "u" }, message: "x" })).done;
    expect(live.size).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 10));
    await runtime.sweepIdleCapabilities();
    expect(live.size).toBe(0);
    await runtime.close();
  });

  it("leaves nothing behind when a run is cancelled while its resource is provisioning", async () => {
    const { runtime, live, released } = setup([{ toolCalls: [{ toolName: "count", input: {} }] }], {
      provisionDelayMs: 100,
    });
    const stop = new AbortController();
    const run = await runtime.run({
      agentId: "a",
      identity: { userId: "u" },
      message: "x",
      signal: stop.signal,
    });
    setTimeout(() => stop.abort(), 20);
    expect((await run.done).status).toBe("cancelled");
    await new Promise((resolve) => setTimeout(resolve, 120));
    expect(live.size).toBe(0);
    expect(released).toEqual(["r1"]);
    expect(await runtime.store.listLeases({})).toEqual([]);
    await runtime.close();
  });
});

describe("connection reports", () => {
  it("streams what a bound resource reports as a capability status event of the run", async () => {
    const binding: CapabilityBinding<Counter> = {
      kind: "pai.capability-binding",
      capability: "counter",
      async provision() {
        let value = 0;
        const facade = { next: async () => ++value };
        return {
          facade,
          resourceId: "r1",
          release: async () => {},
          bind: ({ report }) => ({
            next: async () => {
              report?.({
                target: "example.com:443",
                decision: "allowed",
                address: "93.184.215.14",
                bytesUp: 10,
                bytesDown: 20,
                durationMs: 5,
              });
              return facade.next();
            },
          }),
        };
      },
      async close() {},
    };
    await using runtime = createAgentRuntime({
      pai: createPai({ agents: { a: defineAgent({ tools: { count } }) } }),
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [{ toolCalls: [{ toolName: "count", input: {} }] }],
        fallback: { text: "ok" },
      }),
      capabilities: { counter: binding },
    });
    const run = await runtime.run({ agentId: "a", message: "x" });
    const events: unknown[] = [];
    for await (const chunk of run.stream as AsyncIterable<{ type: string; data?: unknown }>) {
      if (chunk.type === "data-pai-capability") events.push(chunk.data);
    }
    expect((await run.done).status).toBe("completed");
    expect(events).toContainEqual({
      capability: "counter",
      lifetime: "thread",
      status: "connection",
      resourceId: "r1",
      connection: {
        target: "example.com:443",
        decision: "allowed",
        address: "93.184.215.14",
        bytesUp: 10,
        bytesDown: 20,
        durationMs: 5,
      },
    });
  });
});
