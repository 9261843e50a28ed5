// dockerSandbox over several engines: two extra local dockerd instances (scripts/docker-engines-extra), each with
// its own socket, data root and exec root, one reached through its socket and the other over TCP with mutual TLS
// (127.0.0.1 only). One of them is stopped mid-test and started again.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";
import type { LeaseRecord } from "@pai/core";
import { PoolError, poolLabels } from "@pai/pool";
import {
  type DockerSandboxBinding,
  dockerSandbox,
  type ProvisionedSandbox,
  SandboxError,
} from "@pai/sandbox";
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

const run = promisify(execFile);
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
function engineSandbox(
  poolId: string,
  options: { min?: number; tls?: boolean; image?: string; hibernateAfterMs?: number } = {},
): DockerSandboxBinding {
  if (!poolIds.includes(poolId)) poolIds.push(poolId);
  const [one, two] = engines;
  if (!one || !two) throw new Error("two engines are needed");
  return dockerSandbox({
    image: options.image ?? engineSandboxImage(),
    engines: [one.engine, options.tls ? two.tlsEngine() : two.engine],
    poolId,
    pool: {
      min: options.min ?? 1,
      max: 3,
      acquireTimeoutMs: 60_000,
      ...(options.hibernateAfterMs !== undefined ? { hibernateAfterMs: options.hibernateAfterMs } : {}),
    },
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

  it("labels every engine's containers with the runtime's owner and reaps a dead owner's on every engine, never a live one's", async () => {
    const suffix = randomBytes(3).toString("hex");
    const owner = (name: string) => `${name}-${suffix}`;
    const dead = engineSandbox(uniquePoolId("engines-dead"));
    const live = engineSandbox(uniquePoolId("engines-live"));
    const leased: ProvisionedSandbox[] = [];
    const ownersOn = async (each: TestEngine) =>
      (await each.driver.list({ labels: { [poolLabels.managed]: "true" } })).map((row) => ({
        id: row.id,
        owner: row.labels[poolLabels.owner],
      }));
    try {
      await dead.start?.({ ownerId: owner("dead") });
      await live.start?.({ ownerId: owner("live") });
      for (const key of ["a", "b"]) leased.push(await dead.provision(request(`thread:${key}`)));
      expect(new Set(leased.map(engineOf))).toEqual(new Set(["engine-1", "engine-2"]));
      // The dead process "crashed" keeping its leased containers (close keeps what was not released).
      await dead.close();
      const [kept, gone] = leased as [ProvisionedSandbox, ProvisionedSandbox];
      for (const each of engines) {
        const rows = await ownersOn(each);
        expect(rows.filter((row) => row.owner === owner("live"))).toHaveLength(1); // its warm container
        expect(rows.filter((row) => row.owner === owner("dead"))).toHaveLength(1); // one lease each
      }

      await live.reapUnowned?.({
        keepResourceIds: [kept.resourceId],
        deadOwnerIds: new Set([owner("dead")]),
      });
      const after = (await Promise.all(engines.map(ownersOn))).flat();
      expect(after.some((row) => row.id === gone.resourceId)).toBe(false);
      expect(after.some((row) => row.id === kept.resourceId)).toBe(true);
      expect(after.filter((row) => row.owner === owner("live"))).toHaveLength(2);
    } finally {
      await live.close();
      // A closed binding's leases only remove their containers.
      await Promise.allSettled(leased.map((sandbox) => sandbox.release()));
    }
  });

  it("leaves out an engine that lacks the image (an error event names it) and runs every sandbox on the other, on crun", async () => {
    const [one] = engines;
    if (!one) throw new Error("no engine-1");
    const onlyOnOne = `pai/sandbox:engines-only-1-${randomBytes(3).toString("hex")}`;
    await run("docker", ["-H", `unix://${one.socketPath}`, "tag", engineSandboxImage(), onlyOnOne]);
    const binding = engineSandbox(uniquePoolId("engines-image"), { image: onlyOnOne });
    const errors: Array<{ engineId: string; operation: string; error: unknown }> = [];
    binding.events.on("error", (event) => errors.push(event));
    const leased: ProvisionedSandbox[] = [];
    try {
      await binding.start?.();
      for (const key of ["a", "b"]) leased.push(await binding.provision(request(`thread:${key}`)));
      expect(leased.map(engineOf)).toEqual(["engine-1", "engine-1"]);
      const prepare = errors.find((event) => event.operation === "prepare");
      expect(prepare?.engineId).toBe("engine-2");
      // A given image is never built: its absence is told with the fix.
      expect(SandboxError.hasCode(prepare?.error, "IMAGE_UNAVAILABLE")).toBe(true);
      expect(prepare?.error).toMatchObject({
        message: expect.stringMatching(
          new RegExp(`${onlyOnOne} is not on engine engine-2.*npx pai images build`),
        ),
      });
      const runtimes = JSON.parse(
        (await run("docker", ["-H", `unix://${one.socketPath}`, "info", "--format", "{{json .Runtimes}}"]))
          .stdout,
      );
      const metrics = binding.metrics()?.engines ?? [];
      expect(metrics.map((each) => [each.id, each.runtime])).toEqual([
        ["engine-1", "crun" in runtimes ? "crun" : "runc"],
        ["engine-2", undefined],
      ]);
      expect((await leased[0]?.facade.runCommand({ command: "echo ok" }))?.stdout).toBe("ok\n");
    } finally {
      await Promise.allSettled(leased.map((sandbox) => sandbox.release()));
      await binding.close();
      await run("docker", ["-H", `unix://${one.socketPath}`, "rmi", onlyOnOne]).catch(() => undefined);
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

  it("hibernates idle sandboxes on each engine and wakes each on its own engine with its files; a stopped engine's hibernated sandbox is lost", async () => {
    const poolId = uniquePoolId("engines-hibernate");
    const binding = engineSandbox(poolId, { min: 0, hibernateAfterMs: 0 });
    const leased: ProvisionedSandbox[] = [];
    let stopped = false;
    const stateOn = async (sandbox: ProvisionedSandbox) =>
      (await engine(String(engineOf(sandbox))).driver.inspect(sandbox.resourceId)).running;
    try {
      await binding.start?.();
      for (const key of ["1", "2"]) leased.push(await binding.provision(request(`thread:${key}`)));
      expect(new Set(leased.map(engineOf))).toEqual(new Set(["engine-1", "engine-2"]));
      for (const sandbox of leased) {
        await sandbox.facade.writeFiles([{ path: "where.txt", content: String(engineOf(sandbox)) }]);
        sandbox.hibernation?.idle(); // no run uses it: idle past hibernateAfterMs (0), it hibernates
      }
      await waitFor(() => binding.metrics()?.hibernated === 2, "both sandboxes to hibernate", 30_000);
      for (const sandbox of leased) expect(await stateOn(sandbox)).toBe(false);
      expect(
        binding.metrics()?.engines.map((each) => [each.id, each.pool?.size, each.pool?.hibernated]),
      ).toEqual([
        ["engine-1", 0, 1],
        ["engine-2", 0, 1],
      ]);

      for (const sandbox of leased) {
        expect(await sandbox.hibernation?.wake(request("").signal)).toBe("woken");
        expect(await stateOn(sandbox)).toBe(true);
        expect(await sandbox.facade.readTextFile("where.txt")).toBe(engineOf(sandbox));
      }

      const onTwo = leased.find((sandbox) => engineOf(sandbox) === "engine-2");
      if (!onTwo) throw new Error("no sandbox on engine-2");
      onTwo.hibernation?.idle();
      await waitFor(() => binding.metrics()?.hibernated === 1, "the engine-2 sandbox to hibernate", 30_000);
      await stopTestEngine(2);
      stopped = true;
      await waitFor(
        () => binding.metrics()?.engines.find((each) => each.id === "engine-2")?.lost === 1,
        "the hibernated sandbox to be lost",
        30_000,
      );
      const failure = await within(
        (onTwo.hibernation?.wake(request("").signal) ?? Promise.resolve()).catch((error: unknown) => error),
        5_000,
        "a wake on the stopped engine",
      );
      expect(PoolError.hasCode(failure, "CONTAINER_LOST")).toBe(true);
      expect((failure as Error).message).toContain("engine engine-2");
    } finally {
      if (stopped) ensureTestEngines(2);
      await Promise.allSettled(leased.map((sandbox) => sandbox.release()));
      await binding.close();
    }
  });
});
