import { afterEach, describe, expect, it } from "vitest";
import { poolLabels } from "./labels.ts";
import {
  createMultiEnginePool,
  type MultiEnginePool,
  type MultiEnginePoolEventMap,
  type MultiEnginePoolOptions,
} from "./multi-engine-pool.ts";
import { PoolError } from "./pool-error.ts";
import { specHash } from "./spec-hash.ts";
import { createFakeDriver, type FakeDriver } from "./testing/fake-driver.ts";

const spec = { image: "fake/sandbox:1", limits: { memoryBytes: 512 * 1024 ** 2, nanoCpus: 1e9 } };
const pools: MultiEnginePool<unknown>[] = [];

/** Fast health checks, so an engine's loss and return show within milliseconds. */
const quickChecks = {
  intervalMs: 20,
  timeoutMs: 200,
  backoff: { initialMs: 20, maxMs: 40 },
  infoIntervalMs: 0,
};

function makePool<STATE = undefined>(
  engines: Record<string, FakeDriver>,
  options: Partial<MultiEnginePoolOptions<STATE>> = {},
): MultiEnginePool<STATE> {
  const pool = createMultiEnginePool<STATE>({
    engines: Object.entries(engines).map(([id, driver]) => ({ id, driver })),
    spec,
    min: 0,
    max: 4,
    acquireTimeoutMs: 2_000,
    evictionIntervalMs: 20,
    poolId: "multi",
    engineChecks: quickChecks,
    ...options,
  });
  pools.push(pool as MultiEnginePool<unknown>);
  return pool;
}

