import { afterEach, describe, expect, it } from "vitest";
import { type ContainerPool, type ContainerPoolOptions, createContainerPool } from "./container-pool.ts";
import { poolLabels } from "./labels.ts";
import { createFakeDriver, type FakeDriver } from "./testing/fake-driver.ts";

const spec = { image: "fake/sandbox:1" };
const pools: ContainerPool<unknown>[] = [];

function makePool<STATE = undefined>(
  driver: FakeDriver,
  options: Partial<ContainerPoolOptions<STATE>> = {},
): ContainerPool<STATE> {
  const pool = createContainerPool<STATE>({
    driver,
    spec,
    min: 1,
    max: 4,
    acquireTimeoutMs: 2_000,
    ...options,
  });
  pools.push(pool as ContainerPool<unknown>);
  return pool;
}

const labelled = (pool: string, owner?: string) => ({
  [poolLabels.managed]: "true",
  [poolLabels.pool]: pool,
  ...(owner !== undefined ? { [poolLabels.owner]: owner } : {}),
});

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe("container ownership", () => {
  it("labels every container with the pool's owner, and none without one", async () => {
    const driver = createFakeDriver();
    const owned = makePool(driver, { poolId: "a", ownerId: "host:1:aa" });
    const unowned = makePool(driver, { poolId: "b" });
    await Promise.all([owned.warm(), unowned.warm()]);
    const byPool = (id: string) =>
      [...driver.containers.values()].filter((c) => c.labels[poolLabels.pool] === id);
    expect(byPool("a").map((c) => c.labels[poolLabels.owner])).toEqual(["host:1:aa"]);
    expect(byPool("b").map((c) => poolLabels.owner in c.labels)).toEqual([false]);
    expect(owned.ownerId).toBe("host:1:aa");
    expect(() => makePool(driver, { ownerId: "" })).toThrow(TypeError);
  });

  it("reaps a dead owner's containers of every pool id and never a live owner's", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { poolId: "sandbox", ownerId: "me" });
    await pool.warm();
    const own = [...driver.containers.keys()];
    const deadSamePool = driver.addContainer(labelled("sandbox", "dead"));
    const deadOtherPool = driver.addContainer(labelled("browser", "dead"));
    const deadStopped = driver.addContainer(labelled("other-spec", "dead"), { running: false });
    const deadKept = driver.addContainer(labelled("sandbox", "dead"));
    const liveSamePool = driver.addContainer(labelled("sandbox", "alive"));
    const liveOtherPool = driver.addContainer(labelled("browser", "alive"));
    const unownedSamePool = driver.addContainer(labelled("sandbox"));
    const unownedOtherPool = driver.addContainer(labelled("browser"));
    const mineOtherPool = driver.addContainer(labelled("browser", "me"));
    const mineEarlier = driver.addContainer(labelled("sandbox", "me"));
    const unmanaged = driver.addContainer({ [poolLabels.owner]: "dead" });

    const result = await pool.reapStrays({ keep: [deadKept], deadOwners: new Set(["dead"]) });

    expect(result.removed.sort()).toEqual(
      [deadSamePool, deadOtherPool, deadStopped, unownedSamePool, mineEarlier].sort(),
    );
    expect([...driver.containers.keys()].sort()).toEqual(
      [...own, deadKept, liveSamePool, liveOtherPool, unownedOtherPool, mineOtherPool, unmanaged].sort(),
    );
  });

  it("leaves the containers of owners not known to be dead alone", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { poolId: "sandbox", ownerId: "me", min: 0 });
    const other = driver.addContainer(labelled("sandbox", "someone"));
    const unowned = driver.addContainer(labelled("sandbox"));
    const result = await pool.reapStrays();
    expect(result.removed).toEqual([unowned]);
    expect(driver.containers.has(other)).toBe(true);
  });

  it("close({ keepLeased }) leaves leased containers running and removes the idle ones", async () => {
    const driver = createFakeDriver();
    const teardowns: string[] = [];
    const pool = makePool(driver, {
      min: 2,
      ownerId: "me",
      teardown: ({ containerId }) => {
        teardowns.push(containerId);
      },
    });
    await pool.warm();
    const lease = await pool.acquire({ leaseKey: "thread:1" });
    await pool.close({ keepLeased: true });
    expect([...driver.containers.keys()]).toEqual([lease.containerId]);
    expect(driver.containers.get(lease.containerId)?.status).toBe("running");
    expect(teardowns).toContain(lease.containerId);
    // A release after close (the runtime decided to free it after all) still removes it, without a second teardown.
    await lease.release();
    expect(driver.containers.size).toBe(0);
    expect(teardowns.filter((id) => id === lease.containerId)).toHaveLength(1);
  });

  it("detach() lets a leased container go running: it frees its place under max and survives close", async () => {
    const driver = createFakeDriver();
    const teardowns: string[] = [];
    const pool = makePool(driver, {
      min: 0,
      max: 1,
      acquireTimeoutMs: 200,
      ownerId: "me",
      teardown: ({ containerId }) => {
        teardowns.push(containerId);
      },
    });
    const first = await pool.acquire({ leaseKey: "thread:1" });
    await expect(pool.acquire({ leaseKey: "thread:2" })).rejects.toMatchObject({ code: "POOL_EXHAUSTED" });
    await first.detach();
    await first.release(); // a no-op once detached
    expect(teardowns).toEqual([first.containerId]);
    expect(pool.metrics().borrowed).toBe(0);
    const second = await pool.acquire({ leaseKey: "thread:2" });
    await pool.close();
    expect([...driver.containers.keys()]).toEqual([first.containerId]);
    expect(driver.containers.get(first.containerId)?.status).toBe("running");
    expect(driver.containers.has(second.containerId)).toBe(false);
  });

  it("reaps a container it let go of once no one keeps it, and can adopt it back", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { poolId: "sandbox", min: 0, ownerId: "me" });
    const handedOver = await pool.acquire({ leaseKey: "thread:1" });
    await handedOver.detach();
    // Another process holds it now (its lease record names it): kept.
    expect((await pool.reapStrays({ keep: [handedOver.containerId] })).removed).toEqual([]);
    // Handed back: this pool adopts it, and then holds it again.
    const back = await pool.adopt(handedOver.containerId, { leaseKey: "thread:1" });
    expect((await pool.reapStrays()).removed).toEqual([]);
    await back.detach();
    // No lease names it any more: it is this owner's stray.
    expect((await pool.reapStrays()).removed).toEqual([handedOver.containerId]);
  });
});
