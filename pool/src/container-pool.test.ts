import { afterEach, describe, expect, it } from "vitest";
import { type ContainerPool, type ContainerPoolOptions, createContainerPool } from "./container-pool.ts";
import { poolLabels } from "./labels.ts";
import { PoolError } from "./pool-error.ts";
import { specHash } from "./spec-hash.ts";
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
    evictionIntervalMs: 20,
    ...options,
  });
  pools.push(pool as ContainerPool<unknown>);
  return pool;
}

async function waitFor(condition: () => boolean, timeoutMs = 2_000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const running = (driver: FakeDriver) => [...driver.containers.values()].filter((c) => c.status === "running");

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe("createContainerPool", () => {
  it("keeps min started containers warm, labelled with pool id and spec hash", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 2, poolId: "unit" });
    await pool.warm();
    expect(running(driver)).toHaveLength(2);
    for (const container of driver.containers.values()) {
      expect(container.labels).toMatchObject({
        [poolLabels.managed]: "true",
        [poolLabels.pool]: "unit",
        [poolLabels.spec]: specHash(spec),
      });
    }
    expect(pool.metrics()).toMatchObject({ size: 2, available: 2, borrowed: 0, pending: 0 });
  });

  it("refills to min idle containers as soon as one is leased", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 2 });
    await pool.warm();
    const lease = await pool.acquire({ leaseKey: "a" });
    await waitFor(() => pool.metrics().available === 2, 2_000, "refill");
    expect(driver.containers.size).toBe(3);
    expect(pool.metrics()).toMatchObject({ size: 3, available: 2, borrowed: 1 });
    await lease.release();
  });

  it("never holds more than max containers and rejects with POOL_EXHAUSTED at the deadline", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 1, max: 2, acquireTimeoutMs: 150 });
    const first = await pool.acquire({ leaseKey: "a" });
    const second = await pool.acquire({ leaseKey: "b" });
    const started = Date.now();
    const error = await pool.acquire({ leaseKey: "c" }).catch((e: unknown) => e);
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(PoolError.hasCode(error, "POOL_EXHAUSTED")).toBe(true);
    expect(driver.peakContainers).toBeLessThanOrEqual(2);
    expect(pool.metrics()).toMatchObject({ borrowed: 2, size: 2 });

    await first.release();
    const third = await pool.acquire({ leaseKey: "c" });
    expect([first.containerId, second.containerId]).not.toContain(third.containerId);
    expect(driver.peakContainers).toBeLessThanOrEqual(2);
  });

  it("backs off on failing creates instead of retrying in a hot loop", async () => {
    const driver = createFakeDriver({ failCreate: () => new Error("image not found") });
    const errors: unknown[] = [];
    const pool = makePool(driver, {
      min: 2,
      max: 4,
      acquireTimeoutMs: 1_000,
      createBackoff: { initialMs: 50, maxMs: 200 },
    });
    pool.events.on("error", ({ error }) => errors.push(error));
    // Waiting acquires make generic-pool ask for more creates; they must not speed anything up.
    const acquires = Array.from({ length: 5 }, (_, i) =>
      pool.acquire({ leaseKey: `k${i}` }).catch((e: unknown) => e),
    );
    const results = await Promise.all(acquires);
    // ~1 s: attempts at 0, 50, 150, 350, 550, 750, 950 ms (one probe at a time once failing)
    expect(driver.calls.create).toBeGreaterThanOrEqual(3);
    expect(driver.calls.create).toBeLessThanOrEqual(10);
    expect(pool.metrics().createFailures).toBe(driver.calls.create);
    expect(errors.length).toBe(driver.calls.create);
    for (const result of results) {
      expect(PoolError.hasCode(result, "POOL_EXHAUSTED")).toBe(true);
      expect((result as Error).cause).toBeInstanceOf(Error);
      expect((result as Error).message).toMatch(/image not found/);
    }
  });

  it("reports DOCKER_UNAVAILABLE when creates fail because the engine is gone", async () => {
    const driver = createFakeDriver();
    driver.setUnavailable(true);
    const pool = makePool(driver, {
      min: 0,
      acquireTimeoutMs: 200,
      createBackoff: { initialMs: 20, maxMs: 50 },
    });
    const error = await pool.acquire({ leaseKey: "a" }).catch((e: unknown) => e);
    expect(PoolError.hasCode(error, "DOCKER_UNAVAILABLE")).toBe(true);
  });

  it("recovers once creates succeed again", async () => {
    const driver = createFakeDriver({ failCreate: (n) => n <= 3 });
    const pool = makePool(driver, { min: 1, createBackoff: { initialMs: 10, maxMs: 20 } });
    await pool.warm({ timeoutMs: 2_000 });
    expect(pool.metrics().createFailures).toBe(3);
    const lease = await pool.acquire({ leaseKey: "a" });
    expect(driver.containers.get(lease.containerId)?.status).toBe("running");
  });

  it("caps concurrent creates", async () => {
    const driver = createFakeDriver({ createDelayMs: 30 });
    const pool = makePool(driver, { min: 6, max: 6, maxConcurrentCreates: 2 });
    await pool.warm();
    expect(running(driver)).toHaveLength(6);
    expect(driver.peakInFlightCreates).toBe(2);
  });

  it("destroys the container on release and refills, never reusing it", async () => {
    const driver = createFakeDriver();
    const destroyed: Array<{ containerId: string; reason: string; leaseKey?: string }> = [];
    const pool = makePool(driver, { min: 1 });
    pool.events.on("destroy", (event) => destroyed.push(event));
    await pool.warm();
    const lease = await pool.acquire({ leaseKey: "thread:1" });
    expect(lease.leaseKey).toBe("thread:1");
    expect(pool.leases()).toEqual([
      expect.objectContaining({ containerId: lease.containerId, leaseKey: "thread:1" }),
    ]);
    await lease.release();
    await lease.release(); // idempotent
    expect(driver.containers.has(lease.containerId)).toBe(false);
    expect(destroyed).toContainEqual({
      containerId: lease.containerId,
      reason: "release",
      leaseKey: "thread:1",
    });
    await pool.warm();
    const next = await pool.acquire({ leaseKey: "thread:2" });
    expect(next.containerId).not.toBe(lease.containerId);
    expect(pool.leases().map((l) => l.leaseKey)).toEqual(["thread:2"]);
  });

  it("supports await using on a lease", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 0 });
    let id: string;
    {
      await using lease = await pool.acquire({ leaseKey: "scoped" });
      id = lease.containerId;
      expect(driver.containers.has(id)).toBe(true);
    }
    expect(driver.containers.has(id)).toBe(false);
  });

  it("rejects an already aborted acquire without creating anything", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 0 });
    const error = await pool.acquire({ leaseKey: "a", signal: AbortSignal.abort() }).catch((e: unknown) => e);
    expect((error as Error).name).toBe("AbortError");
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(driver.calls.create).toBe(0);
    expect(driver.containers.size).toBe(0);
  });

  it("leaves no container behind when acquire is aborted while the container is being created", async () => {
    const driver = createFakeDriver({ createDelayMs: 60 });
    const pool = makePool(driver, { min: 0 });
    const controller = new AbortController();
    const pending = pool.acquire({ leaseKey: "a", signal: controller.signal });
    setTimeout(() => controller.abort(new Error("user pressed stop")), 10);
    await expect(pending).rejects.toThrow("user pressed stop");
    expect(pool.metrics().pending).toBe(0);
    await waitFor(() => driver.calls.create === 1 && driver.calls.remove === 1, 2_000, "abandoned removal");
    expect(driver.containers.size).toBe(0);
    expect(pool.leases()).toEqual([]);
  });

  it("hands a container that arrives for an aborted acquire to the next waiter", async () => {
    const driver = createFakeDriver({ createDelayMs: 40 });
    const pool = makePool(driver, { min: 0, max: 1 });
    const controller = new AbortController();
    const abandoned = pool.acquire({ leaseKey: "gone", signal: controller.signal }).catch((e: unknown) => e);
    const waiting = pool.acquire({ leaseKey: "wanted" });
    controller.abort();
    const lease = await waiting;
    expect(((await abandoned) as Error).name).toBe("AbortError");
    expect(lease.leaseKey).toBe("wanted");
    expect(driver.calls.create).toBe(1);
    await lease.release();
    expect(driver.containers.size).toBe(0);
  });

  it("evicts and replaces an idle container the engine reports dead", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 1 });
    const exits: unknown[] = [];
    const destroyed: string[] = [];
    pool.events.on("exit", (event) => exits.push(event));
    pool.events.on("destroy", (event) => destroyed.push(event.reason));
    await pool.warm();
    const [idle] = [...driver.containers.keys()];
    driver.kill(idle!, { oom: true });
    await waitFor(() => !driver.containers.has(idle!) && running(driver).length === 1, 2_000, "replacement");
    expect(destroyed).toContain("died");
    expect(exits).toContainEqual(expect.objectContaining({ containerId: idle, reason: "oom" }));
  });

  it("removes a dead warm container wherever it sits in the queue and keeps the live ones warm", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 3 });
    const destroyed: Array<{ containerId: string; reason: string }> = [];
    pool.events.on("destroy", (event) => destroyed.push(event));
    await pool.warm();
    const [first, middle, last] = [...driver.containers.keys()];
    driver.kill(middle!);
    await waitFor(
      () => !driver.containers.has(middle!) && pool.metrics().available === 3,
      2_000,
      "replacement",
    );
    expect(destroyed).toEqual([expect.objectContaining({ containerId: middle, reason: "died" })]);
    expect(driver.containers.has(first!) && driver.containers.has(last!)).toBe(true);
    expect(running(driver)).toHaveLength(3);
    expect(driver.calls.create).toBe(4);
  });

  it("validates on borrow: a container that stopped silently is never handed out", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 1, evictionIntervalMs: 60_000 });
    await pool.warm();
    const [idle] = [...driver.containers.values()];
    idle!.status = "exited"; // no event
    const lease = await pool.acquire({ leaseKey: "a" });
    expect(lease.containerId).not.toBe(idle!.id);
    expect(driver.containers.get(lease.containerId)?.status).toBe("running");
    expect(driver.containers.has(idle!.id)).toBe(false);
  });

  it("reports a leased container's death with its lease key and leaves it to the lease", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 0 });
    const exits: Array<{ leaseKey?: string; reason: string }> = [];
    pool.events.on("exit", (event) => exits.push(event));
    const lease = await pool.acquire({ leaseKey: "thread:9" });
    driver.kill(lease.containerId);
    expect(exits).toEqual([expect.objectContaining({ leaseKey: "thread:9", reason: "die" })]);
    expect(driver.containers.has(lease.containerId)).toBe(true);
    await lease.release();
    expect(driver.containers.has(lease.containerId)).toBe(false);
  });

  it("adopts a running container of the same pool id after a restart", async () => {
    const driver = createFakeDriver();
    const before = makePool(driver, { min: 0, poolId: "sandbox" });
    const lease = await before.acquire({ leaseKey: "thread:1" });
    // A restart: the old pool object is gone without closing.
    const after = makePool(driver, { min: 0, poolId: "sandbox" });
    const adopted = await after.adopt(lease.containerId, { leaseKey: "thread:1" });
    expect(adopted).toMatchObject({ containerId: lease.containerId, leaseKey: "thread:1", adopted: true });
    expect(after.metrics()).toMatchObject({ borrowed: 1, size: 1 });
    await expect(after.adopt(lease.containerId)).rejects.toMatchObject({ code: "CONTAINER_FAILED" });
    await adopted.release();
    expect(driver.containers.has(lease.containerId)).toBe(false);
  });

  it("tries an adopted container's failed setup once more, and lets go of it when the second try fails too", async () => {
    const driver = createFakeDriver();
    const before = makePool(driver, { min: 0, poolId: "settling" });
    const settling = await before.acquire({ leaseKey: "thread:1" });
    const failing = await before.acquire({ leaseKey: "thread:2" });
    // A restart; the first setup of each adopted container fails (what the old process ran is still dying),
    // and the second container's setup never succeeds.
    const tries = new Map<string, number>();
    const after = makePool<string>(driver, {
      min: 0,
      poolId: "settling",
      setup: ({ containerId, adopted }) => {
        const tried = (tries.get(containerId) ?? 0) + 1;
        tries.set(containerId, tried);
        if (adopted && (tried === 1 || containerId === failing.containerId))
          throw new Error(`setup ${tried} failed`);
        return `ready after ${tried}`;
      },
    });
    const errors: Array<{ operation: string; containerId?: string; message: string }> = [];
    after.events.on("error", (event) =>
      errors.push({
        operation: event.operation,
        ...(event.containerId ? { containerId: event.containerId } : {}),
        message: (event.error as Error).message,
      }),
    );

    const adopted = await after.adopt(settling.containerId, { leaseKey: "thread:1" });
    expect(adopted.state).toBe("ready after 2");
    expect(errors).toEqual([
      { operation: "adopt", containerId: settling.containerId, message: "setup 1 failed" },
    ]);

    const refused = await after.adopt(failing.containerId, { leaseKey: "thread:2" }).catch((error) => error);
    expect(refused).toMatchObject({ code: "CONTAINER_FAILED" });
    expect((refused as PoolError).cause).toMatchObject({ message: "setup 2 failed" });
    expect(tries.get(failing.containerId)).toBe(2);
    // Let go of, not removed: a later adopt (another process's, or this one's) may take it.
    expect(driver.containers.get(failing.containerId)?.status).toBe("running");
    expect(after.metrics()).toMatchObject({ borrowed: 1, size: 1 });
  });

  it("refuses to adopt foreign or missing containers, and adopts a stopped one as hibernated", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 0, poolId: "mine" });
    const foreign = driver.addContainer({ [poolLabels.managed]: "true", [poolLabels.pool]: "other" });
    const stopped = driver.addContainer(
      { [poolLabels.managed]: "true", [poolLabels.pool]: "mine", [poolLabels.spec]: specHash(spec) },
      { running: false },
    );
    const oldSpec = driver.addContainer({
      [poolLabels.managed]: "true",
      [poolLabels.pool]: "mine",
      [poolLabels.spec]: "000000000000",
    });
    await expect(pool.adopt(foreign)).rejects.toMatchObject({ code: "CONTAINER_FAILED" });
    await expect(pool.adopt(oldSpec)).rejects.toMatchObject({ code: "CONTAINER_FAILED" });
    await expect(pool.adopt("nope")).rejects.toMatchObject({ code: "NOT_FOUND" });
    const lease = await pool.adopt(oldSpec, { allowSpecMismatch: true });
    expect(lease.adopted).toBe(true);
    expect(pool.metrics().borrowed).toBe(1);
    const sleeping = await pool.adopt(stopped, { leaseKey: "thread:z" });
    expect(sleeping.hibernated).toBe(true);
    expect(pool.metrics()).toMatchObject({ borrowed: 2, hibernated: 1, size: 1 });
    expect(await sleeping.wake()).toBe(true);
    expect(driver.containers.get(stopped)?.status).toBe("running");
    expect(pool.metrics()).toMatchObject({ hibernated: 0, size: 2 });
  });

  it("reaps strays of its own pool id, sparing kept, owned and foreign containers", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 1, poolId: "reap" });
    await pool.warm();
    const own = [...driver.containers.keys()];
    const mine = { [poolLabels.managed]: "true", [poolLabels.pool]: "reap" };
    const stray = driver.addContainer(mine);
    const deadStray = driver.addContainer(mine, { running: false });
    const kept = driver.addContainer(mine);
    const foreign = driver.addContainer({ [poolLabels.managed]: "true", [poolLabels.pool]: "other" });
    const result = await pool.reapStrays({ keep: [kept.slice(0, 12)] });
    expect(result.removed.sort()).toEqual([stray, deadStray].sort());
    expect(result.failed).toEqual([]);
    expect([...driver.containers.keys()].sort()).toEqual([...own, kept, foreign].sort());
  });

  it("reaps strays before warming when reapOnStart is set", async () => {
    const driver = createFakeDriver();
    const stray = driver.addContainer({ [poolLabels.managed]: "true", [poolLabels.pool]: "boot" });
    const pool = makePool(driver, { min: 1, poolId: "boot", reapOnStart: true });
    await pool.warm();
    expect(driver.containers.has(stray)).toBe(false);
    expect(driver.containers.size).toBe(1);
  });

  it("close removes every container, fails waiting acquires and refuses new ones", async () => {
    const driver = createFakeDriver({ createDelayMs: 20 });
    const pool = makePool(driver, { min: 2, max: 3 });
    await pool.warm();
    const lease = await pool.acquire({ leaseKey: "a" });
    const blocked = [pool.acquire({ leaseKey: "b" }), pool.acquire({ leaseKey: "c" })];
    const outcomes = Promise.allSettled(blocked);
    await pool.close();
    expect(driver.containers.size).toBe(0);
    for (const outcome of await outcomes) {
      if (outcome.status === "rejected") expect(PoolError.hasCode(outcome.reason, "POOL_CLOSED")).toBe(true);
    }
    await expect(pool.acquire({ leaseKey: "d" })).rejects.toMatchObject({ code: "POOL_CLOSED" });
    await lease.release(); // already removed by close: still resolves
    expect(pool.metrics()).toMatchObject({ size: 0, borrowed: 0, pending: 0 });
  });

  it("closes promptly while creates are failing and backing off", async () => {
    const driver = createFakeDriver({ failCreate: () => true });
    const pool = makePool(driver, { min: 2, createBackoff: { initialMs: 5_000, maxMs: 5_000 } });
    const waiting = pool.acquire({ leaseKey: "a" }).catch((e: unknown) => e);
    await waitFor(() => driver.calls.create >= 1, 1_000, "first create");
    const started = Date.now();
    await pool.close();
    expect(Date.now() - started).toBeLessThan(500);
    expect(PoolError.hasCode(await waiting, "POOL_CLOSED")).toBe(true);
  });

  it("runs beforeStart before start, setup after it, and teardown before removal", async () => {
    const driver = createFakeDriver();
    const calls: string[] = [];
    const pool = makePool<{ agent: string }>(driver, {
      min: 1,
      beforeStart: async ({ containerId }) => {
        calls.push(`beforeStart:${driver.containers.get(containerId)?.status}`);
      },
      setup: async ({ containerId, adopted }) => {
        calls.push(`setup:${driver.containers.get(containerId)?.status}:${adopted}`);
        return { agent: `agent-${containerId.slice(0, 4)}` };
      },
      teardown: async ({ state }) => {
        calls.push(`teardown:${state.agent.slice(0, 6)}`);
      },
    });
    const lease = await pool.acquire({ leaseKey: "a" });
    expect(lease.state.agent).toBe(`agent-${lease.containerId.slice(0, 4)}`);
    await lease.release();
    expect(calls.slice(0, 2)).toEqual(["beforeStart:created", "setup:running:false"]);
    expect(calls).toContain("teardown:agent-");
  });

  it("retries a create whose setup fails and removes the half-made container", async () => {
    const driver = createFakeDriver();
    let attempts = 0;
    const pool = makePool(driver, {
      min: 1,
      createBackoff: { initialMs: 5, maxMs: 10 },
      setup: async () => {
        attempts++;
        if (attempts === 1) throw new Error("agent did not answer");
        return undefined;
      },
    });
    await pool.warm();
    expect(driver.calls.create).toBe(2);
    expect(driver.containers.size).toBe(1);
    expect(pool.metrics().createFailures).toBe(1);
  });

  it("measures acquire latency", async () => {
    const driver = createFakeDriver();
    const pool = makePool(driver, { min: 1 });
    await pool.warm();
    const acquired: number[] = [];
    pool.events.on("acquire", ({ latencyMs }) => acquired.push(latencyMs));
    for (let i = 0; i < 3; i++) await (await pool.acquire({ leaseKey: `k${i}` })).release();
    expect(acquired).toHaveLength(3);
    const { acquireLatencyMs } = pool.metrics();
    expect(acquireLatencyMs.p95).toBeGreaterThanOrEqual(acquireLatencyMs.p50);
    expect(acquireLatencyMs.p50).toBeGreaterThan(0);
  });

  it("rejects invalid options", () => {
    const driver = createFakeDriver();
    expect(() => createContainerPool({ driver, spec, min: 3, max: 2 })).toThrow(RangeError);
    expect(() => createContainerPool({ driver, spec, acquireTimeoutMs: 0 })).toThrow(RangeError);
    expect(() => createContainerPool({ driver, spec: { image: "" } })).toThrow(TypeError);
  });

  describe("hibernation", () => {
    it("detaches a hibernated lease as it is (stopped, out of max, never hibernated here); its adopter wakes it", async () => {
      const driver = createFakeDriver();
      let teardowns = 0;
      const pool = makePool(driver, {
        min: 0,
        max: 1,
        poolId: "handover",
        hibernateAfterMs: 0,
        teardown: () => {
          teardowns++;
        },
      });
      const sleeper = await pool.acquire({ leaseKey: "thread:run" });
      sleeper.idle();
      // Detached while it hibernates: the hibernation finishes first, and the teardown runs once.
      const hibernating = sleeper.hibernate();
      await sleeper.detach();
      await hibernating;
      expect(teardowns).toBe(1);
      expect(driver.containers.get(sleeper.containerId)?.status).toBe("exited");
      expect(pool.metrics()).toMatchObject({ size: 0, borrowed: 0, hibernated: 0 });
      await expect(sleeper.wake()).rejects.toMatchObject({ code: "NOT_FOUND" });
      // Its one slot is free exactly once: one new lease fits, a second waits.
      const next = await pool.acquire({ leaseKey: "thread:next" });
      expect(pool.metrics().size).toBe(1);
      await expect(
        pool.acquire({ leaseKey: "thread:more", signal: AbortSignal.timeout(100) }),
      ).rejects.toThrow();
      await next.release();

      // Another process takes it over: adopted as a hibernated lease, started by its first wake.
      const other = makePool(driver, { min: 0, poolId: "handover" });
      const adopted = await other.adopt(sleeper.containerId, { leaseKey: "thread:run" });
      expect(adopted.hibernated).toBe(true);
      expect(await adopted.wake()).toBe(true);
      expect(driver.containers.get(sleeper.containerId)?.status).toBe("running");
      // A running lease detached stays running and out of this pool's hands too.
      const kept = await other.acquire({ leaseKey: "thread:kept" });
      kept.idle();
      await kept.detach();
      await new Promise((resolve) => setTimeout(resolve, 100)); // sweeps pass: it is not hibernated
      expect(driver.containers.get(kept.containerId)?.status).toBe("running");
      await adopted.release();
      await driver.remove(kept.containerId);
    });

    it("stops a lease idle past hibernateAfterMs, frees its room and wakes it on use with a new state", async () => {
      const driver = createFakeDriver();
      let setups = 0;
      const pool = makePool<number>(driver, { min: 0, max: 2, hibernateAfterMs: 50, setup: () => ++setups });
      const lease = await pool.acquire({ leaseKey: "thread:a" });
      expect(lease.state).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 120));
      expect(lease.hibernated).toBe(false); // in use until idle()
      lease.idle();
      await waitFor(() => lease.hibernated, 2_000, "hibernation");
      expect(driver.containers.get(lease.containerId)?.status).toBe("exited");
      expect(pool.metrics()).toMatchObject({ size: 0, borrowed: 1, hibernated: 1 });
      expect(await lease.wake()).toBe(true);
      expect(lease.state).toBe(2);
      expect(driver.containers.get(lease.containerId)?.status).toBe("running");
      expect(await lease.wake()).toBe(false);
      await lease.release();
      expect(driver.containers.size).toBe(0);
    });

    it("hibernates the least recently used idle lease at once when an acquire waits for room", async () => {
      const driver = createFakeDriver();
      const pool = makePool(driver, { min: 0, max: 2, hibernateAfterMs: Number.POSITIVE_INFINITY });
      const older = await pool.acquire({ leaseKey: "thread:old" });
      const newer = await pool.acquire({ leaseKey: "thread:new" });
      older.idle();
      await new Promise((resolve) => setTimeout(resolve, 5));
      newer.idle();
      const third = await pool.acquire({ leaseKey: "thread:third" });
      expect(older.hibernated).toBe(true);
      expect(newer.hibernated).toBe(false);
      // Waking the older one makes room again from the now least recently used idle lease.
      expect(await older.wake()).toBe(true);
      expect(newer.hibernated).toBe(true);
      expect(
        running(driver)
          .map((c) => c.id)
          .sort(),
      ).toEqual([older.containerId, third.containerId].sort());
    });

    it("a wake with no idle lease to hibernate waits and fails with POOL_EXHAUSTED", async () => {
      const driver = createFakeDriver();
      const pool = makePool(driver, { min: 0, max: 1, acquireTimeoutMs: 200 });
      const sleeper = await pool.acquire({ leaseKey: "thread:a" });
      await sleeper.hibernate();
      const busy = await pool.acquire({ leaseKey: "thread:b" });
      await expect(sleeper.wake()).rejects.toMatchObject({ code: "POOL_EXHAUSTED" });
      expect(sleeper.hibernated).toBe(true);
      busy.idle();
      expect(await sleeper.wake()).toBe(true);
      expect(busy.hibernated).toBe(true);
    });

    it("removes the longest hibernated beyond maxHibernated; their wake rejects with NOT_FOUND", async () => {
      const driver = createFakeDriver();
      const pool = makePool(driver, { min: 0, max: 4, maxHibernated: 1 });
      const first = await pool.acquire({ leaseKey: "thread:1" });
      const second = await pool.acquire({ leaseKey: "thread:2" });
      await first.hibernate();
      await second.hibernate();
      await waitFor(() => !driver.containers.has(first.containerId), 2_000, "budget removal");
      expect(driver.containers.get(second.containerId)?.status).toBe("exited");
      await expect(first.wake()).rejects.toMatchObject({ code: "NOT_FOUND" });
      await first.release();
      expect(await second.wake()).toBe(true);
    });
  });
});
