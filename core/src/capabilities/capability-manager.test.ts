import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { toolEndOf } from "../actions/tool-end.ts";
import { createPai } from "../agents/create-pai.ts";
import { defineAgent } from "../agents/define-agent.ts";
import { PaiError } from "../errors/pai-error.ts";
import { createAgentRuntime } from "../runtime/create-agent-runtime.ts";
import { createScriptedModel, type ScriptedStep } from "../testing/scripted-model.ts";
import { createMemoryThreadStore } from "../threads/memory-thread-store.ts";
import { createSqliteThreadStore } from "../threads/sqlite-thread-store.ts";
import type { CapabilityLifetime, LeaseRecord, ThreadStore } from "../threads/thread-store.ts";
import { defineTool } from "../tools/define-tool.ts";
import type { CapabilityBinding } from "./capability-binding.ts";
import { defineCapability } from "./define-capability.ts";

interface Counter {
  next(): Promise<number>;
}

const counter = defineCapability<"counter", Counter>({
  name: "counter",
  defaultLifetime: "thread",
  members: { next: true },
});

/** A fake engine shared by the bindings of several runtimes: resource id → its `pai.owner` label and counter. */
type FakeEngine = Map<string, { owner: string | undefined; value: number }>;

/**
 * A binding of our own interface over a fake engine: each resource is a counter labelled with its owner. Like a
 * pool, it refuses to reattach a resource it holds already. Records what was provisioned, reattached, released,
 * detached and reaped.
 */
