// Several runtime processes with identical `dockerSandbox` bindings (same image and spec, so the same default pool
// id: two demos in one checkout, two replicas of an app) on the real engine and one SQLite file. Each process owns
// what it makes: conversations run, wait and close in every order without one process touching another's
// containers; a thread moves between live processes by handover with its files; a process killed with -9 has its
// containers freed by the others within the bound and its thread taken over with its files.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createSqliteThreadStore, type ThreadStore, toolEndOf } from "@pai/core";
import { poolLabels } from "@pai/pool";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { dockerOptedOut, sandboxImage, testDriver, waitFor } from "./sandbox/docker-helpers.ts";

const fixture = join(import.meta.dirname, "sandbox", "fixtures", "owner-child.ts");
/** The bound issue 10 sets on how long a killed process's containers may outlive it. */
const FREED_WITHIN_MS = 60_000;
/**
 * The owner TTL the processes run with (tests/sandbox/fixtures/owner-child.ts). Short, so a stale heartbeat frees a
 * process within the test, but long enough that a live process stalled by a loaded machine (CI on 2 cores) is not
 * taken for dead by the others, who would free its containers.
 */
const OWNER_TTL_MS = 10_000;

let dir: string;
let db: string;
let runTag: string;
const children: ChildProcess[] = [];
/** The default pool id the processes of the current test share (they report it). */
let poolId: string | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "pai-owners-docker-"));
  db = join(dir, "threads.db");
  runTag = randomBytes(4).toString("hex");
  poolId = undefined;
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  if (poolId) {
    for (const row of await testDriver.list({ labels: { [poolLabels.pool]: poolId } }))
      await testDriver.remove(row.id).catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
});

interface Ran {
  status: string;
  output: { exitCode: number; stdout: string } | string | undefined;
  container: string | undefined;
}

