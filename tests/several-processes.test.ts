// Several runtime processes on one store (a SQLite file, a Postgres schema): a thread runs in one process at a time
// (its thread lease, taken over once its holder is killed), a run is followed over HTTP from a process that is not
// running it and stopped from there, and an answer two processes send at once is accepted once.
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ThreadStore } from "@pai/core";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { engineResources } from "./fixtures/file-counter-binding.ts";
import { readChunks } from "./fixtures/read-chunks.ts";
import {
  createRuntimeProcesses,
  eventually,
  type SharedStore,
  sharedStores,
} from "./fixtures/runtime-process.ts";

let dir: string;
let engine: string;
let shared: SharedStore;
const processes = createRuntimeProcesses({ store: () => shared, engineDir: () => engine });
const owner = (ownerId: string) => processes.start(ownerId);

function setUp(create: (dir: string) => SharedStore) {
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "pai-processes-"));
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
}

async function withStore<RESULT>(body: (store: ThreadStore) => Promise<RESULT>): Promise<RESULT> {
  const store = await shared.open();
  try {
    return await body(store);
  } finally {
    await store.close();
  }
}

describe.each(sharedStores)("runtime processes on $name", ({ create }) => {
  setUp(create);

  it("run a thread in one process at a time: another gets THREAD_BUSY until the holder is killed, then takes it over", async () => {
    const [a, b] = await Promise.all([owner("owner-a"), owner("owner-b")]);
    expect(await a.block("t1")).toEqual({ value: 1 });

    expect(await b.run("t1")).toEqual({ code: "THREAD_BUSY" });
    // Over HTTP, the thread's run is a's, followed from b.
    const snapshot = await (await fetch(`${b.api}/threads/t1`)).json();
    const [running] = await withStore((store) => store.listRunsByStatus("running"));
    expect(snapshot.activeRunId).toBe(running!.id);
    const busy = await fetch(`${b.api}/chat`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        id: "t1",
        messages: [{ id: "m9", role: "user", parts: [{ type: "text", text: "count" }] }],
      }),
    });
    expect(busy.status).toBe(409);
    expect((await busy.json()).error.code).toBe("THREAD_BUSY");

    await a.kill();
    // The killed holder's lease lapses (owner TTL 1 s); b then runs the thread, with its counter taken over.
    await eventually(async () => {
      const result = await b.run("t1");
      if (result.code === "THREAD_BUSY") return false;
      expect(result).toEqual({ status: "completed", value: 2 });
      return true;
    }, "the thread to be free");
    // The killed run is marked by b's dead-run sweep, which may come after b took the thread over.
    await eventually(async () => {
      const statuses = (await withStore((store) => store.listRuns("t1"))).map((run) => run.status);
      return statuses.join() === "interrupted,completed";
    }, "the killed run to be marked interrupted");
    await b.close();
    expect(engineResources(engine)).toEqual({});
  });

  it("stream a run over HTTP from a process that is not running it, live, from its first chunk to its end", async () => {
    const [a, b] = await Promise.all([owner("owner-a"), owner("owner-b")]);
    expect(await a.run("t1")).toEqual({ status: "completed", value: 1 });
    expect((await fetch(`${b.api}/chat/t1/stream`)).status).toBe(204);

    a.send({ op: "run", threadId: "t1", message: "slow" });
    const { runId } = await a.next("STARTED");
    const response = await fetch(`${b.api}/chat/t1/stream`);
    expect(response.status).toBe(200);
    expect(response.headers.get("x-pai-run-id")).toBe(runId);
    const statusAtFirstProgress: string[] = [];
    const chunks = await readChunks(response, async (chunk) => {
      if (chunk.type === "data-progress" && statusAtFirstProgress.length === 0)
        statusAtFirstProgress.push((await withStore((store) => store.getRun(runId)))!.status);
    });
    expect(await a.next("RAN")).toEqual({ status: "completed", value: 8, runId });

    // b's client saw the run while it went on, and all of it: the same chunks a's own stream had, in order.
    expect(statusAtFirstProgress).toEqual(["running"]);
    expect(chunks.at(0)).toMatchObject({ type: "start" });
    const progress = chunks.filter((chunk) => chunk.type === "data-progress");
    expect(progress.map((chunk) => (chunk.data as { value: unknown }).value)).toEqual(
      Array.from({ length: 8 }, (_, index) => ({ step: index + 1 })),
    );
    expect(chunks.map((chunk) => chunk.type)).toEqual(
      expect.arrayContaining(["tool-input-available", "tool-output-available", "text-delta", "finish"]),
    );
    const stored = await withStore((store) => store.listRunChunks(runId));
    expect(stored.map((record) => record.chunk)).toEqual(chunks);
    await Promise.all([a.close(), b.close()]);
  });

  it("end a follower's stream when the process running the run is killed", async () => {
    const [a, b] = await Promise.all([owner("owner-a"), owner("owner-b")]);
    await a.block("t1");
    const response = await fetch(`${b.api}/chat/t1/stream`);
    expect(response.status).toBe(200);
    const reading = readChunks(response);

    await a.kill();

    const chunks = await reading;
    expect(chunks.map((chunk) => chunk.type)).toContain("tool-input-available");
    expect(chunks.map((chunk) => chunk.type)).not.toContain("finish");
    await b.close();
  });

  it("stop a run over HTTP from a process that is not running it: the process running it cancels it", async () => {
    const [a, b] = await Promise.all([owner("owner-a"), owner("owner-b")]);
    await a.block("t1");
    const [running] = await withStore((store) => store.listRunsByStatus("running"));
    const following = readChunks(await fetch(`${b.api}/chat/t1/stream`));

    const stop = await fetch(`${b.api}/chat/t1/stop`, { method: "POST" });

    expect(await stop.json()).toEqual({
      stopped: true,
      runId: running!.id,
      where: "remote",
      status: "running",
    });
    expect(await a.next("RAN")).toMatchObject({ status: "cancelled", runId: running!.id });
    expect((await following).map((chunk) => chunk.type)).toContain("abort");
    expect((await withStore((store) => store.getRun(running!.id)))?.status).toBe("cancelled");
    // The thread is free again, for either process.
    expect(await b.run("t1")).toEqual({ status: "completed", value: 2 });
    await Promise.all([a.close(), b.close()]);
    expect(engineResources(engine)).toEqual({});
  });
});

