import { PoolError, poolLabels } from "@pai/pool";
import { createFakeDriver, type FakeDriver } from "@pai/pool/testing";
import { describe, expect, it, vi } from "vitest";
import { createPooledBinding } from "./pooled-binding.ts";

const spec = { image: "fake/sandbox:1" };

const labelled = (pool: string, owner?: string) => ({
  [poolLabels.managed]: "true",
  [poolLabels.pool]: pool,
  ...(owner !== undefined ? { [poolLabels.owner]: owner } : {}),
});

describe("createPooledBinding ownership", () => {
  function binding(driver: FakeDriver, poolId: string) {
    return createPooledBinding<undefined, object>({
      capability: "sandbox",
      engines: [{ id: "fake", driver }],
      poolId,
      pool: { min: 1, max: 4, acquireTimeoutMs: 2_000 },
      closedError: () => new Error("closed"),
      calls: {},
      prepare: async () => ({ image: spec.image, spec, facadeOf: () => ({ facade: {} }) }),
    });
  }

  it("takes the runtime's owner when it was warmed by hand first, and refuses a second owner", async () => {
    const driver = createFakeDriver();
    const warmed = binding(driver, "pai-sandbox-3");
    try {
      await warmed.start();
      const [early] = [...driver.containers.values()];
      expect(early?.labels[poolLabels.owner]).toBeUndefined();
      await warmed.start({ ownerId: "runtime" });
      const { resourceId: leased } = await warmed.provision({
        leaseKey: "thread:a",
        signal: new AbortController().signal,
      });
      // The lease took the early warm container; the refill is the runtime's.
      expect(leased).toBe(early?.id);
      await vi.waitFor(() => expect(driver.containers.size).toBe(2));
      const refill = [...driver.containers.values()].find((c) => c.id !== leased);
      expect(refill?.labels[poolLabels.owner]).toBe("runtime");
      await expect(warmed.start({ ownerId: "someone-else" })).rejects.toThrow(/already/);
    } finally {
      await warmed.close();
    }
  });

  it("creates containers for the owner it was started with and reaps only dead owners' across pools", async () => {
    const driver = createFakeDriver();
    const live = binding(driver, "pai-sandbox-1");
    const dead = binding(driver, "pai-sandbox-2");
    try {
      await live.start({ ownerId: "live" });
      await dead.start({ ownerId: "dead" });
      const provision = async (from: typeof live, leaseKey: string) =>
        (await from.provision({ leaseKey, signal: new AbortController().signal })).resourceId;
      const liveLeased = await provision(live, "thread:a");
      const deadLeased = await provision(dead, "thread:b");
      const deadKept = await provision(dead, "thread:c");
      expect(driver.containers.get(liveLeased)?.labels[poolLabels.owner]).toBe("live");
      expect(driver.containers.get(deadLeased)?.labels[poolLabels.owner]).toBe("dead");
      const ownedBy = (owner: string) =>
        [...driver.containers.values()].filter((c) => c.labels[poolLabels.owner] === owner).map((c) => c.id);
      const liveBefore = ownedBy("live");

      await live.reapUnowned({ keepResourceIds: [deadKept], deadOwnerIds: new Set(["dead"]) });

      expect(liveBefore).toContain(liveLeased);
      for (const id of liveBefore) expect(driver.containers.has(id)).toBe(true);
      expect(ownedBy("dead")).toEqual([deadKept]);
    } finally {
      await Promise.all([live.close(), dead.close()]);
    }
  });

  it("removes the orphans the runtime names whatever their owner label, except those it holds or keeps", async () => {
    const driver = createFakeDriver();
    const pooled = binding(driver, "pai-sandbox-5");
    try {
      await pooled.start({ ownerId: "me" });
      const { resourceId: held } = await pooled.provision({
        leaseKey: "thread:h",
        signal: new AbortController().signal,
      });
      // Handed over by an owner that has since closed (it is in no store), then its new holder's lease ended.
      const handedOver = driver.addContainer(labelled("pai-sandbox-5", "closed-cleanly"));
      const otherPool = driver.addContainer(labelled("browser", "someone"));
      const kept = driver.addContainer(labelled("pai-sandbox-5", "someone"));
      const unmanaged = driver.addContainer({ [poolLabels.owner]: "someone" });

      await pooled.reapUnowned({
        keepResourceIds: [kept],
        deadOwnerIds: new Set(),
        orphanResourceIds: [handedOver, otherPool, held, kept, unmanaged, "gone"],
      });

      expect(driver.containers.has(handedOver)).toBe(false);
      expect(driver.containers.has(otherPool)).toBe(false);
      for (const id of [held, kept, unmanaged]) expect(driver.containers.has(id)).toBe(true);
      await Promise.all([kept, unmanaged].map((id) => driver.remove(id)));
    } finally {
      await pooled.close();
    }
  });

  it("refuses to start again for another owner", async () => {
    const driver = createFakeDriver();
    const pooled = binding(driver, "pai-sandbox-3");
    try {
      await pooled.start({ ownerId: "one" });
      await pooled.start(); // provisioning's implicit start shares the first one
      await expect(pooled.start({ ownerId: "two" })).rejects.toThrow(/already started for owner one/);
    } finally {
      await pooled.close();
    }
  });

  it("close removes its idle containers and keeps the leases the runtime did not release", async () => {
    const driver = createFakeDriver();
    const pooled = binding(driver, "pai-sandbox-4");
    await pooled.start({ ownerId: "me" });
    const { resourceId: kept } = await pooled.provision({
      leaseKey: "thread:k",
      signal: new AbortController().signal,
    });
    await pooled.close();
    expect([...driver.containers.keys()]).toEqual([kept]);
    await driver.remove(kept);
  });
});

