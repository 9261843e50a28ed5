import { expect, it } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { defineCapability } from "../capabilities/define-capability.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

const slowEngine = defineCapability<"slowEngine", object>({ name: "slowEngine", defaultLifetime: "thread" });

it("keeps heartbeating and holding its thread while a reconcile pass hangs on a slow engine", async () => {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let reaps = 0;
  const binding: CapabilityBinding<object> = {
    kind: "pai.capability-binding",
    capability: "slowEngine",
    async provision() {
      return { facade: {}, resourceId: "r1", release: async () => {} };
    },
    // The first reap answers; the next ones take as long as the test wants (an engine listing slowly).
    async reapUnowned() {
      reaps += 1;
      if (reaps > 1) await released;
    },
    async close() {},
  };
  const wait = defineTool({
    id: "wait",
    description: "Runs until the test releases it",
    inputSchema: z.object({}),
    capabilities: { slowEngine },
    execute: async () => {
      await released;
      return {};
    },
  });
  const store = createMemoryThreadStore();
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { a: defineAgent({ tools: { wait } }) } }),
    store,
    model: createScriptedModel({
      steps: [{ toolCalls: [{ toolName: "wait", input: {} }] }],
      fallback: { text: "ok" },
    }),
    capabilities: { slowEngine: binding },
    ownerId: "owner-busy",
    heartbeatIntervalMs: 20,
    ownerTtlMs: 1000,
    reconcileIntervalMs: 20,
  });
  await runtime.startCapabilities();
  const run = await runtime.run({ agentId: "a", message: "wait" });
  while (reaps < 2) await new Promise((resolve) => setTimeout(resolve, 10));
  const before = (await store.listOwners())[0]!.heartbeatAt;

  await new Promise((resolve) => setTimeout(resolve, 2500));

  // Past two owner TTLs, the pass still stuck in the reap: the heartbeat went on, and so did the thread's lease.
  expect(reaps).toBe(2);
  expect((await store.listOwners())[0]!.heartbeatAt).toBeGreaterThan(before + 2000);
  expect(await store.getThreadLease(run.threadId)).toMatchObject({ runId: run.runId, ownerId: "owner-busy" });
  release();
  expect((await run.done).status).toBe("completed");
  await runtime.close();
});