describe("runtime processes on one Postgres schema answering the same action at once", () => {
  setUp(sharedStores.find((store) => store.name.includes("Postgres"))!.create);

  it("accept the answer once: one process's answer is accepted and resumes the tool once, the other's already-settled", async () => {
    const [a, b, c] = await Promise.all([owner("owner-a"), owner("owner-b"), owner("owner-c")]);
    a.send({ op: "run", threadId: "t1", message: "ask" });
    expect(await a.next("RAN")).toMatchObject({ status: "suspended" });
    const [action] = await a.pending("t1");
    const { schema, postgres } = JSON.parse(shared.spec) as { schema: string; postgres: string };
    // Hold the action's row: the answer that takes the thread waits at the compare-and-set, the other waits for
    // the thread. Both answers are in flight before either can settle it.
    const locker = new pg.Client({ connectionString: postgres });
    await locker.connect();
    try {
      await locker.query("BEGIN");
      await locker.query(`SELECT 1 FROM "${schema}".pending_actions WHERE id = $1 FOR UPDATE`, [
        action!.actionId,
      ]);
      b.send({ op: "answer", action, by: "bob" });
      c.send({ op: "answer", action, by: "carol" });
      await eventually(async () => {
        const { rows } = await locker.query(
          `SELECT count(*)::integer AS waiting FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
          [schema],
        );
        return rows[0].waiting === 1;
      }, "one answer to wait at the compare-and-set");
      await locker.query("COMMIT");
    } finally {
      await locker.end();
    }
    const answers = await Promise.all([b.next("ANSWERED"), c.next("ANSWERED")]);

    expect(answers.map((answer) => answer.status).sort()).toEqual(["accepted", "already-settled"]);
    const accepted = answers.find((answer) => answer.status === "accepted")!;
    // The tool resumed once: the thread's counter counted once.
    expect(accepted.value).toBe(1);
    expect(Object.values(engineResources(engine)).map((file) => file.value)).toContain(1);
    const stored = await withStore((store) => store.getPendingAction(action!.actionId));
    const winner = answers[0]!.status === "accepted" ? "bob" : "carol";
    expect(stored).toMatchObject({ status: "resumed", answer: { type: "resume", resume: { by: winner } } });
    expect((await withStore((store) => store.listRuns("t1"))).map((run) => run.status)).toEqual([
      "suspended",
      "completed",
    ]);
    await Promise.all([a.close(), b.close(), c.close()]);
    expect(engineResources(engine)).toEqual({});
  });
});