describe("createPooledBinding ownership on several engines", () => {
  /** A binding over two fake engines, whose health checks notice a lost engine within milliseconds. */
  function twoEngines(one: FakeDriver, two: FakeDriver, poolId: string) {
    return createPooledBinding<undefined, object>({
      capability: "sandbox",
      engines: [
        { id: "one", driver: one },
        { id: "two", driver: two },
      ],
      poolId,
      pool: { min: 0, max: 4, acquireTimeoutMs: 2_000 },
      tuning: { engineChecks: { intervalMs: 20, timeoutMs: 200, backoff: { initialMs: 20, maxMs: 40 } } },
      closedError: () => new Error("closed"),
      calls: {},
      prepare: async () => ({ image: spec.image, spec, facadeOf: () => ({ facade: {} }) }),
    });
  }

  it("removes the orphans it is told of on whichever engine they are, whatever their owner", async () => {
    const [one, two] = [createFakeDriver(), createFakeDriver()];
    const pooled = twoEngines(one, two, "pai-sandbox-7");
    try {
      await pooled.start({ ownerId: "me" });
      const onOne = one.addContainer(labelled("pai-sandbox-7", "closed-cleanly"));
      const onTwo = two.addContainer(labelled("pai-sandbox-7", "closed-cleanly"));
      const kept = two.addContainer(labelled("pai-sandbox-7", "closed-cleanly"));
      await pooled.reapUnowned({
        keepResourceIds: [kept],
        deadOwnerIds: new Set(),
        orphanResourceIds: [onOne, onTwo, kept],
      });
      expect(one.containers.has(onOne)).toBe(false);
      expect(two.containers.has(onTwo)).toBe(false);
      expect(two.containers.has(kept)).toBe(true);
    } finally {
      await pooled.close();
    }
  });

  it("lets a detached container go running on its engine, out of max, and reaps it once no lease keeps it", async () => {
    const [one, two] = [createFakeDriver(), createFakeDriver()];
    const pooled = twoEngines(one, two, "pai-sandbox-8");
    const next = new AbortController().signal;
    try {
      await pooled.start({ ownerId: "me" });
      const handedOver = await pooled.provision({ leaseKey: "thread:a", signal: next });
      await handedOver.detach();
      const where = one.containers.has(handedOver.resourceId) ? one : two;
      expect(where.containers.get(handedOver.resourceId)?.status).toBe("running");
      expect(pooled.metrics()?.borrowed).toBe(0);
      // Its new holder's lease keeps it; once none does, it is this owner's stray.
      await pooled.reapUnowned({ keepResourceIds: [handedOver.resourceId], deadOwnerIds: new Set() });
      expect(where.containers.has(handedOver.resourceId)).toBe(true);
      await pooled.reapUnowned({ keepResourceIds: [], deadOwnerIds: new Set() });
      expect(where.containers.has(handedOver.resourceId)).toBe(false);
    } finally {
      await pooled.close();
    }
  });

  it("fails a reap that could not reach an engine (the runtime keeps the dead owner), still reaping the others", async () => {
    const [one, two] = [createFakeDriver(), createFakeDriver()];
    const pooled = twoEngines(one, two, "pai-sandbox-9");
    try {
      await pooled.start({ ownerId: "me" });
      const deadOnOne = one.addContainer(labelled("pai-sandbox-9", "dead"));
      const deadOnTwo = two.addContainer(labelled("pai-sandbox-9", "dead"));
      two.setUnavailable(true);
      await vi.waitFor(() =>
        expect(pooled.metrics()?.engines.find((engine) => engine.id === "two")?.status).toBe("unreachable"),
      );
      const failure = await pooled
        .reapUnowned({ keepResourceIds: [], deadOwnerIds: new Set(["dead"]) })
        .catch((error: unknown) => error);
      expect(PoolError.hasCode(failure, "DOCKER_UNAVAILABLE")).toBe(true);
      expect((failure as PoolError).details).toMatchObject({ engineIds: ["two"] });
      expect(one.containers.has(deadOnOne)).toBe(false);

      two.setUnavailable(false);
      await vi.waitFor(() =>
        expect(pooled.metrics()?.engines.find((engine) => engine.id === "two")?.status).toBe("reachable"),
      );
      await pooled.reapUnowned({ keepResourceIds: [], deadOwnerIds: new Set(["dead"]) });
      expect(two.containers.has(deadOnTwo)).toBe(false);
    } finally {
      await pooled.close();
    }
  });
});
