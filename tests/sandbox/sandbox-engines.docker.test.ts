// dockerSandbox over several engines: two extra local dockerd instances (scripts/docker-engines-extra), each with
// its own socket, data root and exec root, one reached through its socket and the other over TCP with mutual TLS
// (127.0.0.1 only). One of them is stopped mid-test and started again.
import type { LeaseRecord } from "@pai/core";
import { PoolError } from "@pai/pool";
import { type DockerSandboxBinding, dockerSandbox, type ProvisionedSandbox } from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  containersOn,
  engineSandboxImage,
  ensureTestEngines,
  removeFromEngines,
  stopTestEngine,
  type TestEngine,
} from "../fixtures/test-engines.ts";
import { uniquePoolId, waitFor } from "./docker-helpers.ts";

let engines: TestEngine[] = [];
const poolIds: string[] = [];

beforeAll(() => {
  engines = ensureTestEngines(2);
});

afterAll(async () => {
  // A test that failed half-way may have left an engine stopped: bring it back for the next run.
  engines = ensureTestEngines(2);
  for (const poolId of poolIds) await removeFromEngines(engines, poolId);
});

/** A binding on both engines: engine-1 through its socket, engine-2 through its socket or over TCP + TLS. */
function engineSandbox(poolId: string, options: { min?: number; tls?: boolean } = {}): DockerSandboxBinding {
  if (!poolIds.includes(poolId)) poolIds.push(poolId);
  const [one, two] = engines;
  if (!one || !two) throw new Error("two engines are needed");
  return dockerSandbox({
    image: engineSandboxImage(),
    engines: [one.engine, options.tls ? two.tlsEngine() : two.engine],
    poolId,
    pool: { min: options.min ?? 1, max: 3, acquireTimeoutMs: 60_000 },
    poolTuning: {
      engineChecks: { intervalMs: 1000, backoff: { initialMs: 250, maxMs: 1000 } },
      createBackoff: { initialMs: 250, maxMs: 1000 },
    },
  });
}

const request = (leaseKey: string) => ({
  leaseKey,
  lifetime: "thread" as const,
  signal: AbortSignal.timeout(120_000),
});
const engineOf = (resource: ProvisionedSandbox) => resource.meta?.engine;
const engine = (id: string) => {
  const found = engines.find((candidate) => candidate.id === id);
  if (!found) throw new Error(`no engine ${id}`);
  return found;
};

/** Fails instead of waiting forever: a lost sandbox must answer at once, not hang. */
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

