import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import type { CapabilityBinding } from "../capabilities/capability-binding.ts";
import { defineCapability } from "../capabilities/define-capability.ts";
import { createLocalProcessProbe } from "../ownership/local-process-probe.ts";
import { createScriptedModel } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import { createAgentRuntime } from "./create-agent-runtime.ts";

/** The bound issue 10 sets: a dead process's containers are freed within a minute. */
const BOUND_MS = 60_000;

const thing = defineCapability<"thing", object>({ name: "thing", defaultLifetime: "thread" });
const useThing = defineTool({
  id: "useThing",
  description: "Uses the thing",
  inputSchema: z.object({}),
  capabilities: { thing },
  execute: () => ({}),
});

/** A binding over an engine of resource id → owner label, reaping what dead owners left. */
function engineBinding(engine: Map<string, string>): CapabilityBinding<object> {
  return {
    kind: "pai.capability-binding",
    capability: "thing",
    async provision() {
      throw new Error("not used");
    },
    async reapUnowned({ keepResourceIds, deadOwnerIds }) {
      for (const [id, owner] of engine)
        if (deadOwnerIds.has(owner) && !keepResourceIds.includes(id)) engine.delete(id);
    },
    async close() {},
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("the runtime's maintenance with its default intervals", () => {
  it("frees a dead process's resources within 60 s of its last heartbeat, whenever it died", async () => {
    vi.useFakeTimers();
    // Defaults: heartbeat every 5 s, owner TTL 20 s, reconcile every 15 s: a dead owner is known at 20 s and the
    // next reconcile (at most 15 s later, on a 5 s tick) frees it, so 40 s plus the reaping at worst. Every moment
    // of death within one reconcile period is tried.
    const worst: number[] = [];
    for (let offsetMs = 0; offsetMs < 15_000; offsetMs += 1000) {
      const store = createMemoryThreadStore();
      const engine = new Map([["warm-of-dead", "dead"]]);
      const runtime = createAgentRuntime({
        pai: createPai({ agents: { a: defineAgent({ tools: { useThing } }) } }),
        store,
        model: createScriptedModel({ steps: [] }),
        capabilities: { thing: engineBinding(engine) },
        ownerId: "survivor",
      });
      await runtime.startCapabilities();
      await vi.advanceTimersByTimeAsync(offsetMs);
      const diedAt = Date.now();
      await store.heartbeatOwner({ ownerId: "dead", host: "h", pid: 1, startedAt: 0, heartbeatAt: diedAt });
      while (engine.size > 0 && Date.now() - diedAt <= 2 * BOUND_MS) await vi.advanceTimersByTimeAsync(250);
      worst.push(Date.now() - diedAt);
      expect(engine.size).toBe(0);
      expect((await store.listOwners()).map((owner) => owner.ownerId)).toEqual(["survivor"]);
      await runtime.close();
    }
    expect(Math.max(...worst)).toBeLessThanOrEqual(BOUND_MS);
  });
});

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

describe.skipIf(process.platform !== "linux")("an owner gone from this machine", () => {
  it("gives its thread to the run that asks for it at once, its run ended first, with no maintenance pass between", async () => {
    const store = createMemoryThreadStore();
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { a: defineAgent({ tools: {} }) } }),
      store,
      model: createScriptedModel({ steps: [], fallback: { text: "ok" } }),
      ownerId: "survivor",
      // No pass after the first, and a heartbeat that never lapses: only the process's end can free the thread.
      heartbeatIntervalMs: 600_000,
      ownerTtlMs: 600_000,
      reconcileIntervalMs: 600_000,
    });
    await runtime.startCapabilities();
    // Another process on this machine runs thread t1, then is killed.
    const other = spawn("sleep", ["600"], { stdio: "ignore" });
    const stat = readFileSync(`/proc/${other.pid}/stat`, "utf8");
    await store.heartbeatOwner({
      ownerId: "gone",
      host: "this-host",
      pid: other.pid!,
      startedAt: Date.now(),
      heartbeatAt: Date.now(),
      ...createLocalProcessProbe().place,
      processStartTicks: Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]),
    });
    const first = await runtime.run({ agentId: "a", threadId: "t1", message: "hello" });
    await first.done;
    await store.createRun({
      id: "r-gone",
      threadId: "t1",
      agentId: "a",
      status: "running",
      startedAt: Date.now(),
      ownerId: "gone",
    });
    expect(
      (await store.acquireThreadLease({ threadId: "t1", runId: "r-gone", ownerId: "gone", ttlMs: 600_000 }))
        .acquired,
    ).toBe(true);
    await expect(runtime.run({ agentId: "a", threadId: "t1", message: "again" })).rejects.toMatchObject({
      code: "THREAD_BUSY",
    });
    const exited = new Promise((resolve) => other.once("exit", resolve));
    other.kill("SIGKILL");
    await exited;

    const next = await runtime.run({ agentId: "a", threadId: "t1", message: "again" });
    expect((await next.done).status).toBe("completed");
    const gone = await store.getRun("r-gone");
    expect(gone).toMatchObject({ status: "interrupted" });
    expect(gone!.endedAt!).toBeLessThanOrEqual((await store.getRun(next.runId))!.startedAt);
    await runtime.close();
  });
});
