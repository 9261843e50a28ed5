import { createConnectionAudience } from "@pai/container-agent";
import type { CapabilityConnectionEvent } from "@pai/core";
import { createMultiEnginePool, type MultiEnginePool, type MultiEnginePoolOptions } from "@pai/pool";
import { createFakeDriver, type FakeDriver } from "@pai/pool/testing";
import { afterEach, describe, expect, it } from "vitest";
import { bindFacade } from "./bind-facade.ts";

const pools: MultiEnginePool<unknown>[] = [];

/** Fast health checks, so an engine's loss shows within milliseconds. */
const quickChecks = {
  intervalMs: 20,
  timeoutMs: 200,
  backoff: { initialMs: 20, maxMs: 40 },
  infoIntervalMs: 0,
};

function makePool(
  engines: Record<string, FakeDriver>,
  options: Partial<MultiEnginePoolOptions> = {},
): MultiEnginePool {
  const pool = createMultiEnginePool({
    engines: Object.entries(engines).map(([id, driver]) => ({ id, driver })),
    spec: { image: "fake/sandbox:1" },
    min: 0,
    max: 4,
    acquireTimeoutMs: 2_000,
    evictionIntervalMs: 20,
    poolId: "bind-facade",
    engineChecks: quickChecks,
    ...options,
  });
  pools.push(pool as MultiEnginePool<unknown>);
  return pool;
}

const acquireMany = async (pool: MultiEnginePool, count: number) => {
  const leases = [];
  for (let i = 0; i < count; i++) leases.push(await pool.acquire({ leaseKey: `thread:${i}` }));
  return leases;
};

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

/** A facade whose calls record the options they got and hold until the test lets them go. */
function recordingFacade() {
  const seen: Array<{ method: string; args: unknown[] }> = [];
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const facade = {
    label: "a facade",
    run: async (command: string, options?: { signal?: AbortSignal; tag?: string }) => {
      seen.push({ method: "run", args: [command, options] });
      return command;
    },
    start: async (options: { signal?: AbortSignal }) => {
      seen.push({ method: "start", args: [options] });
      return { done: () => finished };
    },
    info: () => "info",
  };
  return { facade, seen, finish };
}

describe("bindFacade", () => {
  it("joins the run's signal to the options each declared call takes, keeping the caller's own", async () => {
    const { facade, seen } = recordingFacade();
    const run = new AbortController();
    const own = new AbortController();
    const view = bindFacade(facade, {
      calls: { label: {}, run: { options: 1 }, start: { options: 0 }, info: {} },
      signal: run.signal,
    });
    await view.run("a");
    await view.run("b", { signal: own.signal, tag: "mine" });
    await view.start({});
    expect(view.info()).toBe("info");
    expect(view.label).toBe("a facade");
    const [first, second, third] = seen.map(
      (call) => call.args.at(-1) as { signal: AbortSignal; tag?: string },
    );
    expect(first?.signal).toBe(run.signal);
    expect(second?.tag).toBe("mine");
    own.abort();
    expect([first?.signal.aborted, second?.signal.aborted, third?.signal.aborted]).toEqual([
      false,
      true,
      false,
    ]);
    run.abort();
    expect([first?.signal.aborted, third?.signal.aborted]).toEqual([true, true]);
  });

  it("shows the declared members only", () => {
    const { facade } = recordingFacade();
    const view = bindFacade(facade, { calls: { label: {}, run: {}, start: {}, info: {} } });
    expect(Object.keys(view).sort()).toEqual(["info", "label", "run", "start"]);
    const partial = bindFacade(facade as { run: typeof facade.run }, { calls: { run: {} } });
    expect(Object.keys(partial)).toEqual(["run"]);
  });

  it("tells the run of the connections made while a call runs, and while what it started lasts (until)", async () => {
    const { facade, finish } = recordingFacade();
    const audience = createConnectionAudience();
    const reported: CapabilityConnectionEvent[] = [];
    const report = (event: CapabilityConnectionEvent) => reported.push(event);
    const view = bindFacade(facade, {
      calls: {
        label: {},
        run: { options: 1 },
        start: { options: 0, until: (started) => started.done() },
        info: {},
      },
      signal: new AbortController().signal,
      report,
      audience,
    });
    const event = {
      target: "example.com:443",
      decision: "allowed" as const,
      bytesUp: 1,
      bytesDown: 2,
      durationMs: 3,
    };
    const during = view.run("a");
    audience.snapshot()(event); // a connection opened while `run` runs
    await during;
    await new Promise((resolve) => setImmediate(resolve));
    audience.snapshot()(event); // after it: nobody's
    expect(reported).toEqual([event]);

    await view.start({});
    await new Promise((resolve) => setImmediate(resolve));
    audience.snapshot()(event); // the started work still runs
    expect(reported).toHaveLength(2);
    finish();
    await new Promise((resolve) => setImmediate(resolve));
    audience.snapshot()(event);
    expect(reported).toHaveLength(2);
  });

  it("rejects a call in flight at the moment its lease is lost (no hang)", async () => {
    const a = createFakeDriver();
    const pool = makePool({ a });
    const [lease] = await acquireMany(pool, 1);
    if (!lease) throw new Error("no lease");
    const facade = bindFacade(
      { hang: () => new Promise<never>(() => {}) },
      { calls: { hang: {} }, lost: lease },
    );
    const call = facade.hang();
    a.setUnavailable(true); // the periodic health check finds it
    await expect(call).rejects.toMatchObject({ code: "CONTAINER_LOST" });
    // And later calls fail before starting.
    await expect(facade.hang()).rejects.toThrow(/stopped answering/);
  });

  it("answers a call that failed because its engine went away with CONTAINER_LOST, and lets other failures through unchecked", async () => {
    const a = createFakeDriver();
    const pool = makePool({ a }, { engineChecks: { ...quickChecks, intervalMs: 60_000 } });
    const [lease] = await acquireMany(pool, 1);
    if (!lease) throw new Error("no lease");
    const facade = bindFacade(
      {
        read: () => Promise.reject(new Error("no such file")),
        // A call whose Docker request fails, reported in words of its own (as an executor does).
        run: () =>
          lease.driver.inspect(lease.containerId).catch((cause: unknown) => {
            throw new Error("the sandbox agent is gone", { cause });
          }),
      },
      { calls: { read: {}, run: {} }, lost: lease },
    );
    const pings = a.calls.ping;
    await expect(facade.read()).rejects.toThrow("no such file");
    expect(a.calls.ping).toBe(pings); // an ordinary failure costs no health check
    a.setUnavailable(true);
    await expect(facade.run()).rejects.toMatchObject({ code: "CONTAINER_LOST" });
    await expect(facade.read()).rejects.toMatchObject({ code: "CONTAINER_LOST" });
  });
});