async function waitFor(condition: () => boolean, what: string, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function collect<NAME extends keyof MultiEnginePoolEventMap>(
  pool: MultiEnginePool<unknown>,
  name: NAME,
): MultiEnginePoolEventMap[NAME][] {
  const seen: MultiEnginePoolEventMap[NAME][] = [];
  pool.events.on(name, (event) => seen.push(event));
  return seen;
}

const statusOf = (pool: MultiEnginePool<unknown>, id: string) =>
  pool.metrics().engines.find((engine) => engine.id === id)?.status;

const acquireMany = async (pool: MultiEnginePool<unknown>, count: number) => {
  const leases = [];
  for (let i = 0; i < count; i++) leases.push(await pool.acquire({ leaseKey: `thread:${i}` }));
  return leases;
};

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe("createMultiEnginePool placement", () => {
  it("puts each new container on the engine with the most free slots, so leases spread evenly", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const pool = makePool({ a, b });
    const leases = await acquireMany(pool, 4);
    expect(leases.map((lease) => lease.engineId)).toEqual(["a", "b", "a", "b"]);
    for (const lease of leases) {
      expect((lease.engineId === "a" ? a : b).containers.has(lease.containerId)).toBe(true);
    }
  });

  it("spreads a burst of concurrent acquires (placements under way count as leased)", async () => {
    const a = createFakeDriver({ createDelayMs: 20 });
    const b = createFakeDriver({ createDelayMs: 20 });
    const pool = makePool({ a, b });
    const leases = await Promise.all([1, 2, 3, 4].map((n) => pool.acquire({ leaseKey: `thread:${n}` })));
    expect(leases.filter((lease) => lease.engineId === "a")).toHaveLength(2);
    expect(leases.filter((lease) => lease.engineId === "b")).toHaveLength(2);
  });

  it("weighs the host's CPUs and memory that docker info reports against the containers running there", async () => {
    // Engine a is listed first but its host runs another owner's container on its only 2 CPUs.
    const a = createFakeDriver({ host: { cpus: 2, memoryBytes: 64 * 1024 ** 3 } });
    const b = createFakeDriver({ host: { cpus: 2, memoryBytes: 64 * 1024 ** 3 } });
    a.addContainer({ "other.app": "yes" });
    const pool = makePool({ a, b });
    const [first] = await acquireMany(pool, 1);
    expect(first?.engineId).toBe("b");
    const engines = pool.metrics().engines;
    expect(engines.find((engine) => engine.id === "a")?.capacity).toMatchObject({ cpu: 0.5, slots: 1 });

    // Memory, likewise: a small host is full with one container at this pool's 512 MiB limit.
    const small = createFakeDriver({ host: { cpus: 64, memoryBytes: 512 * 1024 ** 2 } });
    const big = createFakeDriver({ host: { cpus: 64, memoryBytes: 64 * 1024 ** 3 } });
    small.addContainer({ "other.app": "yes" });
    const second = makePool({ small, big }, { poolId: "memory" });
    expect((await second.acquire({ leaseKey: "thread:m" })).engineId).toBe("big");
    expect(second.metrics().engines.find((engine) => engine.id === "small")?.capacity.memory).toBe(0);
  });

  it("counts min and max per engine, and an engine's own max overrides the pool's", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const pool = createMultiEnginePool({
      engines: [
        { id: "a", driver: a, max: 1 },
        { id: "b", driver: b, min: 2 },
      ],
      spec,
      min: 1,
      max: 3,
      acquireTimeoutMs: 300,
      engineChecks: quickChecks,
    });
    pools.push(pool as MultiEnginePool<unknown>);
    await pool.warm();
    expect(a.containers.size).toBe(1);
    expect(b.containers.size).toBe(2);
    expect(pool.metrics()).toMatchObject({ min: 3, max: 4 });
    const leases = await acquireMany(pool, 4);
    expect(leases.filter((lease) => lease.engineId === "a")).toHaveLength(1);
    expect(leases.filter((lease) => lease.engineId === "b")).toHaveLength(3);
    await expect(pool.acquire({ leaseKey: "thread:5" })).rejects.toMatchObject({
      code: "POOL_EXHAUSTED",
      message: expect.stringMatching(/\(1 leased, max 1\) on engine a$/),
      details: expect.objectContaining({ engineId: "a", engines: expect.any(Array) }),
    });
  });

  it("prepares each engine once before its first container, and again after a failed preparation", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const prepared: string[] = [];
    let failA = true;
    const pool = makePool(
      { a, b },
      {
        prepareEngine: async ({ engineId, driver }) => {
          expect(driver === a || driver === b).toBe(false); // the engine's guarded driver
          if (engineId === "a" && failA) {
            failA = false;
            throw new Error("agent volume failed");
          }
          prepared.push(engineId);
        },
      },
    );
    const errors = collect(pool, "error");
    const leases = await acquireMany(pool, 3);
    expect(errors.some((event) => event.operation === "prepare" && event.engineId === "a")).toBe(true);
    expect(prepared.sort()).toEqual(["a", "b"]);
    expect(leases.map((lease) => lease.engineId)).toContain("a");
  });

  it("places on the other engines while one cannot be prepared, and reports the preparation's error when none can", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const broken = new Set(["a"]);
    const pool = makePool(
      { a, b },
      {
        prepareEngine: async ({ engineId }) => {
          if (broken.has(engineId)) throw new Error(`no image on ${engineId}`);
        },
      },
    );
    const leases = await acquireMany(pool, 3);
    expect(leases.map((lease) => lease.engineId)).toEqual(["b", "b", "b"]);
    broken.add("b");
    const other = makePool(
      { a, b },
      {
        poolId: "broken",
        prepareEngine: async ({ engineId }) => {
          if (broken.has(engineId)) throw new Error(`no image on ${engineId}`);
        },
      },
    );
    await expect(other.acquire({ leaseKey: "thread:x" })).rejects.toThrow(/no image on (a|b)/);
  });

  it("checks each engine before preparing it: an engine without the image gets no container, and each engine's runtime shows", async () => {
    const a = createFakeDriver({ images: [] });
    const b = createFakeDriver({ images: [spec.image], defaultRuntime: "crun" });
    const prepared: string[] = [];
    const pool = makePool(
      { a, b },
      {
        prepareEngine: async ({ engineId }) => {
          prepared.push(engineId);
        },
      },
    );
    const errors = collect(pool, "error");
    // Warming succeeds on the engine that has the image; the other is told as an error event.
    await pool.warm();
    expect(errors.map((event) => [event.operation, event.engineId])).toEqual([["prepare", "a"]]);
    const leases = await acquireMany(pool, 2);
    expect(leases.map((lease) => lease.engineId)).toEqual(["b", "b"]);
    expect(prepared).toEqual(["b"]);
    expect(a.containers.size).toBe(0);
    const engines = pool.metrics().engines;
    expect(engines.find((engine) => engine.id === "b")?.runtime).toBe("crun");
    expect(engines.find((engine) => engine.id === "a")?.runtime).toBeUndefined();
    const only = makePool({ a }, { poolId: "no-image" });
    await expect(only.warm()).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(only.acquire({ leaseKey: "thread:x" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("createMultiEnginePool images", () => {
  it("makes sure of each engine's image before checking it, and warms within its timeout counted from then", async () => {
    const a = createFakeDriver({ createDelayMs: 30 });
    const b = createFakeDriver({ createDelayMs: 30 });
    const order: string[] = [];
    const pool = makePool(
      { a, b },
      {
        min: 1,
        // A build takes minutes; here 300 ms, longer than the warm timeout below.
        ensureImage: async ({ engineId }) => {
          const driver = engineId === "a" ? a : b;
          order.push(`ensure ${engineId} (checked ${driver.calls.checkEngine})`);
          await new Promise((resolve) => setTimeout(resolve, 300));
        },
        prepareEngine: async ({ engineId }) => {
          const driver = engineId === "a" ? a : b;
          order.push(`prepare ${engineId} (checked ${driver.calls.checkEngine})`);
        },
      },
    );
    await pool.warm({ timeoutMs: 200 });
    expect(order.sort()).toEqual([
      "ensure a (checked 0)",
      "ensure b (checked 0)",
      "prepare a (checked 1)",
      "prepare b (checked 1)",
    ]);
    expect(pool.metrics().available).toBe(2);
  });

  it("tries again to make sure of an engine's image after it failed", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    let failA = true;
    const pool = makePool(
      { a, b },
      {
        ensureImage: async ({ engineId }) => {
          if (engineId === "a" && failA) {
            failA = false;
            throw new PoolError("IMAGE_UNAVAILABLE", "the build failed");
          }
        },
      },
    );
    const errors = collect(pool, "error");
    const leases = await acquireMany(pool, 3);
    expect(errors.map((event) => [event.operation, event.engineId, (event.error as Error).message])).toEqual([
      ["prepare", "a", "the build failed"],
    ]);
    expect(leases.map((lease) => lease.engineId)).toContain("a");
  });
});

describe("createMultiEnginePool ownership", () => {
  it("labels containers with its owner on every engine, and a pool made without one takes the owner it is given later", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const owned = makePool({ a, b }, { ownerId: "me", poolId: "owned" });
    await acquireMany(owned, 2);
    const ownersOf = (driver: FakeDriver, poolId: string) =>
      [...driver.containers.values()]
        .filter((container) => container.labels[poolLabels.pool] === poolId)
        .map((container) => container.labels[poolLabels.owner]);
    expect([...ownersOf(a, "owned"), ...ownersOf(b, "owned")]).toEqual(["me", "me"]);

    // Engine a is prepared before the claim, engine b only after it.
    const c = createFakeDriver();
    const late = makePool({ a: c, b }, { poolId: "late", min: 0 });
    expect(late.ownerId).toBeUndefined();
    const first = await late.acquire({ leaseKey: "thread:early" });
    expect(first.engineId).toBe("a");
    expect(ownersOf(c, "late")).toEqual([undefined]);
    late.claimOwner("runtime");
    expect(late.ownerId).toBe("runtime");
    const next = await acquireMany(late, 3);
    expect(new Set(next.map((lease) => lease.engineId))).toEqual(new Set(["a", "b"]));
    expect(ownersOf(b, "late").every((owner) => owner === "runtime")).toBe(true);
    expect(ownersOf(c, "late").filter((owner) => owner === "runtime").length).toBeGreaterThan(0);
    expect(() => late.claimOwner("runtime")).not.toThrow();
    expect(() => late.claimOwner("someone-else")).toThrow(/already belongs/);
  });

  it("keeps leased containers on close({ keepLeased }) on every engine and removes the idle ones", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const pool = makePool({ a, b }, { ownerId: "me", min: 1 });
    await pool.warm();
    const leases = await acquireMany(pool, 2);
    await pool.close({ keepLeased: true });
    const left = [...a.containers.keys(), ...b.containers.keys()].sort();
    expect(left).toEqual(leases.map((lease) => lease.containerId).sort());
  });
});

describe("createMultiEnginePool with an engine that stops answering", () => {
  it("never places on an engine that does not answer", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    a.setUnavailable(true);
    const pool = makePool({ a, b });
    const leases = await acquireMany(pool, 3);
    expect(leases.map((lease) => lease.engineId)).toEqual(["b", "b", "b"]);
    expect(statusOf(pool, "a")).toBe("unreachable");
    expect(pool.metrics().engines.find((engine) => engine.id === "a")?.error).toMatch(/unavailable/);
  });

  it("reports its leases as lost with CONTAINER_LOST naming the engine, and new leases go elsewhere", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const pool = makePool({ a, b });
    const lostEvents = collect(pool, "lost");
    const engineEvents = collect(pool, "engine");
    const [onA, onB] = await acquireMany(pool, 2);
    expect(onA?.engineId).toBe("a");

    a.setUnavailable(true);
    // The lease's next Docker call finds the engine gone: a health check confirms it at once.
    await expect(onA?.driver.inspect(onA.containerId)).rejects.toMatchObject({ code: "DOCKER_UNAVAILABLE" });
    await waitFor(() => onA?.lostSignal.aborted === true, "the lease on a to be lost");

    const lost = onA?.lostSignal.reason as PoolError;
    expect(PoolError.hasCode(lost, "CONTAINER_LOST")).toBe(true);
    expect(lost.message).toContain("engine a");
    expect(lost.details).toMatchObject({
      engineId: "a",
      containerId: onA?.containerId,
      leaseKey: "thread:0",
    });
    expect(lostEvents).toEqual([
      expect.objectContaining({ engineId: "a", containerId: onA?.containerId, leaseKey: "thread:0" }),
    ]);
    expect(engineEvents).toContainEqual(expect.objectContaining({ engineId: "a", status: "unreachable" }));
    expect(onB?.lostSignal.aborted).toBe(false);
    // Calls on the lost engine fail at once instead of waiting on it.
    await expect(onA?.driver.exec(onA.containerId, { cmd: ["true"] })).rejects.toThrow(
      /engine a is unreachable/,
    );

    const next = await acquireMany(pool, 2);
    expect(next.map((lease) => lease.engineId)).toEqual(["b", "b"]);
    expect(pool.metrics().engines.find((engine) => engine.id === "a")).toMatchObject({
      status: "unreachable",
      lost: 1,
    });
  });

  it("checks an unreachable engine with backoff and, once it answers, takes leases there and removes the lost containers", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const pool = makePool(
      { a, b },
      { engineChecks: { ...quickChecks, backoff: { initialMs: 40, maxMs: 320 } } },
    );
    const engineEvents = collect(pool, "engine");
    const [onA, onB] = await acquireMany(pool, 2);
    if (!onA) throw new Error("no lease");
    expect(onB?.engineId).toBe("b");
    a.setUnavailable(true);
    await waitFor(() => statusOf(pool, "a") === "unreachable", "a to be unreachable");
    const pingsBefore = a.calls.ping;
    await new Promise((resolve) => setTimeout(resolve, 600));
    // 40 + 80 + 160 + 320 ms: about 4 checks in 600 ms, where the 20 ms interval would make 30.
    expect(a.calls.ping - pingsBefore).toBeLessThanOrEqual(6);
    await onA.release(); // resolves: the container goes once the engine answers again
    expect(a.containers.has(onA.containerId)).toBe(true);

    a.setUnavailable(false);
    await waitFor(() => statusOf(pool, "a") === "reachable", "a to come back", 3_000);
    expect(engineEvents.map((event) => `${event.engineId}:${event.status}`)).toEqual([
      "a:unreachable",
      "a:reachable",
    ]);
    await waitFor(() => !a.containers.has(onA.containerId), "the lost container to be removed");
    // b holds a lease, a none: a has more free capacity again.
    const next = await pool.acquire({ leaseKey: "thread:after" });
    expect(next.engineId).toBe("a");
  });

  it("takes a slow engine for busy, not gone: unreachable only after two checks in a row time out", async () => {
    const a = createFakeDriver();
    a.setPingDelay(150); // the checks' deadline is 100 ms
    const pool = makePool(
      { a },
      { engineChecks: { ...quickChecks, timeoutMs: 100, intervalMs: 60_000, backoff: { initialMs: 400 } } },
    );
    const [lease] = await acquireMany(pool, 1); // placed on it although its first check timed out
    expect(lease?.engineId).toBe("a");
    expect(statusOf(pool, "a")).toBe("starting");
    await waitFor(() => statusOf(pool, "a") === "unreachable", "a second slow check", 3_000);
    a.setPingDelay(0);
    await waitFor(() => statusOf(pool, "a") === "reachable", "a quick answer", 3_000);
  });

  it("fails at once with DOCKER_UNAVAILABLE naming every engine when none answers", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    a.setUnavailable(true);
    b.setUnavailable(true);
    const pool = makePool({ a, b }, { acquireTimeoutMs: 10_000 });
    const startedAt = Date.now();
    const error = await pool.acquire({ leaseKey: "thread:x" }).catch((e: unknown) => e);
    expect(Date.now() - startedAt).toBeLessThan(5_000);
    expect(PoolError.hasCode(error, "DOCKER_UNAVAILABLE")).toBe(true);
    expect((error as Error).message).toMatch(/a \(.*\), b \(/);
    await expect(pool.warm()).rejects.toMatchObject({ code: "DOCKER_UNAVAILABLE" });
  });
});

