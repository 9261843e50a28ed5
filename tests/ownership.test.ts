// Several runtime processes on one SQLite file and one (file-backed) engine: each owns what it makes, hands a
// thread's lease to the process serving its next message, and a killed process's runs, leases and resources are
// dealt with by the survivors within the bound (here: owner TTL 1 s + reconcile every 0.3 s).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteThreadStore, type ThreadStore, toolEndOf } from "@pai/core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { engineResources } from "./fixtures/file-counter-binding.ts";

const fixture = join(import.meta.dirname, "fixtures", "owner-runtime.ts");
let dir: string;
let db: string;
let engine: string;
const children: ChildProcess[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pai-owners-"));
  db = join(dir, "threads.db");
  engine = join(dir, "engine");
  mkdirSync(engine);
});
afterEach(() => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

/** A runtime process driven over stdin/stdout. */
async function owner(ownerId: string) {
  const child = spawn(process.execPath, [fixture, db, engine, ownerId], { stdio: ["pipe", "pipe", "pipe"] });
  children.push(child);
  const lines: string[] = [];
  const waiters: Array<() => void> = [];
  let buffered = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (text: string) => {
    buffered += text;
    const complete = buffered.split("\n");
    buffered = complete.pop()!;
    lines.push(...complete.filter(Boolean));
    for (const wake of waiters.splice(0)) wake();
  });
  child.stderr!.setEncoding("utf8").on("data", (text: string) => {
    stderr += text;
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("exit", (_code, signal) => resolve(signal)),
  );
  /** The next line starting with `prefix` (earlier lines with other prefixes are kept). */
  async function next(prefix: string): Promise<any> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const index = lines.findIndex((line) => line.startsWith(`${prefix} `));
      if (index >= 0) return JSON.parse(lines.splice(index, 1)[0]!.slice(prefix.length + 1));
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`${ownerId} gave no ${prefix}: ${lines.join("\n")}\n${stderr}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 200);
      });
    }
  }
  const send = (command: object) => child.stdin!.write(`${JSON.stringify(command)}\n`);
  await next("READY");
  return {
    async run(threadId: string, message = "count") {
      send({ op: "run", threadId, message });
      return next("RAN");
    },
    async block(threadId: string) {
      send({ op: "run", threadId, message: "block" });
      return next("BLOCKING");
    },
    async close() {
      send({ op: "close" });
      await next("CLOSED");
      await exited;
    },
    async kill() {
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
    },
  };
}

/** Polls `condition` until it holds (within 15 s: far above the 1.3 s bound these processes are set to). */
async function eventually(condition: () => Promise<boolean> | boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function withStore<RESULT>(body: (store: ThreadStore) => Promise<RESULT>): Promise<RESULT> {
  const store = createSqliteThreadStore({ path: db });
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

describe("runtime processes sharing one store and one engine", () => {
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