/** A runtime process (tests/sandbox/fixtures/owner-child.ts) driven over stdin/stdout. */
async function startProcess(name: string, options: { ownerTtlMs?: number } = {}) {
  const child = spawn(
    process.execPath,
    [fixture, db, sandboxImage, runTag, String(options.ownerTtlMs ?? OWNER_TTL_MS)],
    { stdio: ["pipe", "pipe", "pipe"] },
  );
  children.push(child);
  const lines: string[] = [];
  let buffered = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (text: string) => {
    buffered += text;
    const complete = buffered.split("\n");
    buffered = complete.pop()!;
    lines.push(...complete.filter(Boolean));
  });
  child.stderr!.setEncoding("utf8").on("data", (text: string) => {
    stderr += text;
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("exit", (_code, signal) => resolve(signal)),
  );
  /** The next line tagged `tag` (lines with other tags stay for their readers). */
  async function next(tag: string): Promise<any> {
    const deadline = Date.now() + 180_000;
    for (;;) {
      const index = lines.findIndex((line) => line.startsWith(`${tag} `));
      if (index >= 0) return JSON.parse(lines.splice(index, 1)[0]!.slice(tag.length + 1));
      if (child.exitCode !== null || Date.now() > deadline)
        throw new Error(`${name} gave no ${tag}:\n${lines.join("\n")}\n${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
  const send = (command: object) => child.stdin!.write(`${JSON.stringify(command)}\n`);
  const ready = (await next("READY")) as { ownerId: string; poolId: string };
  poolId ??= ready.poolId;
  return {
    name,
    ownerId: ready.ownerId,
    poolId: ready.poolId,
    /** Runs a conversation turn on `threadId` whose model calls `tool` with `command`. */
    async run(threadId: string, tool: "sh" | "approvedSh", command: string): Promise<Ran> {
      send({ op: "run", threadId, tool, command });
      return next("RAN");
    },
    /** Starts a turn whose command never ends; resolves once it runs (with the thread's container). */
    async block(threadId: string, command: string): Promise<{ container: string }> {
      send({ op: "run", threadId, tool: "block", command });
      return next("BLOCKING");
    },
    /** Answers the thread's pending approval with yes; resolves when the approved command's run ended. */
    async approve(threadId: string): Promise<Ran> {
      send({ op: "approve", threadId });
      return next("RAN");
    },
    async leases(): Promise<Array<{ lifetime: string; key: string; resourceId: string }>> {
      send({ op: "leases" });
      return next("LEASES");
    },
    async metrics(): Promise<{ borrowed: number; available: number; size: number; max: number }> {
      send({ op: "metrics" });
      return next("METRICS");
    },
    async close(): Promise<void> {
      send({ op: "close" });
      await next("CLOSED");
      await exited;
    },
    async kill(): Promise<void> {
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
    },
  };
}
type RuntimeProcess = Awaited<ReturnType<typeof startProcess>>;

/** What the engine holds of the test's pool: container id → its owner label and state. */
async function engine(): Promise<Map<string, { owner: string | undefined; state: string }>> {
  const rows = await testDriver.list({ labels: { [poolLabels.pool]: poolId! } });
  return new Map(rows.map((row) => [row.id, { owner: row.labels[poolLabels.owner], state: row.state }]));
}

async function withStore<RESULT>(body: (store: ThreadStore) => Promise<RESULT>): Promise<RESULT> {
  const store = createSqliteThreadStore({ path: db });
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

const leaseRecords = () => withStore((store) => store.listLeases());

/** The command's stdout, for a turn that completed. */
function stdoutOf(ran: Ran): string {
  expect(ran).toMatchObject({ status: "completed", output: { exitCode: 0 } });
  return (ran.output as { stdout: string }).stdout;
}

/** A container's host name inside it (the first 12 characters of its id). */
const short = (id: string | undefined) => id?.slice(0, 12);

describe.skipIf(dockerOptedOut)(
  "runtime processes with identical sandbox bindings on one engine and one SQLite file",
  () => {
    it("run, wait and close conversations in every order, hand threads over with their files and lose nothing", async () => {
      const [a, b] = await Promise.all([startProcess("A"), startProcess("B")]);
      expect(b.poolId).toBe(a.poolId);
      expect(b.ownerId).not.toBe(a.ownerId);

      // A writes a file, then waits at an approval...
      const first = await a.run("tA", "sh", "echo from-a > a.txt; hostname");
      const containerA = first.container!;
      expect(stdoutOf(first)).toBe(`${short(containerA)}\n`);
      expect((await a.run("tA", "approvedSh", "cat a.txt; hostname")).status).toBe("suspended");

      // ...while B runs a whole conversation and exits: only B's containers go.
      expect(stdoutOf(await b.run("tB", "sh", "echo from-b > b.txt; cat b.txt"))).toBe("from-b\n");
      const before = await engine();
      expect([...before.values()].some((row) => row.owner === b.ownerId)).toBe(true);
      await b.close();
      const afterB = await engine();
      expect([...afterB.values()].filter((row) => row.owner === b.ownerId)).toEqual([]);
      expect(afterB.get(containerA)).toMatchObject({ owner: a.ownerId, state: "running" });

      // A's approved command still finds its sandbox and its file.
      const approved = await a.approve("tA");
      expect(stdoutOf(approved)).toBe(`from-a\n${short(containerA)}\n`);

      // B starts again and serves A's thread: A hands the sandbox over (A is alive, its run is over).
      const b2 = await startProcess("B2");
      const handedOver = await b2.run("tA", "sh", "cat a.txt; hostname");
      expect(stdoutOf(handedOver)).toBe(`from-a\n${short(containerA)}\n`);
      expect(await a.leases()).toEqual([]);
      expect(await b2.leases()).toMatchObject([{ key: "tA", resourceId: containerA }]);
      // A no longer counts the handed-over container against its pool's max.
      expect((await a.metrics()).borrowed).toBe(0);

      // And back: A serves the thread again, files intact, the same container.
      const back = await a.run("tA", "sh", "echo again >> a.txt; cat a.txt; hostname");
      expect(stdoutOf(back)).toBe(`from-a\nagain\n${short(containerA)}\n`);
      expect((await b2.metrics()).borrowed).toBe(0);

      // Both send to a brand-new thread at the same moment: it runs in one process at a time, so the other is
      // refused (THREAD_BUSY) unless the first run was already over (then the thread is handed over).
      const both = await Promise.all([
        a.run("tN", "sh", "hostname > who.txt; hostname"),
        b2.run("tN", "sh", "hostname > who.txt; hostname"),
      ]);
      const refused = both.filter((ran) => ran.status === "rejected");
      expect(refused.length).toBeLessThanOrEqual(1);
      for (const ran of refused) expect(String(ran.output)).toContain("already has a run in progress");
      for (const ran of both) if (ran.status !== "rejected") stdoutOf(ran);
      const [recordN] = (await leaseRecords()).filter((lease) => lease.key === "tN");
      const winner = recordN!.resourceId;
      expect(stdoutOf(await a.run("tN", "sh", "cat who.txt"))).toBe(`${short(winner)}\n`);

      // A closes first: B2's thread keeps its sandbox; then B2 closes and nothing is left.
      expect(stdoutOf(await b2.run("tN", "sh", "cat who.txt"))).toBe(`${short(winner)}\n`);
      await a.close();
      expect((await engine()).get(winner)).toMatchObject({ state: "running" });
      expect(stdoutOf(await b2.run("tN", "sh", "cat who.txt"))).toBe(`${short(winner)}\n`);
      await b2.close();
      expect([...(await engine()).keys()]).toEqual([]);
      expect(await leaseRecords()).toEqual([]);
      expect(await withStore((store) => store.listOwners())).toEqual([]);
    }, 600_000);

    it("free a process killed -9 mid-command within the bound while the others keep working; its thread goes on with its files", async () => {
      const [a, b, c] = await Promise.all([startProcess("A"), startProcess("B"), startProcess("C")]);
      // Identical bindings, one pool: what each process's engine probe finds must not give one of them another.
      expect([b.poolId, c.poolId]).toEqual([a.poolId, a.poolId]);
      const kept = await a.run("tK", "sh", "echo keep > k.txt; hostname");
      const containerK = kept.container!;
      stdoutOf(kept);
      stdoutOf(await b.run("tB", "sh", "echo b > b.txt"));
      stdoutOf(await c.run("tC", "sh", "echo c > c.txt"));
      expect((await a.block("tK", "echo started; exec sleep 600")).container).toBe(containerK);
      // The running call is stored (a call that has run for 200 ms is), so the crash leaves it open in the thread.
      await waitFor(
        () =>
          withStore(async (store) =>
            (await store.loadMessages("tK")).some((message) =>
              message.parts.some((part) => part.type === "tool-block"),
            ),
          ),
        "the running call to be stored",
      );
      const rows = [...(await engine()).entries()];
      const ofA = rows.filter(([, row]) => row.owner === a.ownerId);
      // Its thread's container and its warm one.
      expect(
        ofA.length,
        JSON.stringify({ a: a.ownerId, rows, owners: await withStore((s) => s.listOwners()) }),
      ).toBeGreaterThanOrEqual(2);
      const sleeping = await testDriver.exec(containerK, { cmd: ["pgrep", "-f", "sleep 600"] });
      expect(sleeping.exitCode).toBe(0);

      await a.kill();
      const killedAt = Date.now();
      // The others keep working meanwhile.
      expect(stdoutOf(await b.run("tB", "sh", "cat b.txt"))).toBe("b\n");

      // Within the bound: A's thread lease is taken over by a survivor and every other container of A is removed.
      await waitFor(
        async () => {
          const leases = await leaseRecords();
          const named = new Set(leases.map((lease) => lease.resourceId));
          const left = [...(await engine()).entries()].filter(
            ([id, row]) => row.owner === a.ownerId && !named.has(id),
          );
          return left.length === 0 && leases.every((lease) => lease.ownerId !== a.ownerId);
        },
        "the killed process's containers to be freed",
        FREED_WITHIN_MS,
      );
      expect(Date.now() - killedAt).toBeLessThan(FREED_WITHIN_MS);
      expect([...(await engine()).keys()]).toContain(containerK);
      await waitFor(
        () => withStore(async (store) => (await store.listRuns("tK")).at(-1)?.status === "interrupted"),
        "the killed run to be interrupted",
      );
      const call = (await withStore((store) => store.loadMessages("tK")))
        .at(-1)
        ?.parts.find((part) => part.type === "tool-block");
      expect(toolEndOf(call)).toEqual({ reason: "interrupted" });
      // The interrupted command does not run on in the sandbox.
      await waitFor(
        async () => (await testDriver.exec(containerK, { cmd: ["pgrep", "-f", "sleep 600"] })).exitCode === 1,
        "the interrupted command to end",
      );

      // The process that next serves the thread gets its sandbox with its files (taken or handed over).
      const resumed = await c.run("tK", "sh", "cat k.txt; hostname");
      expect(stdoutOf(resumed)).toBe(`keep\n${short(containerK)}\n`);
      expect(stdoutOf(await b.run("tC", "sh", "cat c.txt"))).toBe("c\n");
      expect(stdoutOf(await c.run("tB", "sh", "cat b.txt"))).toBe("b\n");

      // B closes; C (with threads) and E (a warm container only) are killed, and are known dead by the time the
      // next process starts: it frees their containers and takes their threads over.
      await b.close();
      const e = await startProcess("E");
      expect([...(await engine()).values()].filter((row) => row.owner === e.ownerId)).toHaveLength(1);
      await Promise.all([c.kill(), e.kill()]);
      await waitFor(
        () =>
          withStore(async (store) =>
            (await store.listOwners()).every((owner) => Date.now() - owner.heartbeatAt > OWNER_TTL_MS),
          ),
        "the killed processes' heartbeats to go stale",
        OWNER_TTL_MS + 20_000,
      );
      const d: RuntimeProcess = await startProcess("D");
      await waitFor(
        async () => {
          const named = new Set((await leaseRecords()).map((lease) => lease.resourceId));
          return [...(await engine()).entries()].every(
            ([id, row]) => (row.owner !== c.ownerId && row.owner !== e.ownerId) || named.has(id),
          );
        },
        "the killed processes' containers to be freed by the next start",
        FREED_WITHIN_MS,
      );
      expect(stdoutOf(await d.run("tK", "sh", "cat k.txt"))).toBe("keep\n");
      expect(stdoutOf(await d.run("tB", "sh", "cat b.txt"))).toBe("b\n");
      // Once its binding has reaped them, D forgets the dead owners (at its next reconcile pass).
      await waitFor(
        async () =>
          (await withStore((store) => store.listOwners())).every((owner) => owner.ownerId === d.ownerId),
        "the dead owners to be forgotten",
        FREED_WITHIN_MS,
      );
      await d.close();
      expect([...(await engine()).keys()]).toEqual([]);
      expect(await leaseRecords()).toEqual([]);
      expect(await withStore((store) => store.listOwners())).toEqual([]);
    }, 600_000);

    it("after kill -9 of the only process, the next one takes a new message on its thread at once and finds its files; nothing of the dead one is left after the next one's close", async () => {
      // Ten minutes of owner TTL: only seeing on this machine that the process is gone can free anything here.
      const long = { ownerTtlMs: 600_000 };
      const a = await startProcess("A", long);
      const kept = await a.run("tK", "sh", "echo keep > k.txt; hostname");
      const containerK = kept.container!;
      stdoutOf(kept);
      expect((await a.block("tK", "echo started; exec sleep 600")).container).toBe(containerK);
      await waitFor(
        () =>
          withStore(async (store) =>
            (await store.loadMessages("tK")).some((message) =>
              message.parts.some((part) => part.type === "tool-block"),
            ),
          ),
        "the running call to be stored",
      );
      const ofA = [...(await engine()).entries()].filter(([, row]) => row.owner === a.ownerId);
      expect(ofA.length).toBeGreaterThanOrEqual(2); // its thread's container and its warm one
      await a.kill();

      // B's start (READY comes once startCapabilities resolved) has ended A's run, freed its thread, taken its
      // thread's sandbox over and removed the rest.
      const b = await startProcess("B", long);
      const [interrupted] = (await withStore((store) => store.listRuns("tK"))).slice(-1);
      expect(interrupted).toMatchObject({ ownerId: a.ownerId, status: "interrupted" });
      const call = (await withStore((store) => store.loadMessages("tK")))
        .at(-1)
        ?.parts.find((part) => part.type === "tool-block");
      expect(toolEndOf(call)).toEqual({ reason: "interrupted" });
      expect([...(await engine()).entries()].filter(([, row]) => row.owner === a.ownerId)).toEqual([
        [containerK, { owner: a.ownerId, state: "running" }],
      ]);
      expect(await leaseRecords()).toMatchObject([{ key: "tK", ownerId: b.ownerId, resourceId: containerK }]);

      const resumed = await b.run("tK", "sh", "cat k.txt; hostname");
      expect(stdoutOf(resumed)).toBe(`keep\n${short(containerK)}\n`);
      const [ended, next] = (await withStore((store) => store.listRuns("tK"))).slice(-2);
      expect(ended!.id).toBe(interrupted!.id);
      expect(ended!.endedAt!).toBeLessThanOrEqual(next!.startedAt);

      await b.close();
      expect([...(await engine()).keys()]).toEqual([]);
      expect(await leaseRecords()).toEqual([]);
    }, 600_000);
  },
);
