// Several runtime processes on one store (a SQLite file, a Postgres schema) and one (file-backed) engine: each owns
// what it makes, hands a thread's lease to the process serving its next message, and a killed process's runs,
// leases and resources are dealt with by the survivors within the bound (here: owner TTL 1 s + reconcile every
// 0.3 s).
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ThreadStore, toolEndOf } from "@pai/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { engineResources } from "./fixtures/file-counter-binding.ts";
import {
  createRuntimeProcesses,
  eventually,
  type RuntimeProcess,
  type RuntimeProcessOptions,
  type SharedStore,
  sharedStores,
} from "./fixtures/runtime-process.ts";

describe.each(sharedStores)("runtime processes sharing one store ($name) and one engine", ({ create }) => {
  let dir: string;
  let engine: string;
  let shared: SharedStore;
  const processes = createRuntimeProcesses({ store: () => shared, engineDir: () => engine });
  const owner = (ownerId: string, options?: RuntimeProcessOptions) => processes.start(ownerId, options);

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "pai-owners-"));
    engine = join(dir, "engine");
    mkdirSync(engine);
    shared = create(dir);
  });
  afterEach(async () => {
    processes.stopAll();
    try {
      await shared.drop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  async function withStore<RESULT>(body: (store: ThreadStore) => Promise<RESULT>): Promise<RESULT> {
    const store = await shared.open();
    try {
      return await body(store);
    } finally {
      await store.close();
    }
  }

  /** Waits until the run on `threadId` has stored its running `block` call (calls running past 200 ms are). */
  const checkpointed = (threadId: string) =>
    eventually(
      () =>
        withStore(async (store) =>
          (await store.loadMessages(threadId)).some((message) =>
            message.parts.some((part) => part.type === "tool-block"),
          ),
        ),
      "the running call to be stored",
    );

  const leased = () => Object.values(engineResources(engine)).filter((file) => file.leaseKey !== "warm");

  it("serve one thread in turn: its lease is handed over each time and its state kept; closing frees everything", async () => {
    const [a, b] = await Promise.all([owner("owner-a"), owner("owner-b")]);
    expect(await a.run("t1")).toEqual({ status: "completed", value: 1 });
    expect(await b.run("t1")).toEqual({ status: "completed", value: 2 });
    expect(await a.run("t1")).toEqual({ status: "completed", value: 3 });
    expect(await b.run("t2")).toEqual({ status: "completed", value: 1 });
    expect(leased()).toHaveLength(2);

    // b closes first: its own lease (t2) goes, a's (t1) stays untouched.
    await b.close();
    expect(leased()).toEqual([{ owner: "owner-a", leaseKey: "thread:t1", value: 3 }]);
    expect(await withStore((store) => store.listLeases())).toMatchObject([{ key: "t1", ownerId: "owner-a" }]);
    await a.close();
    expect(engineResources(engine)).toEqual({});
    expect(await withStore((store) => store.listLeases())).toEqual([]);
    expect(await withStore((store) => store.listOwners())).toEqual([]);
  });

  it("after kill -9 mid-call and a restart: the run is interrupted, its call closed, the thread goes on", async () => {
    const first = await owner("owner-first");
    expect(await first.block("t1")).toEqual({ value: 1 });
    await checkpointed("t1");
    await first.kill();
    const restarted = await owner("owner-restarted");
    await eventually(
      () => withStore(async (store) => (await store.listRuns("t1")).at(-1)?.status === "interrupted"),
      "the killed run to be interrupted",
    );
    const call = (await withStore((store) => store.loadMessages("t1")))
      .at(-1)
      ?.parts.find((part) => part.type === "tool-block");
    expect(toolEndOf(call)).toEqual({ reason: "interrupted" });
    expect(await restarted.run("t1")).toEqual({ status: "completed", value: 2 });
    await restarted.close();
    expect(engineResources(engine)).toEqual({});
  });

  it("see a process killed -9 on this machine dead at once: the next one, as it starts, ends its run, frees its thread and takes its resources, long before its heartbeat lapses", async () => {
    // Ten minutes of owner TTL: the heartbeat rule cannot be what frees anything here.
    const long = { ownerTtlMs: 600_000 };
    const first = await owner("owner-first", long);
    expect(await first.run("t2")).toEqual({ status: "completed", value: 1 });
    expect(await first.block("t1")).toEqual({ value: 1 });
    await checkpointed("t1");
    const warmOfFirst = Object.entries(engineResources(engine)).find(
      ([, file]) => file.owner === "owner-first" && file.leaseKey === "warm",
    )?.[0];
    expect(warmOfFirst).toBeDefined();
    expect(await withStore((store) => store.getThreadLease("t1"))).toMatchObject({ ownerId: "owner-first" });
    await first.kill();

    // Its start (READY comes once startCapabilities resolved) has dealt with all of it: no waiting.
    const next = await owner("owner-next", long);
    const [killedRun] = (await withStore((store) => store.listRuns("t1"))).slice(-1);
    expect(killedRun).toMatchObject({ ownerId: "owner-first", status: "interrupted" });
    expect(await withStore((store) => store.getThreadLease("t1"))).toBeUndefined();
    expect(warmOfFirst! in engineResources(engine)).toBe(false);
    const leases = await withStore((store) => store.listLeases());
    expect(leases.map((lease) => `${lease.key} ${lease.ownerId}`).sort()).toEqual([
      "t1 owner-next",
      "t2 owner-next",
    ]);
    const call = (await withStore((store) => store.loadMessages("t1")))
      .at(-1)
      ?.parts.find((part) => part.type === "tool-block");
    expect(toolEndOf(call)).toEqual({ reason: "interrupted" });

    // Its threads take new messages now, on its state; the interrupted run ended before the new one started.
    expect(await next.run("t1")).toEqual({ status: "completed", value: 2 });
    expect(await next.run("t2")).toEqual({ status: "completed", value: 2 });
    const [interrupted, resumed] = (await withStore((store) => store.listRuns("t1"))).slice(-2);
    expect(interrupted!.endedAt!).toBeLessThanOrEqual(resumed!.startedAt);
    await next.close();
    expect(engineResources(engine)).toEqual({});
  });

  it("take a thread at once from a process killed -9 on this machine after the next one started", async () => {
    const long = { ownerTtlMs: 600_000 };
    const [first, next] = await Promise.all([owner("owner-first", long), owner("owner-next", long)]);
    expect(await first.block("t1")).toEqual({ value: 1 });
    await checkpointed("t1");
    expect(await next.run("t1")).toEqual({ code: "THREAD_BUSY" });
    await first.kill();
    // No pass of the maintenance has to come first: the refused holder is checked as the run asks.
    expect(await next.run("t1")).toEqual({ status: "completed", value: 2 });
    const runs = await withStore((store) => store.listRuns("t1"));
    expect(runs.map((run) => run.status)).toEqual(["interrupted", "completed"]);
    // What else it left (its warm resource) is reaped by the pass that finding it gone set off.
    await next.close();
    expect(engineResources(engine)).toEqual({});
  });

  it("deal with a process killed mid-call: its run is interrupted, its call closed, its thread kept, the rest freed", async () => {
    const [a, b, c] = await Promise.all([owner("owner-a"), owner("owner-b"), owner("owner-c")]);
    expect(await a.run("t1")).toEqual({ status: "completed", value: 1 });
    expect(await b.run("t3")).toEqual({ status: "completed", value: 1 });
    expect(await a.block("t2")).toEqual({ value: 1 });
    await checkpointed("t2");
    const warmOfA = Object.entries(engineResources(engine)).find(
      ([, file]) => file.owner === "owner-a" && file.leaseKey === "warm",
    )?.[0];
    expect(warmOfA).toBeDefined();
    await a.kill();

    // Within the bound a survivor: interrupts the run, closes its call, takes over a's thread leases, reaps the rest.
    await eventually(
      () => withStore(async (store) => (await store.listRuns("t2")).at(-1)?.status === "interrupted"),
      "the killed run to be interrupted",
    );
    await eventually(() => !(warmOfA! in engineResources(engine)), "a's warm resource to be reaped");
    await eventually(
      () =>
        withStore(async (store) =>
          (await store.listLeases()).every(
            (lease) => lease.ownerId === "owner-b" || lease.ownerId === "owner-c",
          ),
        ),
      "a's leases to be taken over",
    );
    const messages = await withStore((store) => store.loadMessages("t2"));
    const call = messages.at(-1)?.parts.find((part) => part.type === "tool-block");
    expect(call).toMatchObject({ state: "output-error" });
    expect(toolEndOf(call)).toEqual({ reason: "interrupted" });

    // The others keep working, and the killed process's threads go on where they were.
    expect(await c.run("t1")).toEqual({ status: "completed", value: 2 });
    expect(await b.run("t2")).toEqual({ status: "completed", value: 2 });
    expect(await c.run("t3")).toEqual({ status: "completed", value: 2 });
    await Promise.all([b.close(), c.close()]);
    expect(engineResources(engine)).toEqual({});
    expect(await withStore((store) => store.listLeases())).toEqual([]);
  });
});

/** Whether this process may make pid namespaces (root on Linux, with util-linux's `unshare` and `nsenter`). */
function canMakePidNamespaces(): boolean {
  if (process.platform !== "linux" || process.getuid?.() !== 0) return false;
  try {
    execFileSync("unshare", ["--pid", "--fork", "true"]);
    execFileSync("nsenter", ["--version"]);
    return true;
  } catch {
    return false;
  }
}

describe.skipIf(!canMakePidNamespaces())(
  "runtime processes alive at once in other pid namespaces, one SQLite file",
  () => {
    let dir: string;
    let engine: string;
    let shared: SharedStore;
    const processes = createRuntimeProcesses({ store: () => shared, engineDir: () => engine });
    /** A new pid namespace whose first process is the runtime (pid 1 there); with its own /proc when asked. */
    const newNamespace = (ownProc: boolean) => [
      "unshare",
      "--pid",
      "--fork",
      "--kill-child",
      ...(ownProc ? ["--mount-proc"] : []),
    ];

    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), "pai-owners-ns-"));
      engine = join(dir, "engine");
      mkdirSync(engine);
      shared = sharedStores[0]!.create(dir);
    });
    afterEach(() => {
      processes.stopAll();
      rmSync(dir, { recursive: true, force: true });
    });

    async function withStore<RESULT>(body: (store: ThreadStore) => Promise<RESULT>): Promise<RESULT> {
      const store = await shared.open();
      try {
        return await body(store);
      } finally {
        await store.close();
      }
    }

    /** Lets the maintenance of every process make several passes (each process reconciles every 0.3 s). */
    const severalPasses = () => new Promise((resolve) => setTimeout(resolve, 1500));

    /** Each process holds one thread with a run that goes on; the other is refused it, and nothing is taken over. */
    async function neitherDeclaresTheOtherDead(a: RuntimeProcess, b: RuntimeProcess): Promise<void> {
      expect(await a.block("held-by-a")).toEqual({ value: 1 });
      expect(await b.block("held-by-b")).toEqual({ value: 1 });
      await severalPasses();
      expect(await a.run("held-by-b")).toEqual({ code: "THREAD_BUSY" });
      expect(await b.run("held-by-a")).toEqual({ code: "THREAD_BUSY" });
      await withStore(async (store) => {
        expect((await store.listRunsByStatus("running")).map((run) => run.ownerId).sort()).toEqual(
          [a.ownerId, b.ownerId].sort(),
        );
        for (const lease of await store.listLeases())
          expect(lease.ownerId).toBe(lease.key === "held-by-a" ? a.ownerId : b.ownerId);
        expect((await store.listOwners()).map((owner) => owner.ownerId).sort()).toEqual(
          [a.ownerId, b.ownerId].sort(),
        );
      });
    }

    it("never declares a live process dead: one in this namespace, one in another (pid 1 there, its own /proc)", async () => {
      const [here, there] = await Promise.all([
        processes.start("owner-here"),
        processes.start("owner-there", { wrapper: newNamespace(true) }),
      ]);
      // The other records pid 1: in this namespace that is init, started long before it. Only the namespace tells.
      const owners = await withStore((store) => store.listOwners());
      const recorded = (ownerId: string) => owners.find((owner) => owner.ownerId === ownerId)!;
      expect(recorded("owner-there").pid).toBe(1);
      expect(recorded("owner-there").pidNamespace).not.toBe(recorded("owner-here").pidNamespace);
      expect(recorded("owner-there").bootId).toBe(recorded("owner-here").bootId);
      await neitherDeclaresTheOtherDead(here, there);
    });

    it("never declares a live process dead from a namespace whose /proc is not its own", async () => {
      // Both in one new namespace that has no /proc of its own: the /proc they see shows another namespace's pids.
      const first = await processes.start("owner-first", { wrapper: newNamespace(false) });
      const runtimePid = execFileSync("pgrep", ["-P", String(first.child.pid)], { encoding: "utf8" }).trim();
      const second = await processes.start("owner-second", {
        wrapper: ["nsenter", "--target", runtimePid, "--pid", "--"],
      });
      const owners = await withStore((store) => store.listOwners());
      expect(owners.map((owner) => owner.pidNamespace)).toEqual([
        owners[0]!.pidNamespace,
        owners[0]!.pidNamespace,
      ]);
      expect(owners.map((owner) => owner.pid).sort()).toEqual([1, expect.any(Number)]);
      await neitherDeclaresTheOtherDead(first, second);
    });
  },
);
