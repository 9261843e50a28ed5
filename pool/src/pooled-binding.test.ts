import { afterEach, describe, expect, it } from "vitest";
import type { ContainerInspection } from "./container-driver.ts";
import { createPooledBinding, type PooledBinding } from "./pooled-binding.ts";
import { createFakeDriver, type FakeDriver } from "./testing/fake-driver.ts";

const spec = { image: "fake/sandbox:1" };

/** A facade with one call that asks the container's engine. */
interface FakeFacade {
  inspect(): Promise<ContainerInspection>;
}

interface FakeResource {
  facade: FakeFacade;
  resourceId: string;
  meta: Record<string, unknown>;
  bind(scope: { signal: AbortSignal }): FakeFacade;
}

const bindings: PooledBinding<FakeResource>[] = [];

function binding(engines: Record<string, FakeDriver>, prepared: string[] = []) {
  const pooled = createPooledBinding<undefined, FakeResource>({
    name: "sandbox",
    engines: Object.entries(engines).map(([id, driver]) => ({ id, driver })),
    poolId: "pai-sandbox-unit",
    pool: { min: 0, max: 4, acquireTimeoutMs: 2_000 },
    tuning: { engineChecks: { intervalMs: 20, timeoutMs: 200, backoff: { initialMs: 20, maxMs: 40 } } },
    closedError: () => new Error("closed"),
    preparePool: async () => ({ image: spec.image, spec }),
    prepareEngine: async ({ engineId, image }) => {
      prepared.push(`${engineId}:${image}`);
    },
    resourceOf: (lease, pool) => {
      const facade = { inspect: () => lease.driver.inspect(lease.containerId) };
      return {
        facade,
        resourceId: lease.containerId,
        meta: { poolId: pool.poolId },
        bind: () => ({ inspect: () => facade.inspect() }),
      };
    },
  });
  bindings.push(pooled);
  return pooled;
}

const signal = new AbortController().signal;

afterEach(async () => {
  await Promise.all(bindings.splice(0).map((pooled) => pooled.close()));
});

describe("createPooledBinding on several engines", () => {
  it("records the engine on the lease's meta and reattaches on that engine after a restart", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const prepared: string[] = [];
    const first = binding({ a, b }, prepared);
    const onA = await first.provision({ leaseKey: "thread:1", signal });
    const onB = await first.provision({ leaseKey: "thread:2", signal });
    expect(onA.meta).toEqual({ poolId: "pai-sandbox-unit", engine: "a" });
    expect(onB.meta).toEqual({ poolId: "pai-sandbox-unit", engine: "b" });
    expect(prepared.sort()).toEqual(["a:fake/sandbox:1", "b:fake/sandbox:1"]);
    await first.close(); // a restart: the leased containers stay

    const second = binding({ a, b });
    const record = { resourceId: onB.resourceId, lifetime: "thread", key: "2", meta: onB.meta };
    const again = await second.reattach(record, signal);
    expect(again?.resourceId).toBe(onB.resourceId);
    expect(again?.meta.engine).toBe("b");
    // The same container recorded on the other engine is not found there.
    expect(await second.reattach({ ...record, meta: { ...onB.meta, engine: "a" } }, signal)).toBeUndefined();
    // A lease recorded before engines had names is looked for on the first engine.
    const old = await second.reattach(
      { resourceId: onA.resourceId, lifetime: "thread", key: "1", meta: {} },
      signal,
    );
    expect(old?.meta.engine).toBe("a");
  });

  it("fails facade calls on a sandbox whose engine stopped answering with CONTAINER_LOST naming it", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const pooled = binding({ a, b });
    const lost: string[] = [];
    pooled.events.on("lost", (event) => lost.push(`${event.engineId}:${event.containerId}`));
    const onA = await pooled.provision({ leaseKey: "thread:1", signal });
    const onB = await pooled.provision({ leaseKey: "thread:2", signal });
    a.setUnavailable(true);

    await expect(onA.facade.inspect()).rejects.toMatchObject({
      code: "CONTAINER_LOST",
      message: expect.stringContaining("engine a stopped answering"),
    });
    await expect(onA.bind({ signal }).inspect()).rejects.toMatchObject({ code: "CONTAINER_LOST" });
    expect(lost).toEqual([`a:${onA.resourceId}`]);
    await expect(onB.facade.inspect()).resolves.toBeDefined();

    const next = await pooled.provision({ leaseKey: "thread:3", signal });
    expect(next.meta.engine).toBe("b");
    expect(pooled.metrics()?.engines.map((engine) => [engine.id, engine.status, engine.lost])).toEqual([
      ["a", "unreachable", 1],
      ["b", "reachable", 0],
    ]);
  });
});