function fakeBinding(
  options: {
    lifetime?: CapabilityLifetime;
    idleTtlMs?: number;
    provisionDelayMs?: number;
    engine?: FakeEngine;
    /** Prefixes resource ids, so the bindings of several runtimes on one engine never share one. */
    prefix?: string;
    provisionError?: unknown;
    /** Runs before each reap: may wait (a slow engine) or throw (a failed removal). */
    beforeReap?: () => Promise<void> | void;
    reattachDelayMs?: number;
    /** What `reattach` rejects with (a resource that is there but cannot be reconnected). */
    reattachError?: unknown;
  } = {},
) {
  const engine: FakeEngine = options.engine ?? new Map();
  const provisioned: string[] = [];
  const released: string[] = [];
  const detached: string[] = [];
  const reaped: string[] = [];
  const reattached: string[] = [];
  /** Resources this binding holds (provisioned or reattached, not yet released or detached). */
  const held = new Set<string>();
  let ownerId: string | undefined;
  let seq = 0;
  const resourceOf = (id: string) => ({
    facade: {
      next: async () => {
        const entry = engine.get(id);
        if (!entry) throw new Error(`no resource ${id}`);
        return ++entry.value;
      },
    },
    resourceId: id,
    release: async () => {
      engine.delete(id);
      held.delete(id);
      released.push(id);
    },
    detach: async () => {
      held.delete(id);
      detached.push(id);
    },
  });
  const binding: CapabilityBinding<Counter> = {
    kind: "pai.capability-binding",
    capability: "counter",
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
    async start(context) {
      ownerId = context?.ownerId;
    },
    async provision(request) {
      await new Promise((resolve) => setTimeout(resolve, options.provisionDelayMs ?? 1));
      if (options.provisionError) throw options.provisionError;
      const id = `${options.prefix ?? ""}r${++seq}`;
      engine.set(id, { owner: ownerId, value: 0 });
      provisioned.push(`${id}@${request.leaseKey}`);
      held.add(id);
      return resourceOf(id);
    },
    async reattach(lease) {
      await new Promise((resolve) => setTimeout(resolve, options.reattachDelayMs ?? 0));
      if (!engine.has(lease.resourceId) || held.has(lease.resourceId)) return undefined;
      if (options.reattachError) throw options.reattachError;
      held.add(lease.resourceId);
      reattached.push(lease.resourceId);
      return resourceOf(lease.resourceId);
    },
    async reapUnowned({ keepResourceIds, deadOwnerIds, orphanResourceIds = [] }) {
      await options.beforeReap?.();
      for (const [id, entry] of engine) {
        const orphan = orphanResourceIds.includes(id) && !held.has(id);
        const dead = entry.owner !== undefined && deadOwnerIds.has(entry.owner);
        if ((!orphan && !dead) || keepResourceIds.includes(id)) continue;
        engine.delete(id);
        reaped.push(id);
      }
    },
    async close() {},
  };
  return { binding, live: engine, provisioned, reattached, released, detached, reaped };
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
    expect(shared.provisioned).toEqual([`r1@process:${shared.runtime.ownerId}`]);
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

/** A runtime process of its own on a shared store and engine, with fast heartbeats. */
function replica(
  store: ThreadStore,
  engine: FakeEngine,
  prefix: string,
  options: {
    steps?: ScriptedStep[];
    binding?: Parameters<typeof fakeBinding>[0];
    handoverTimeoutMs?: number;
    onRuntimeError?: (error: unknown) => void;
    onBackgroundError?: (error: unknown) => void;
  } = {},
) {
  const fake = fakeBinding({ engine, prefix, ...options.binding });
  const model = createScriptedModel({ steps: options.steps ?? [oneCall], fallback: { text: "done" } });
  const agent = defineAgent({
    identity: z.object({ userId: z.string() }),
    tools: { count, idle },
    ...(options.onRuntimeError ? { onRuntimeError: options.onRuntimeError } : {}),
  });
  const runtime = createAgentRuntime({
    pai: createPai({ agents: { a: agent } }),
    store,
    model,
    capabilities: { counter: fake.binding },
    ownerId: `owner-${prefix}`,
    heartbeatIntervalMs: 20,
    ownerTtlMs: 1000,
    ...(options.handoverTimeoutMs !== undefined ? { handoverTimeoutMs: options.handoverTimeoutMs } : {}),
    ...(options.onBackgroundError ? { onBackgroundError: options.onBackgroundError } : {}),
  });
  return { ...fake, runtime, model };
}

const oneCall: ScriptedStep = { toolCalls: [{ toolName: "count", input: {} }] };
const ann = { userId: "ann" };

/** The store, shared by runtimes that must not close it before the last one is done. */
function sharedStore(): ThreadStore {
  const store = createMemoryThreadStore();
  return { ...store, close: async () => {} };
}

/** The value the run's last `count` call returned. */
function lastCount(messages: Array<{ parts: unknown[] }>): unknown {
  const part = messages
    .flatMap((message) => message.parts as Array<Record<string, unknown>>)
    .filter((p) => p.type === "tool-count")
    .at(-1);
  return part?.state === "output-available" ? (part.output as { value: number }).value : part;
}

/** Records a dead process: an owner whose last heartbeat is a minute old. */
async function deadOwner(store: ThreadStore, ownerId: string): Promise<void> {
  const long = Date.now() - 60_000;
  await store.heartbeatOwner({ ownerId, host: "gone", pid: 1, startedAt: long, heartbeatAt: long });
}

function leaseOf(overrides: Partial<LeaseRecord>): LeaseRecord {
  const now = Date.now();
  return {
    capability: "counter",
    lifetime: "thread",
    key: "t1",
    resourceId: "x",
    meta: {},
    createdAt: now,
    lastUsedAt: now,
    ...overrides,
  };
}

describe("several processes on one store and one engine", () => {
  it("never touches a live owner's lease: another runtime neither reattaches nor reaps nor releases it", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map();
    const a = replica(store, engine, "a");
    const b = replica(store, engine, "b");
    const run = await a.runtime.run({ agentId: "a", identity: ann, message: "count" });
    expect(lastCount((await run.done).messages)).toBe(1);

    await b.runtime.startCapabilities();
    await b.runtime.sweep();
    expect(b.runtime.leases()).toEqual([]);
    await b.runtime.close();
    expect([...engine.keys()]).toEqual(["ar1"]);
    expect(await store.listLeases()).toMatchObject([{ key: run.threadId, ownerId: "owner-a" }]);
    expect(b.released).toEqual([]);
    expect(b.reaped).toEqual([]);

    await a.runtime.close();
    expect(engine.size).toBe(0);
    expect(await store.listLeases()).toEqual([]);
    expect(await store.listOwners()).toEqual([]);
  });

  it("takes over a dead owner's fresh thread lease (its files survive) and frees everything else of it", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map([
      ["dead-thread", { owner: "dead", value: 41 }],
      ["dead-stale", { owner: "dead", value: 0 }],
      ["dead-run", { owner: "dead", value: 0 }],
      ["dead-warm", { owner: "dead", value: 0 }],
      ["live-warm", { owner: "owner-other", value: 0 }],
    ]);
    await deadOwner(store, "dead");
    await store.heartbeatOwner({
      ownerId: "owner-other",
      host: "h",
      pid: 2,
      startedAt: 1,
      heartbeatAt: Date.now(),
    });
    await store.putLease(leaseOf({ key: "t1", resourceId: "dead-thread", ownerId: "dead" }));
    await store.putLease(leaseOf({ key: "t2", resourceId: "dead-stale", ownerId: "dead", lastUsedAt: 0 }));
    await store.putLease(leaseOf({ lifetime: "run", key: "r9", resourceId: "dead-run", ownerId: "dead" }));
    const b = replica(store, engine, "b", { steps: [oneCall] });

    await b.runtime.startCapabilities();
    expect(b.runtime.leases()).toEqual([
      { capability: "counter", lifetime: "thread", key: "t1", resourceId: "dead-thread" },
    ]);
    expect(await store.listLeases()).toMatchObject([{ key: "t1", ownerId: "owner-b" }]);
    expect(b.reaped.sort()).toEqual(["dead-run", "dead-stale", "dead-warm"]);
    expect([...engine.keys()].sort()).toEqual(["dead-thread", "live-warm"]);

    // The thread's next run uses the same resource: its state survived the owner.
    await store.ensureThread({ id: "t1", agentId: "a", ownerKey: "user:ann", createdAt: 1, updatedAt: 1 });
    const run = await b.runtime.run({ agentId: "a", identity: ann, threadId: "t1", message: "again" });
    expect(lastCount((await run.done).messages)).toBe(42);
    await b.runtime.close();
  });

  it("lets exactly one of two live processes take over a dead owner's lease", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map([["dead-thread", { owner: "dead", value: 0 }]]);
    await deadOwner(store, "dead");
    await store.putLease(leaseOf({ key: "t1", resourceId: "dead-thread", ownerId: "dead" }));
    const b = replica(store, engine, "b");
    const c = replica(store, engine, "c");
    await Promise.all([b.runtime.startCapabilities(), c.runtime.startCapabilities()]);
    const holders = [...b.runtime.leases(), ...c.runtime.leases()];
    expect(holders).toHaveLength(1);
    expect(engine.has("dead-thread")).toBe(true);
    await Promise.all([b.runtime.close(), c.runtime.close()]);
  });

  it("close({ handOver: true }) leaves thread leases to the next process, which takes them over at its start", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map();
    const a = replica(store, engine, "a");
    const first = await a.runtime.run({ agentId: "a", identity: ann, message: "count" });
    expect(lastCount((await first.done).messages)).toBe(1);

    await a.runtime.close({ handOver: true });
    expect(a.released).toEqual([]);
    expect(a.detached).toEqual(["ar1"]);
    expect(engine.has("ar1")).toBe(true);
    expect(await store.listLeases()).toMatchObject([
      { key: first.threadId, resourceId: "ar1", ownerId: "owner-a" },
    ]);

    // The closed process counts as gone at once: the next one takes the lease over as it starts, no waiting.
    const b = replica(store, engine, "b");
    await b.runtime.startCapabilities();
    expect(b.reattached).toEqual(["ar1"]);
    const second = await b.runtime.run({
      agentId: "a",
      identity: ann,
      threadId: first.threadId,
      message: "more",
    });
    expect(lastCount((await second.done).messages)).toBe(2);
    expect(b.provisioned).toEqual([]);
    await b.runtime.close();
    expect(engine.has("ar1")).toBe(false);
  });

  it("hands a thread's lease over to the process serving its next message, once the holder's run is done", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map();
    const a = replica(store, engine, "a");
    const b = replica(store, engine, "b");
    const first = await a.runtime.run({ agentId: "a", identity: ann, message: "count" });
    expect(lastCount((await first.done).messages)).toBe(1);

    const second = await b.runtime.run({
      agentId: "a",
      identity: ann,
      threadId: first.threadId,
      message: "more",
    });
    expect(lastCount((await second.done).messages)).toBe(2);
    expect(b.provisioned).toEqual([]);
    expect(a.runtime.leases()).toEqual([]);
    expect(b.runtime.leases()).toMatchObject([{ key: first.threadId, resourceId: "ar1" }]);
    expect(a.detached).toEqual(["ar1"]);
    expect(await store.listLeases()).toMatchObject([{ resourceId: "ar1", ownerId: "owner-b" }]);

    // The former holder closes: what it handed over stays.
    await a.runtime.close();
    expect(engine.has("ar1")).toBe(true);
    await b.runtime.close();
    expect(engine.size).toBe(0);
  });

  it("does the same on one SQLite file, each runtime with its own connection", async () => {
    const directory = mkdtempSync(join(tmpdir(), "pai-owners-"));
    const path = join(directory, "threads.db");
    const engine: FakeEngine = new Map();
    try {
      const a = replica(createSqliteThreadStore({ path }), engine, "a");
      const b = replica(createSqliteThreadStore({ path }), engine, "b", {
        steps: [oneCall, { text: "" }, oneCall],
      });
      const first = await a.runtime.run({ agentId: "a", identity: ann, message: "count" });
      expect(lastCount((await first.done).messages)).toBe(1);
      const other = await b.runtime.run({ agentId: "a", identity: ann, message: "count" });
      expect(lastCount((await other.done).messages)).toBe(1);
      const second = await b.runtime.run({
        agentId: "a",
        identity: ann,
        threadId: first.threadId,
        message: "more",
      });
      expect(lastCount((await second.done).messages)).toBe(2);
      await b.runtime.close();
      expect(engine.size).toBe(0);
      await a.runtime.close();
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it("fails the call with CAPABILITY_BUSY, told to the model, when the holder does not hand over in time", async () => {
    // A user's lease, used by the holder's run on one of the user's threads while another process runs another
    // (one thread never runs in two processes at once: its thread lease sees to that).
    const store = sharedStore();
    const engine: FakeEngine = new Map();
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const a = fakeBinding({ engine, prefix: "a", lifetime: "user" });
    // A run of the holder's that goes on using the lease.
    const hold = defineTool({
      id: "hold",
      description: "Uses the counter until released",
      inputSchema: z.object({}),
      capabilities: { counter },
      execute: async (ctx) => {
        await ctx.capabilities.counter.next();
        await held;
        return {};
      },
    });
    const holder = createAgentRuntime({
      pai: createPai({
        agents: { a: defineAgent({ identity: z.object({ userId: z.string() }), tools: { hold, count } }) },
      }),
      store,
      model: createScriptedModel({
        steps: [{ toolCalls: [{ toolName: "hold", input: {} }] }],
        fallback: { text: "ok" },
      }),
      capabilities: { counter: a.binding },
      ownerId: "owner-holder",
      heartbeatIntervalMs: 20,
    });
    const errors: unknown[] = [];
    const b = replica(store, engine, "b", {
      handoverTimeoutMs: 300,
      binding: { lifetime: "user" },
      onRuntimeError: (error) => errors.push(error),
    });
    const holding = await holder.run({ agentId: "a", identity: ann, message: "hold" });
    while (engine.size === 0) await new Promise((resolve) => setTimeout(resolve, 5));

    const second = await b.runtime.run({ agentId: "a", identity: ann, message: "more" });
    const result = await second.done;
    const part = result.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-count");
    expect(part).toMatchObject({
      state: "output-error",
      errorText: expect.stringContaining("CAPABILITY_BUSY"),
    });
    expect(toolEndOf(part)).toMatchObject({ reason: "provision-failed", code: "CAPABILITY_BUSY" });
    expect(JSON.stringify(b.model.doStreamCalls[1]?.prompt)).toContain("CAPABILITY_BUSY");
    expect(PaiError.hasCode(errors[0], "CAPABILITY_BUSY")).toBe(true);
    expect(b.provisioned).toEqual([]);

    release();
    await holding.done;
    await Promise.all([holder.close(), b.runtime.close()]);
    expect(engine.size).toBe(0);
  });

  it("frees a dead owner's resources when the next process starts after it went stale, though it held no lease", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map([["dead-warm", { owner: "dead", value: 0 }]]);
    await deadOwner(store, "dead");
    const b = replica(store, engine, "b");
    const owners = async () => (await store.listOwners()).map((owner) => owner.ownerId).sort();

    // Maintenance before the binding has started: nothing reaped it yet, so the dead owner stays known.
    await b.runtime.sweep();
    expect(await owners()).toEqual(["dead", "owner-b"]);
    await b.runtime.startCapabilities();
    expect(b.reaped).toEqual(["dead-warm"]);
    await b.runtime.sweep();
    expect(await owners()).toEqual(["owner-b"]);
    await b.runtime.close();
  });

  it("keeps a dead owner known while reaping its resources fails, and frees them on a later pass", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map([["dead-warm", { owner: "dead", value: 0 }]]);
    await deadOwner(store, "dead");
    let failing = true;
    const errors: unknown[] = [];
    const fake = fakeBinding({
      engine,
      prefix: "b",
      beforeReap: () => {
        if (failing) throw new Error("the engine refused a removal");
      },
    });
    const runtime = createAgentRuntime({
      pai: createPai({ agents: { a: defineAgent({ tools: { count } }) } }),
      store,
      model: createScriptedModel({ steps: [] }),
      capabilities: { counter: fake.binding },
      ownerId: "owner-b",
      onBackgroundError: (error) => errors.push(error),
    });
    // The binding starts although its first reap failed; the failure is reported.
    await runtime.startCapabilities();
    await runtime.sweep();
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(engine.has("dead-warm")).toBe(true);
    expect((await store.listOwners()).map((owner) => owner.ownerId)).toContain("dead");

    failing = false;
    await runtime.sweep();
    expect(fake.reaped).toEqual(["dead-warm"]);
    expect((await store.listOwners()).map((owner) => owner.ownerId)).toEqual(["owner-b"]);
    await runtime.close();
  });

  it("keeps heartbeating while a pass is slow (reaping on a busy engine), so it is never taken for dead", async () => {
    const store = sharedStore();
    let open!: () => void;
    let slow = false;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    const b = replica(store, new Map(), "b", { binding: { beforeReap: () => (slow ? gate : undefined) } });
    await b.runtime.startCapabilities();
    const heartbeat = async () =>
      (await store.listOwners()).find((owner) => owner.ownerId === "owner-b")?.heartbeatAt ?? 0;
    slow = true;
    const stuck = b.runtime.sweep();
    const before = await heartbeat();
    await vi.waitFor(async () => expect(await heartbeat()).toBeGreaterThan(before + 100), { timeout: 5000 });
    open();
    await stuck;
    await b.runtime.close();
  });

  it("frees the loser's resource when two processes provision one user's new lease at the same moment", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map();
    // A user's lease spans the user's threads: two threads of one user run at once, one in each process.
    const binding = { provisionDelayMs: 30, lifetime: "user" as const };
    const a = replica(store, engine, "a", { binding });
    const b = replica(store, engine, "b", { binding });
    const runs = await Promise.all(
      [a, b].map((replica) => replica.runtime.run({ agentId: "a", identity: ann, message: "count" })),
    );
    for (const run of runs) expect(lastCount((await run.done).messages)).toBe(1);
    expect(engine.size).toBe(2);

    // One record won; the process whose record lost frees its resource at its next sync.
    await Promise.all([a.runtime.sweep(), b.runtime.sweep()]);
    const [record] = await store.listLeases();
    expect([...engine.keys()]).toEqual([record?.resourceId]);
    expect([...a.runtime.leases(), ...b.runtime.leases()]).toMatchObject([
      { resourceId: record?.resourceId },
    ]);
    expect([...a.released, ...b.released]).toHaveLength(1);
    await Promise.all([a.runtime.close(), b.runtime.close()]);
    expect(engine.size).toBe(0);
    expect(await store.listLeases()).toEqual([]);
  });

  it("removes the resource of a dead owner's lease it cannot reattach, whoever's label it carries", async () => {
    const store = sharedStore();
    // Created by a process that has since closed (its record is gone), then taken over by one that died.
    const engine: FakeEngine = new Map([["handed-over", { owner: "closed-cleanly", value: 7 }]]);
    await deadOwner(store, "dead");
    await store.putLease(leaseOf({ key: "t1", resourceId: "handed-over", ownerId: "dead", lastUsedAt: 0 }));
    const b = replica(store, engine, "b");
    await b.runtime.startCapabilities();
    expect(await store.listLeases()).toEqual([]);
    expect(b.reaped).toEqual(["handed-over"]);
    expect(engine.size).toBe(0);
    await b.runtime.close();
  });

  it("removes at close the resource of a dead owner's stale lease a run found, whoever's label it carries", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map([["handed-over", { owner: "closed-cleanly", value: 7 }]]);
    const b = replica(store, engine, "b");
    await b.runtime.startCapabilities();
    await deadOwner(store, "dead");
    await store.putLease(leaseOf({ key: "t1", resourceId: "handed-over", ownerId: "dead", lastUsedAt: 0 }));
    await store.ensureThread({ id: "t1", agentId: "a", ownerKey: "user:ann", createdAt: 1, updatedAt: 1 });

    const run = await b.runtime.run({ agentId: "a", identity: ann, threadId: "t1", message: "count" });
    expect(lastCount((await run.done).messages)).toBe(1);
    expect(b.provisioned).toEqual(["br1@thread:t1"]);
    await b.runtime.close();
    expect(b.reaped).toEqual(["handed-over"]);
    expect(engine.size).toBe(0);
  });

  it("shares one reattach between a run on a dead owner's thread and the reconcile taking it over", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map([["dead-thread", { owner: "dead", value: 41 }]]);
    const b = replica(store, engine, "b", { binding: { reattachDelayMs: 50 } });
    await b.runtime.startCapabilities();
    await deadOwner(store, "dead");
    await store.putLease(leaseOf({ key: "t1", resourceId: "dead-thread", ownerId: "dead" }));
    await store.ensureThread({ id: "t1", agentId: "a", ownerKey: "user:ann", createdAt: 1, updatedAt: 1 });

    const [run] = await Promise.all([
      b.runtime.run({ agentId: "a", identity: ann, threadId: "t1", message: "again" }),
      b.runtime.sweep(),
    ]);
    expect(lastCount((await run.done).messages)).toBe(42);
    expect(b.reattached).toEqual(["dead-thread"]);
    expect(b.provisioned).toEqual([]);
    expect(b.runtime.leases()).toMatchObject([{ key: "t1", resourceId: "dead-thread" }]);
    await b.runtime.close();
    expect(engine.size).toBe(0);
  });

  it("tells onBackgroundError why a dead owner's resource could not be reattached, and gives the thread a new one", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map([["dead-thread", { owner: "dead", value: 41 }]]);
    const errors: unknown[] = [];
    const b = replica(store, engine, "b", {
      binding: { reattachError: new Error("Chromium did not come up") },
      onBackgroundError: (error) => errors.push(error),
    });
    await b.runtime.startCapabilities();
    await deadOwner(store, "dead");
    await store.putLease(leaseOf({ key: "t1", resourceId: "dead-thread", ownerId: "dead" }));
    await store.ensureThread({ id: "t1", agentId: "a", ownerKey: "user:ann", createdAt: 1, updatedAt: 1 });

    const run = await b.runtime.run({ agentId: "a", identity: ann, threadId: "t1", message: "again" });
    expect(lastCount((await run.done).messages)).toBe(1);
    expect(b.provisioned).toEqual(["br1@thread:t1"]);
    expect(errors).toEqual([
      expect.objectContaining({
        name: "PaiError",
        code: "CAPABILITY_UNAVAILABLE",
        message: expect.stringContaining(
          'the counter recorded on lease "thread:t1" (dead-thread) could not be reattached, so the lease gets a new one: Chromium did not come up',
        ),
        cause: expect.objectContaining({ message: "Chromium did not come up" }),
      }),
    ]);
    await b.runtime.close();
    expect(b.reaped).toContain("dead-thread");
    expect(engine.size).toBe(0);
  });

  it("keeps a lease provisioned while a sync was reading the store's leases", async () => {
    const memory = createMemoryThreadStore();
    let holdListing = false;
    let deliver: (() => void) | undefined;
    // A listing of every lease that reaches the process late: taken before the new lease's record was written.
    const store: ThreadStore = {
      ...memory,
      listLeases: async (query) => {
        const snapshot = await memory.listLeases(query);
        if (query === undefined && holdListing) {
          holdListing = false;
          await new Promise<void>((resolve) => {
            deliver = resolve;
          });
        }
        return snapshot;
      },
    };
    const engine: FakeEngine = new Map();
    const a = replica(store, engine, "a", { steps: [oneCall, { text: "" }, oneCall] });
    await (await a.runtime.run({ agentId: "a", identity: ann, message: "one" })).done;
    holdListing = true;
    while (!deliver) await new Promise((resolve) => setTimeout(resolve, 5));

    const second = await a.runtime.run({ agentId: "a", identity: ann, message: "two" });
    await second.done;
    deliver();
    await a.runtime.sweep();

    expect(a.runtime.leases().map((lease) => lease.key)).toContain(second.threadId);
    expect(a.released).toEqual([]);
    expect(engine.has("ar2")).toBe(true);
    await a.runtime.close();
  });

  it("lets go of a lease another process took over, and releases one whose thread was ended elsewhere", async () => {
    const store = sharedStore();
    const engine: FakeEngine = new Map();
    const a = replica(store, engine, "a", { steps: [oneCall, { text: "" }, oneCall] });
    const b = replica(store, engine, "b");
    const taken = await a.runtime.run({ agentId: "a", identity: ann, message: "one" });
    await taken.done;
    const ended = await a.runtime.run({ agentId: "a", identity: ann, message: "two" });
    await ended.done;
    expect(a.runtime.leases()).toHaveLength(2);

    // Presumed dead for a while: its first lease was claimed by another process.
    expect(
      await store.claimLease("counter", "thread", taken.threadId, { from: "owner-a", to: "owner-b" }),
    ).toBe(true);
    await b.runtime.endThread(ended.threadId);
    await a.runtime.sweep();

    expect(a.runtime.leases()).toEqual([]);
    expect(a.detached).toEqual(["ar1"]);
    expect(a.released).toEqual(["ar2"]);
    expect([...engine.keys()]).toEqual(["ar1"]);
    await Promise.all([a.runtime.close(), b.runtime.close()]);
  });
});