describe("createMultiEnginePool after a restart", () => {
  function strayOn(driver: FakeDriver, poolId: string, owner?: string) {
    return driver.addContainer({
      [poolLabels.managed]: "true",
      [poolLabels.pool]: poolId,
      [poolLabels.spec]: specHash(spec),
      ...(owner ? { [poolLabels.owner]: owner } : {}),
    });
  }

  it("adopts a container on the engine its lease names", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const onB = strayOn(b, "multi");
    const pool = makePool({ a, b });
    await expect(pool.adopt(onB, { engineId: "a" })).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(pool.adopt(onB, { engineId: "c" })).rejects.toThrow(
      /engine c is not an engine of pool multi/,
    );
    const lease = await pool.adopt(onB, { engineId: "b", leaseKey: "thread:b" });
    expect(lease).toMatchObject({ engineId: "b", containerId: onB, adopted: true });
    expect(pool.leases()).toEqual([expect.objectContaining({ containerId: onB, engineId: "b" })]);
  });

  it("adopts on the first engine when the lease names none, and not on an engine that does not answer", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const onA = strayOn(a, "multi");
    const onB = strayOn(b, "multi");
    b.setUnavailable(true);
    const pool = makePool({ a, b });
    expect((await pool.adopt(onA)).engineId).toBe("a");
    await expect(pool.adopt(onB, { engineId: "b" })).rejects.toMatchObject({ code: "DOCKER_UNAVAILABLE" });
  });

  it("reaps strays on every engine that answers and reports the others", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const c = createFakeDriver();
    const strays = [strayOn(a, "multi"), strayOn(b, "multi"), strayOn(b, "other", "dead-owner")];
    const kept = strayOn(b, "multi");
    const liveOwner = strayOn(a, "other", "live-owner");
    const onC = strayOn(c, "multi");
    c.setUnavailable(true);
    const pool = makePool({ a, b, c }, { ownerId: "me" });
    const result = await pool.reapStrays({ keep: [kept], deadOwners: ["dead-owner"] });
    expect(result.removed.sort()).toEqual([...strays].sort());
    expect(b.containers.has(kept)).toBe(true);
    expect(a.containers.has(liveOwner)).toBe(true);
    expect(c.containers.has(onC)).toBe(true);
  });
});

