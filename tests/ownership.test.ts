// Several runtime processes on one store (a SQLite file, a Postgres schema) and one (file-backed) engine: each owns
// what it makes, hands a thread's lease to the process serving its next message, and a killed process's runs,
// leases and resources are dealt with by the survivors within the bound (here: owner TTL 1 s + reconcile every
// 0.3 s).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type ThreadStore, toolEndOf } from "@pai/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { engineResources } from "./fixtures/file-counter-binding.ts";
import {
  createRuntimeProcesses,
  eventually,
  type SharedStore,
  sharedStores,
} from "./fixtures/runtime-process.ts";

describe.each(sharedStores)("runtime processes sharing one store ($name) and one engine", ({ create }) => {
  let dir: string;
  let engine: string;
  let shared: SharedStore;
  const processes = createRuntimeProcesses({ store: () => shared, engineDir: () => engine });
  const owner = (ownerId: string) => processes.start(ownerId);

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