describe("capacity", () => {
  it("tells the model and the user a POOL_EXHAUSTED with the pool's numbers, and reports it", async () => {
    // What `@pai/pool` throws (a PoolError): core reads a provisioning error's code and details, not its class.
    const exhausted = Object.assign(new Error("No container within 30000 ms (4 leased, max 4)"), {
      code: "POOL_EXHAUSTED",
      details: { poolId: "internal-pool", max: 4, borrowed: 4, pending: 2, waitedMs: 30000 },
    });
    const errors: unknown[] = [];
    const { runtime, model } = replica(sharedStore(), new Map(), "a", {
      binding: { provisionError: exhausted },
      onRuntimeError: (error) => errors.push(error),
    });
    const run = await runtime.run({ agentId: "a", identity: ann, message: "count" });
    const chunks: Array<Record<string, unknown>> = [];
    for await (const chunk of run.stream) chunks.push(chunk as Record<string, unknown>);
    const result = await run.done;

    expect(result.status).toBe("completed");
    const message =
      "No counter is available right now (POOL_EXHAUSTED: 4 of 4 in use, 2 waiting, waited 30000 ms). Try again later.";
    const end = {
      reason: "provision-failed",
      code: "POOL_EXHAUSTED",
      details: { capability: "counter", max: 4, borrowed: 4, pending: 2, waitedMs: 30000 },
    };
    const part = result.messages.flatMap((m) => m.parts).find((p) => p.type === "tool-count");
    expect(part).toMatchObject({ state: "output-error", errorText: message });
    expect(toolEndOf(part)).toEqual(end);
    expect(chunks).toContainEqual(
      expect.objectContaining({
        type: "tool-output-error",
        errorText: message,
        toolMetadata: expect.objectContaining({ paiEnd: end }),
      }),
    );
    expect(chunks).toContainEqual(
      expect.objectContaining({
        type: "data-pai-capability",
        data: expect.objectContaining({
          status: "failed",
          error: message,
          code: "POOL_EXHAUSTED",
          details: end.details,
        }),
      }),
    );
    expect(JSON.stringify(model.doStreamCalls[1]?.prompt)).toContain("4 of 4 in use, 2 waiting");
    expect(JSON.stringify(result.messages)).not.toContain("internal-pool");
    expect(errors).toEqual([exhausted]);
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

describe("hibernating resources", () => {
  /** A binding whose resources hibernate by hand: `sleep(id)` stops one, `remove(id)` removes a sleeping one. */
  function hibernatingBinding() {
    const state = new Map<string, "running" | "hibernated" | "gone">();
    const idles: string[] = [];
    const released: string[] = [];
    const wakes = new Map<string, number>();
    let seq = 0;
    const resourceOf = (id: string) => ({
      get facade(): Counter {
        if (state.get(id) !== "running") throw new Error(`${id} is not running`);
        const generation = wakes.get(id) ?? 0;
        return { next: async () => generation * 100 + 1 };
      },
      resourceId: id,
      release: async () => {
        released.push(id);
        state.delete(id);
      },
      hibernation: {
        async wake() {
          const now = state.get(id);
          if (now === "gone" || now === undefined) return "gone" as const;
          if (now === "running") return "running" as const;
          state.set(id, "running");
          wakes.set(id, (wakes.get(id) ?? 0) + 1);
          return "woken" as const;
        },
        idle: () => idles.push(id),
      },
    });
    const binding: CapabilityBinding<Counter> = {
      kind: "pai.capability-binding",
      capability: "counter",
      async provision() {
        const id = `h${++seq}`;
        state.set(id, "running");
        return resourceOf(id);
      },
      async close() {},
    };
    return {
      binding,
      idles,
      released,
      sleep: (id: string) => state.set(id, "hibernated"),
      remove: (id: string) => state.set(id, "gone"),
    };
  }

  function statuses(messages: Array<{ parts: Array<Record<string, unknown>> }>) {
    return messages
      .flatMap((message) => message.parts)
      .filter((part) => part.type === "data-pai-capability")
      .map((part) => part.data as Record<string, unknown>);
  }

  function outputs(messages: Array<{ parts: Array<Record<string, unknown>> }>) {
    return messages
      .flatMap((message) => message.parts)
      .filter((part) => part.type === "tool-count" && part.state === "output-available")
      .map((part) => part.output);
  }

  it("marks a resource idle when its run ends, wakes it on the next call (woken, facade rebound) and replaces a removed one", async () => {
    const fake = hibernatingBinding();
    const model = createScriptedModel({
      steps: [],
      fallback: (call) =>
        call.prompt.at(-1)?.role === "tool"
          ? { text: "done" }
          : { toolCalls: [{ toolName: "count", input: {} }] },
    });
    await using runtime = createAgentRuntime({
      pai: createPai({ agents: { a: defineAgent({ tools: { count } }) } }),
      store: createMemoryThreadStore(),
      model,
      capabilities: { counter: fake.binding },
    });
    const identity = { userId: "u" };
    const first = await (await runtime.run({ agentId: "a", identity, message: "go" })).done;
    expect(outputs(first.messages)).toEqual([{ value: 1 }]);
    expect(fake.idles).toEqual(["h1"]);

    fake.sleep("h1");
    const second = await (
      await runtime.run({ agentId: "a", identity, threadId: first.threadId, message: "go" })
    ).done;
    expect(outputs(second.messages).at(-1)).toEqual({ value: 101 });
    expect(statuses(second.messages).filter((s) => s.status === "woken")).toMatchObject([
      { capability: "counter", lifetime: "thread", status: "woken", resourceId: "h1" },
    ]);
    expect(fake.idles).toEqual(["h1", "h1"]);

    fake.remove("h1");
    const third = await (
      await runtime.run({ agentId: "a", identity, threadId: first.threadId, message: "go" })
    ).done;
    expect(outputs(third.messages).at(-1)).toEqual({ value: 1 });
    expect(fake.released).toContain("h1");
    expect(runtime.leases()).toMatchObject([{ resourceId: "h2" }]);
    expect(await runtime.store.listLeases({ capability: "counter" })).toMatchObject([{ resourceId: "h2" }]);
    // The model is told about the wake from the next turn on.
    expect(JSON.stringify(model.doStreamCalls.at(-2)?.prompt)).toContain("had hibernated while idle");
  });

  it("starts a resource that stopped on its own again: restarted with the reason, a successor recorded on the lease, the model told; one that keeps stopping fails the call saying why", async () => {
    /** One resource whose container the test stops; a restart answers as the binding decides. */
    let current = "c1";
    let stopped: string | undefined;
    let next: "restart" | "succeed" | "give-up" = "restart";
    const resource = {
      get facade(): Counter {
        return { next: async () => (current === "c1" ? 1 : 2) };
      },
      get resourceId() {
        return current;
      },
      get meta() {
        return { container: current };
      },
      release: async () => {},
      hibernation: {
        async wake() {
          if (stopped === undefined) return "running" as const;
          const reason = stopped;
          if (next === "give-up") {
            throw Object.assign(new Error("stopped again"), {
              code: "CONTAINER_LOST",
              details: { restarts: 3, withinMs: 60_000, reason, containerId: "not shown" },
            });
          }
          stopped = undefined;
          if (next === "succeed") current = "c2";
          return { status: "restarted" as const, reason };
        },
        idle: () => {},
      },
    };
    const binding: CapabilityBinding<Counter> = {
      kind: "pai.capability-binding",
      capability: "counter",
      provision: async () => resource,
      async close() {},
    };
    const model = createScriptedModel({
      steps: [],
      fallback: (call) =>
        call.prompt.at(-1)?.role === "tool"
          ? { text: "done" }
          : { toolCalls: [{ toolName: "count", input: {} }] },
    });
    await using runtime = createAgentRuntime({
      pai: createPai({ agents: { a: defineAgent({ tools: { count } }) } }),
      store: createMemoryThreadStore(),
      model,
      capabilities: { counter: binding },
    });
    const identity = { userId: "u" };
    const turn = async (threadId?: string) =>
      (await runtime.run({ agentId: "a", identity, ...(threadId ? { threadId } : {}), message: "go" })).done;
    const first = await turn();

    stopped = "its container was killed (exit code 137)";
    const second = await turn(first.threadId);
    expect(outputs(second.messages).at(-1)).toEqual({ value: 1 });
    expect(statuses(second.messages).filter((s) => s.status === "restarted")).toMatchObject([
      {
        capability: "counter",
        lifetime: "thread",
        resourceId: "c1",
        reason: "its container was killed (exit code 137)",
      },
    ]);
    await turn(first.threadId);
    expect(JSON.stringify(model.doStreamCalls.at(-2)?.prompt)).toContain(
      "[the counter had stopped (its container was killed (exit code 137)) and was started again: its files are kept, processes started before are gone]",
    );

    // Not started again as it was: a successor took its files over, and the lease records it.
    stopped = "its container stopped (exit code 0)";
    next = "succeed";
    const fourth = await turn(first.threadId);
    expect(outputs(fourth.messages).at(-1)).toEqual({ value: 2 });
    expect(statuses(fourth.messages).findLast((s) => s.status === "restarted")).toMatchObject({
      resourceId: "c2",
    });
    expect(await runtime.store.listLeases({ capability: "counter" })).toMatchObject([
      { resourceId: "c2", meta: { container: "c2" } },
    ]);

    // A resource that keeps stopping: the call fails telling why, and the run goes on.
    stopped = "its container was killed (exit code 137)";
    next = "give-up";
    const fifth = await turn(first.threadId);
    expect(fifth.status).toBe("completed");
    const call = fifth.messages.at(-1)?.parts.find((part) => part.type === "tool-count");
    expect(call).toMatchObject({
      state: "output-error",
      errorText:
        "The counter stopped again (its container was killed (exit code 137)) after 3 restarts within 60 s and is not started again for now (CONTAINER_LOST). Try again later.",
    });
    expect(toolEndOf(call)).toEqual({
      reason: "provision-failed",
      code: "CONTAINER_LOST",
      details: {
        capability: "counter",
        restarts: 3,
        withinMs: 60_000,
        reason: "its container was killed (exit code 137)",
      },
    });
    expect(statuses(fifth.messages).find((s) => s.status === "failed")).toMatchObject({
      resourceId: "c2",
      code: "CONTAINER_LOST",
    });
  });
});

describe("declared members", () => {
  it("answers a member the capability does not declare with undefined at once: calling it is a TypeError, and nothing is provisioned", async () => {
    const fake = fakeBinding();
    const seen: Record<string, unknown> = {};
    const typo = defineTool({
      id: "typo",
      description: "Calls a misspelled counter member",
      inputSchema: z.object({}),
      capabilities: { counter },
      execute: async (ctx) => {
        const box = ctx.capabilities.counter as unknown as Record<string, unknown>;
        seen.member = box.nxet;
        seen.inBox = "nxet" in box;
        seen.keys = Object.keys(box);
        seen.thenable = (await box) === box; // awaiting the facade itself starts nothing either
        seen.provisionedBefore = [...fake.provisioned];
        return (box.nxet as () => Promise<number>)();
      },
    });
    const errors: unknown[] = [];
    await using runtime = createAgentRuntime({
      pai: createPai({
        agents: {
          a: defineAgent({
            tools: { typo },
            onRuntimeError: (error) => {
              errors.push(error);
            },
          }),
        },
      }),
      store: createMemoryThreadStore(),
      model: createScriptedModel({
        steps: [{ toolCalls: [{ toolName: "typo", input: {} }] }],
        fallback: { text: "ok" },
      }),
      capabilities: { counter: fake.binding },
    });
    const result = await (await runtime.run({ agentId: "a", message: "x" })).done;
    expect(result.status).toBe("completed");
    expect(seen).toEqual({
      member: undefined,
      inBox: false,
      keys: ["next"],
      thenable: true,
      provisionedBefore: [],
    });
    const parts = result.messages.flatMap((message) => message.parts);
    expect(parts.find((part) => part.type === "tool-typo")).toMatchObject({ state: "output-error" });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(TypeError);
    expect(fake.provisioned).toEqual([]);
    expect(fake.live.size).toBe(0);
    expect(runtime.leases()).toEqual([]);
    expect(await runtime.store.listLeases({ capability: "counter" })).toEqual([]);
    expect(parts.filter((part) => part.type === "data-pai-capability")).toEqual([]);
  });

  it("provisions for a declared member and calls through to the resource's facade", async () => {
    const { runtime, provisioned } = setup([{ toolCalls: [{ toolName: "count", input: {} }] }]);
    const result = await (await runtime.run({ agentId: "a", identity: { userId: "u" }, message: "x" })).done;
    const part = result.messages.flatMap((message) => message.parts).find((p) => p.type === "tool-count");
    expect(part).toMatchObject({ state: "output-available", output: { value: 1 } });
    expect(provisioned).toHaveLength(1);
    await runtime.close();
  });
});