describe("createMultiEnginePool hibernation", () => {
  it("places by running leases only, and wakes a hibernated lease on its own engine with its state set up again", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    let setups = 0;
    const pool = makePool<number>(
      { a, b },
      { max: 1, hibernateAfterMs: Number.POSITIVE_INFINITY, setup: () => ++setups },
    );
    const woken = collect(pool as MultiEnginePool<unknown>, "wake");
    const first = await pool.acquire({ leaseKey: "thread:1" });
    const second = await pool.acquire({ leaseKey: "thread:2" });
    expect([first.engineId, second.engineId]).toEqual(["a", "b"]);
    expect(first.state).toBe(1);
    await first.hibernate();
    expect(first.hibernated).toBe(true);
    expect(pool.metrics()).toMatchObject({ size: 1, borrowed: 2, hibernated: 1 });

    // Engine a's only slot is free again: the next lease goes there.
    const third = await pool.acquire({ leaseKey: "thread:3" });
    expect(third.engineId).toBe("a");
    third.idle();
    // The wake stays on engine a, making room there by hibernating its idle lease; b's busy lease is untouched.
    expect(await first.wake()).toBe(true);
    expect(first.state).toBe(4);
    expect(a.containers.get(first.containerId)?.status).toBe("running");
    expect(third.hibernated).toBe(true);
    expect(second.hibernated).toBe(false);
    expect(woken).toEqual([expect.objectContaining({ engineId: "a", containerId: first.containerId })]);
  });

  it("loses the hibernated leases of an engine that stops answering: wake and hibernate reject with CONTAINER_LOST", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const pool = makePool({ a, b }, { hibernateAfterMs: Number.POSITIVE_INFINITY });
    const lost = collect(pool as MultiEnginePool<unknown>, "lost");
    const onA = await pool.acquire({ leaseKey: "thread:1" });
    const onB = await pool.acquire({ leaseKey: "thread:2" });
    await onA.hibernate();
    a.setUnavailable(true);
    await waitFor(() => lost.length === 1, "the lost event");
    expect(lost[0]).toMatchObject({ engineId: "a", containerId: onA.containerId });
    expect(onA.lostSignal.aborted).toBe(true);
    await expect(onA.wake()).rejects.toMatchObject({ code: "CONTAINER_LOST" });
    await expect(onA.hibernate()).rejects.toMatchObject({ code: "CONTAINER_LOST" });
    await onB.hibernate();
    expect(await onB.wake()).toBe(true);
    await onA.release();
  });
});