describe("dockerSandbox on several engines", () => {
  it("keeps containers warm on each engine, spreads sandboxes over them, and reattaches each on its engine after a restart", async () => {
    const poolId = uniquePoolId("engines");
    const first = engineSandbox(poolId, { tls: true });
    let second: DockerSandboxBinding | undefined;
    const leased: ProvisionedSandbox[] = [];
    try {
      await first.start?.();
      for (const each of engines) expect(await containersOn(each, poolId)).toHaveLength(1);

      for (const key of ["a", "b", "c"]) leased.push(await first.provision(request(`thread:${key}`)));
      expect(new Set(leased.map(engineOf))).toEqual(new Set(["engine-1", "engine-2"]));
      for (const sandbox of leased) {
        const on = engine(String(engineOf(sandbox)));
        // The container is on the engine its lease names (engine-2's reached over TLS), equipped like the main
        // engine (its disk plugin); commands reach it through its agent.
        expect(await containersOn(on, poolId)).toContain(sandbox.resourceId);
        expect(await on.driver.diskUsage(sandbox.resourceId)).toMatchObject({
          usedBytes: expect.any(Number),
        });
        const result = await sandbox.facade.runCommand({ command: "hostname" });
        expect(sandbox.resourceId.startsWith(result.stdout.trim())).toBe(true);
      }
      const metrics = first.metrics();
      expect(metrics?.borrowed).toBe(3);
      expect(metrics?.engines.map((each) => [each.id, each.status])).toEqual([
        ["engine-1", "reachable"],
        ["engine-2", "reachable"],
      ]);
      for (const each of metrics?.engines ?? []) expect(each.info?.cpus).toBeGreaterThan(0);

      const onTwo = leased.find((sandbox) => engineOf(sandbox) === "engine-2");
      if (!onTwo) throw new Error("no sandbox on engine-2");
      await onTwo.facade.writeFiles([{ path: "notes.txt", content: "kept on engine-2" }]);
      await first.close(); // the process ends; its leased containers stay for the next one

      second = engineSandbox(poolId, { min: 0, tls: true });
      await second.start?.();
      const now = Date.now();
      const record: LeaseRecord = {
        capability: "sandbox",
        lifetime: "thread",
        key: "b",
        resourceId: onTwo.resourceId,
        meta: onTwo.meta ?? {},
        createdAt: now,
        lastUsedAt: now,
      };
      expect(record.meta).toMatchObject({ engine: "engine-2", poolId });
      // Looked for on the other engine, it is not there.
      const elsewhere = await second.reattach(
        { ...record, meta: { ...record.meta, engine: "engine-1" } },
        request("").signal,
      );
      expect(elsewhere).toBeUndefined();
      const again = await second.reattach(record, request("").signal);
      if (!again) throw new Error("not reattached");
      expect(engineOf(again)).toBe("engine-2");
      expect(await again.facade.readTextFile("notes.txt")).toBe("kept on engine-2");
      await again.release();
    } finally {
      await first.close();
      await second?.close();
      await Promise.allSettled(leased.map((sandbox) => sandbox.release()));
    }
  });

  it("reports the sandboxes of a stopped engine as lost, places new ones elsewhere, and takes the engine back", async () => {
    const poolId = uniquePoolId("engines-lost");
    const binding = engineSandbox(poolId);
    const lostEvents: string[] = [];
    binding.events.on("lost", (event) => lostEvents.push(`${event.engineId}:${event.containerId}`));
    const leased: ProvisionedSandbox[] = [];
    let stopped = false;
    try {
      await binding.start?.();
      leased.push(await binding.provision(request("thread:1")));
      leased.push(await binding.provision(request("thread:2")));
      const onTwo = leased.find((sandbox) => engineOf(sandbox) === "engine-2");
      const onOne = leased.find((sandbox) => engineOf(sandbox) === "engine-1");
      if (!onTwo || !onOne) throw new Error("the two sandboxes are not on both engines");

      await stopTestEngine(2);
      stopped = true;

      const failure = await within(
        onTwo.facade.runCommand({ command: "echo still here" }).catch((error: unknown) => error),
        20_000,
        "a command on the stopped engine",
      );
      expect(PoolError.hasCode(failure, "CONTAINER_LOST")).toBe(true);
      expect((failure as Error).message).toContain("engine engine-2");
      expect((failure as PoolError).details).toMatchObject({
        engineId: "engine-2",
        containerId: onTwo.resourceId,
      });
      // Every later call fails at once the same way.
      await expect(within(onTwo.facade.readTextFile("x"), 2_000, "a read")).rejects.toMatchObject({
        code: "CONTAINER_LOST",
      });
      expect(lostEvents).toEqual([`engine-2:${onTwo.resourceId}`]);

      // The other engine's sandbox goes on, and a new sandbox goes there although it is the fuller one.
      expect((await onOne.facade.runCommand({ command: "echo fine" })).stdout).toBe("fine\n");
      const elsewhere = await binding.provision(request("thread:3"));
      leased.push(elsewhere);
      expect(engineOf(elsewhere)).toBe("engine-1");
      const two = () => binding.metrics()?.engines.find((each) => each.id === "engine-2");
      expect(two()).toMatchObject({ status: "unreachable", lost: 1 });

      ensureTestEngines(2);
      stopped = false;
      await waitFor(() => two()?.status === "reachable", "engine-2 to be taken back", 30_000);
      // The lost container is removed from the engine once it answers; new sandboxes may go there again.
      await waitFor(
        async () => !(await containersOn(engine("engine-2"), poolId)).includes(onTwo.resourceId),
        "the lost container to be removed",
        30_000,
      );
      const back = await binding.provision(request("thread:4"));
      leased.push(back);
      expect(engineOf(back)).toBe("engine-2");
      expect((await back.facade.runCommand({ command: "echo back" })).stdout).toBe("back\n");
      // The lost sandbox stays lost.
      await expect(onTwo.facade.runCommand({ command: "true" })).rejects.toMatchObject({
        code: "CONTAINER_LOST",
      });
    } finally {
      if (stopped) ensureTestEngines(2);
      await Promise.allSettled(leased.map((sandbox) => sandbox.release()));
      await binding.close();
    }
  });
});
