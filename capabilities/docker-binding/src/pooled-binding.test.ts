import type { ContainerInspection } from "@pai/pool";
import { createFakeDriver, type FakeDriver } from "@pai/pool/testing";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createPooledBinding, type PooledBinding } from "./pooled-binding.ts";

const spec = { image: "fake/sandbox:1" };

/** A facade with one call that asks the container's engine. */
interface FakeFacade {
  inspect(): Promise<ContainerInspection>;
}

const bindings: PooledBinding<FakeFacade>[] = [];

function binding(
  engines: Record<string, FakeDriver>,
  {
    prepared = [],
    made = [],
    hibernateAfterMs,
  }: { prepared?: string[]; made?: number[]; hibernateAfterMs?: number } = {},
) {
  const pooled = createPooledBinding<number, FakeFacade>({
    capability: "sandbox",
    engines: Object.entries(engines).map(([id, driver]) => ({ id, driver })),
    poolId: "pai-sandbox-unit",
    pool: {
      min: 0,
      max: 4,
      acquireTimeoutMs: 2_000,
      ...(hibernateAfterMs !== undefined ? { hibernateAfterMs } : {}),
    },
    tuning: { engineChecks: { intervalMs: 20, timeoutMs: 200, backoff: { initialMs: 20, maxMs: 40 } } },
    closedError: () => new Error("closed"),
    calls: { inspect: {} },
    // The state counts the container's set-ups: a wake sets it up again.
    prepare: async () => {
      let setups = 0;
      return {
        image: spec.image,
        spec,
        setup: () => ++setups,
        prepareEngine: async ({ engineId }) => {
          prepared.push(`${engineId}:${spec.image}`);
        },
        facadeOf: (lease) => {
          made.push(lease.state);
          return { facade: { inspect: () => lease.driver.inspect(lease.containerId) } };
        },
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
    const first = binding({ a, b }, { prepared });
    const onA = await first.provision({ leaseKey: "thread:1", signal });
    const onB = await first.provision({ leaseKey: "thread:2", signal });
    expect(onA.meta).toEqual({ poolId: "pai-sandbox-unit", image: spec.image, engine: "a" });
    expect(onB.meta).toEqual({ poolId: "pai-sandbox-unit", image: spec.image, engine: "b" });
    expect(prepared.sort()).toEqual(["a:fake/sandbox:1", "b:fake/sandbox:1"]);
    await first.close(); // a restart: the leased containers stay

    const second = binding({ a, b });
    const record = { resourceId: onB.resourceId, lifetime: "thread" as const, key: "2", meta: onB.meta };
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

  it("hibernates an idle resource and wakes it on its own engine with a new facade; a lost engine loses it", async () => {
    const a = createFakeDriver();
    const b = createFakeDriver();
    const made: number[] = [];
    const pooled = binding({ a, b }, { made, hibernateAfterMs: 0 });
    const seen: string[] = [];
    pooled.events.on("hibernate", (event) => seen.push(`hibernate:${event.engineId}`));
    pooled.events.on("wake", (event) => seen.push(`wake:${event.engineId}`));
    const onA = await pooled.provision({ leaseKey: "thread:1", signal });
    const onB = await pooled.provision({ leaseKey: "thread:2", signal });
    const before = onA.facade;
    expect(made).toHaveLength(1);

    onA.hibernation.idle();
    await vi.waitFor(() => expect(pooled.metrics()?.hibernated).toBe(1), { timeout: 5_000 });
    expect(a.containers.get(onA.resourceId)?.status).toBe("exited");
    expect(() => onA.facade).toThrow(/hibernated: wake it first/);
    expect(pooled.metrics()).toMatchObject({ borrowed: 2, hibernated: 1 });
    expect(await onA.hibernation.wake(signal)).toBe("woken");
    expect(a.containers.get(onA.resourceId)?.status).toBe("running");
    expect(b.containers.has(onA.resourceId)).toBe(false);
    // Set up again on wake: a new facade over the new state.
    expect(onA.facade).not.toBe(before);
    expect(made).toHaveLength(2);
    expect(made[1]).not.toBe(made[0]);
    await expect(onA.facade.inspect()).resolves.toMatchObject({ running: true });
    expect(await onA.hibernation.wake(signal)).toBe("running");
    expect(seen).toEqual(["hibernate:a", "wake:a"]);

    // A hibernated resource of an engine that stops answering is lost: its wake says so.
    onB.hibernation.idle();
    await vi.waitFor(() => expect(b.containers.get(onB.resourceId)?.status).toBe("exited"), {
      timeout: 5_000,
    });
    b.setUnavailable(true);
    await vi.waitFor(() => expect(pooled.metrics()?.engines[1]?.lost).toBe(1));
    await expect(onB.hibernation.wake(signal)).rejects.toMatchObject({
      code: "CONTAINER_LOST",
      message: expect.stringContaining("engine b stopped answering"),
    });
    expect(() => onB.facade).toThrow(expect.objectContaining({ code: "CONTAINER_LOST" }));
  });
});

describe("createPooledBinding when a container stops on its own", () => {
  /** A binding on one fake engine whose set-ups can be made to fail and whose health the test decides. */
  function restartingBinding(
    driver: FakeDriver,
    options: { carryOver?: readonly string[]; carryOverStopped?: boolean } = {},
  ) {
    /** `failSetups`: how many of the next set-ups fail. */
    const control = { failSetups: 0, healthy: true, made: [] as number[] };
    const pooled = createPooledBinding<number, FakeFacade>({
      capability: "sandbox",
      engines: [{ id: "a", driver }],
      poolId: "pai-sandbox-restarts",
      pool: { min: 0, max: 4, acquireTimeoutMs: 2_000, restartLimit: { restarts: 2, withinMs: 400 } },
      ...(options.carryOver ? { carryOver: options.carryOver } : {}),
      ...(options.carryOverStopped ? { carryOverStopped: true } : {}),
      closedError: () => new Error("closed"),
      calls: { inspect: {} },
      prepare: async () => {
        let setups = 0;
        return {
          image: spec.image,
          spec,
          setup: () => {
            if (control.failSetups > 0) {
              control.failSetups--;
              throw new Error("the agent did not come up");
            }
            return ++setups;
          },
          healthCheck: () => control.healthy,
          facadeOf: (lease) => {
            control.made.push(lease.state);
            return { facade: { inspect: () => lease.driver.inspect(lease.containerId) } };
          },
        };
      },
    });
    bindings.push(pooled);
    return { pooled, control };
  }

  it("starts it again on the next use, says why, and gives up past the limit with CONTAINER_LOST", async () => {
    const driver = createFakeDriver();
    const { pooled, control } = restartingBinding(driver);
    const restarted: string[] = [];
    pooled.events.on("restart", (event) => restarted.push(event.reason));
    const sandbox = await pooled.provision({ leaseKey: "thread:1", signal });
    const id = sandbox.resourceId;
    expect(await sandbox.hibernation.wake(signal)).toBe("running");
    await expect(sandbox.facade.inspect()).resolves.toMatchObject({ running: true });

    driver.kill(id, { exitCode: 137 });
    expect(await sandbox.hibernation.wake(signal)).toEqual({
      status: "restarted",
      reason: "its container was killed (exit code 137)",
    });
    expect(sandbox.resourceId).toBe(id);
    expect(driver.containers.get(id)?.status).toBe("running");
    await expect(sandbox.facade.inspect()).resolves.toMatchObject({ running: true });
    expect(control.made).toEqual([1, 2]); // set up again: a new facade
    expect(await sandbox.hibernation.wake(signal)).toBe("running");

    // Stopped with no engine event (one lost while the engine restarted): the health check sends it to the engine.
    driver.containers.get(id)!.status = "exited";
    driver.containers.get(id)!.exitCode = 143;
    control.healthy = false;
    expect(await sandbox.hibernation.wake(signal)).toEqual({
      status: "restarted",
      reason: "its container was stopped (exit code 143)",
    });
    // A failing health check of a running container is not a stop.
    expect(await sandbox.hibernation.wake(signal)).toBe("running");
    control.healthy = true;

    // A third stop within the window is not started again.
    driver.kill(id, { oom: true });
    await expect(sandbox.hibernation.wake(signal)).rejects.toMatchObject({
      code: "CONTAINER_LOST",
      details: { reason: "its container ran out of memory", restarts: 2, withinMs: 400 },
    });
    expect(driver.containers.get(id)?.status).toBe("exited");
    expect(restarted).toHaveLength(2);
    // Once the first restart is older than the window, the next use starts it again.
    await new Promise((resolve) => setTimeout(resolve, 450));
    expect(await sandbox.hibernation.wake(signal)).toMatchObject({ status: "restarted" });
    expect(driver.containers.get(id)?.status).toBe("running");
  });

  it("gives it a successor that inherits its carried folders when it cannot be started again", async () => {
    const driver = createFakeDriver();
    const { pooled, control } = restartingBinding(driver, { carryOver: ["/workspace"] });
    const sandbox = await pooled.provision({ leaseKey: "thread:1", signal });
    const old = sandbox.resourceId;
    await driver.putArchive(old, "/workspace/.", Buffer.from("the thread's files"));
    driver.kill(old, { exitCode: 137 });
    control.failSetups = 1; // the restart's: the successor's own set-up passes

    expect(await sandbox.hibernation.wake(signal)).toMatchObject({
      status: "restarted",
      reason: expect.stringContaining(
        "its container was killed (exit code 137); it could not be started again (the agent did not come up), so a new container took over its /workspace",
      ),
    });
    expect(sandbox.resourceId).not.toBe(old);
    expect(sandbox.meta).toEqual({ image: spec.image, poolId: "pai-sandbox-restarts", engine: "a" });
    expect(driver.containers.has(old)).toBe(false);
    expect(driver.containers.get(sandbox.resourceId)?.archives.get("/workspace")?.toString()).toBe(
      "the thread's files",
    );
    await expect(sandbox.facade.inspect()).resolves.toMatchObject({ running: true });
    await sandbox.release();
    expect([...driver.containers.keys()]).toEqual([]);
  });

  it("reattaches a container whose set-up fails once; one that keeps failing is replaced with carryOver, else rejects with why", async () => {
    const driver = createFakeDriver();
    const first = restartingBinding(driver);
    const settling = await first.pooled.provision({ leaseKey: "thread:1", signal });
    const broken = await first.pooled.provision({ leaseKey: "thread:2", signal });
    await driver.putArchive(broken.resourceId, "/workspace/.", Buffer.from("the thread's files"));
    await first.pooled.close(); // a restart: the leased containers stay
    const recordOf = (resourceId: string, key: string) => ({
      resourceId,
      lifetime: "thread" as const,
      key,
      meta: settling.meta,
    });

    const second = restartingBinding(driver);
    second.control.failSetups = 1; // what the old process ran is still dying: the second try passes
    expect((await second.pooled.reattach(recordOf(settling.resourceId, "1"), signal))?.resourceId).toBe(
      settling.resourceId,
    );
    second.control.failSetups = 2; // both tries fail
    await expect(second.pooled.reattach(recordOf(broken.resourceId, "2"), signal)).rejects.toMatchObject({
      code: "CONTAINER_FAILED",
      message: expect.stringContaining("the agent did not come up"),
      details: expect.objectContaining({ stage: "setup" }),
    });
    // Left where it was for the reaper (or a later adopt).
    expect(driver.containers.get(broken.resourceId)?.status).toBe("running");
    // Gone: nothing to tell, nothing to reattach.
    expect(await second.pooled.reattach(recordOf("gone", "3"), signal)).toBeUndefined();
    await second.pooled.close(); // the next restart

    // A successor whose programs hold the folders open from its start is stopped while they are copied in.
    const third = restartingBinding(driver, { carryOver: ["/workspace"], carryOverStopped: true });
    third.control.failSetups = 2;
    const putInto: string[] = [];
    const putArchive = driver.putArchive.bind(driver);
    driver.putArchive = async (id, path, archive, options) => {
      putInto.push(`${path}:${driver.containers.get(id)?.status}`);
      return putArchive(id, path, archive, options);
    };
    const successor = await third.pooled.reattach(recordOf(broken.resourceId, "2"), signal);
    expect(putInto).toEqual(["/workspace:exited"]);
    // Started again (and set up, as a wake does) once the folders are in.
    expect(driver.containers.get(successor!.resourceId)?.status).toBe("running");
    expect(successor?.resourceId).not.toBe(broken.resourceId);
    expect(driver.containers.has(broken.resourceId)).toBe(false);
    expect(driver.containers.get(successor!.resourceId)?.archives.get("/workspace")?.toString()).toBe(
      "the thread's files",
    );
    await expect(successor!.facade.inspect()).resolves.toMatchObject({ running: true });
  });
});
