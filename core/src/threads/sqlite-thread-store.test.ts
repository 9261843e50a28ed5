import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { UIMessage } from "ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import { createSqliteThreadStore } from "./sqlite-thread-store.ts";
import type { PendingActionRecord, RunRecord, ThreadRecord, ThreadStore } from "./thread-store.ts";

const thread: ThreadRecord = {
  id: "t1",
  agentId: "coder",
  ownerKey: "user:1",
  createdAt: 1000,
  updatedAt: 1000,
};
const run: RunRecord = { id: "r1", threadId: "t1", agentId: "coder", status: "completed", startedAt: 1000 };

const conversation: UIMessage[] = [
  { id: "m1", role: "user", parts: [{ type: "text", text: "List the files" }] },
  {
    id: "m2",
    role: "assistant",
    metadata: { runId: "r1", toolIds: { listFiles: "sandbox.listFiles@1" } },
    parts: [
      { type: "step-start" },
      { type: "reasoning", text: "Use the sandbox.", state: "done" },
      {
        type: "tool-listFiles",
        toolCallId: "call-1",
        state: "output-available",
        input: { path: "." },
        output: { files: ["a.ts", "b.ts"], truncated: false },
        callProviderMetadata: { mock: { cached: true } },
      },
      {
        type: "data-toolData",
        id: "call-1:progress",
        data: { channel: "progress", seq: 1, data: { pct: 100 } },
      },
      { type: "data-capability", data: { capability: "sandbox", status: "ready" } },
      { type: "text", text: "Two files: a.ts and b.ts — ✓", state: "done" },
    ],
  },
];

const pending: PendingActionRecord = {
  id: "a1",
  threadId: "t1",
  runId: "r1",
  toolCallId: "call-2",
  toolId: "deploy",
  toolName: "deploy",
  inputHash: "hash-2",
  input: { target: "prod" },
  kind: "suspend",
  name: "approve",
  payload: { question: "Deploy?" },
  suspendHistory: [{ question: "Build first?" }],
  status: "pending",
  createdAt: 2000,
};

/** Takes a current store back to before version 9: pending actions without the trace context of their run. */
const dropTraceParent = "ALTER TABLE pending_actions DROP COLUMN trace_parent;";

/** Takes a current store back to before version 8: runs without what a rewind did. */
const dropRunRewind = `${dropTraceParent} ALTER TABLE runs DROP COLUMN rewind;`;

/** Takes a current store back to before version 7: no checkpoints (for the tests of older versions' migrations). */
const dropCheckpoints = `${dropRunRewind} DROP TABLE checkpoints;`;

/** Takes a current store's owners back to before version 6 (for the tests of older versions' migrations). */
const dropOwnerPlace = [
  "ALTER TABLE owners DROP COLUMN boot_id;",
  "ALTER TABLE owners DROP COLUMN pid_namespace;",
  "ALTER TABLE owners DROP COLUMN process_start_ticks;",
].join(" ");

let directory: string;
let path: string;
const opened: ThreadStore[] = [];

/** Opens a store that the test's cleanup closes. */
function open(options: { busyTimeoutMs?: number } = {}): ThreadStore {
  const store = createSqliteThreadStore({ path, ...options });
  opened.push(store);
  return store;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.fail("expected the promise to reject"),
    (error: unknown) => error,
  );
}

function openError(options: { path: string; busyTimeoutMs?: number }): unknown {
  try {
    opened.push(createSqliteThreadStore(options));
  } catch (error) {
    return error;
  }
  return expect.fail(`expected opening ${options.path} to throw`);
}

beforeEach(() => {
  directory = mkdtempSync(join(tmpdir(), "pai-sqlite-store-"));
  path = join(directory, "nested", "threads.db");
});

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  rmSync(directory, { recursive: true, force: true });
});

describe("createSqliteThreadStore", () => {
  it("shows a second store on the same file everything the first wrote", async () => {
    const first = open();
    await first.commitRun({
      thread: { ...thread, title: "Files", updatedAt: 3000 },
      messages: conversation,
      run,
    });
    const written = await first.appendToolData({
      threadId: "t1",
      runId: "r1",
      toolCallId: "call-1",
      toolId: "sandbox.listFiles@1",
      channel: "progress",
      data: { pct: 100 },
      createdAt: 1500,
    });
    await first.putPendingAction(pending);
    await first.putLease({
      capability: "sandbox",
      lifetime: "thread",
      key: "t1",
      resourceId: "c0ffee",
      meta: { volume: "pai-t1" },
      createdAt: 1000,
      lastUsedAt: 2000,
    });

    const second = open();

    expect(await second.loadMessages("t1")).toStrictEqual(conversation);
    expect(await second.getThread("t1")).toEqual({ ...thread, title: "Files", updatedAt: 3000 });
    expect(await second.listRuns("t1")).toEqual([run]);
    expect(await second.listToolData({ threadId: "t1", toolCallId: "call-1" })).toEqual([written]);
    expect(await second.listPendingActions({ threadId: "t1", status: "pending" })).toEqual([pending]);
    expect(await second.listLeases({ capability: "sandbox" })).toEqual([
      expect.objectContaining({ key: "t1", resourceId: "c0ffee", meta: { volume: "pai-t1" } }),
    ]);
  });

  it("keeps checkpoint records across closing and reopening the file", async () => {
    const first = open();
    const checkpoint = {
      id: "k1",
      threadId: "t1",
      messageId: "m2",
      capability: "sandbox",
      manifestDigest: "f".repeat(64),
      files: 2,
      totalBytes: 6_000_000_000,
      bytesAdded: 10,
      createdAt: 3000,
    };
    await first.putCheckpoint(checkpoint);
    await first.putCheckpoint({ ...checkpoint, id: "k2", createdAt: 4000 });
    await first.deleteCheckpoints("t1", ["k2"]);
    await first.close();

    expect(await open().listCheckpoints("t1")).toEqual([checkpoint]);
  });

  it("creates the directory and a WAL database with the current schema version", async () => {
    await open().close();

    const raw = new DatabaseSync(path);
    try {
      expect(raw.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(raw.prepare("PRAGMA user_version").get()).toEqual({ user_version: 9 });
      const tables = raw.prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name").all();
      expect(tables.map((table) => table.name)).toEqual(
        expect.arrayContaining([
          "checkpoints",
          "leases",
          "messages",
          "owners",
          "pending_actions",
          "run_chunks",
          "run_stop_requests",
          "runs",
          "thread_leases",
          "threads",
          "tool_data",
        ]),
      );
    } finally {
      raw.close();
    }
  });

  it("waits for another process that holds the new file's write lock (as one creating it does) instead of failing", async () => {
    mkdirSync(dirname(path), { recursive: true });
    // A process in the middle of creating the same file: the file in rollback-journal mode, its write lock taken.
    // Switching to WAL then answers "database is locked" at once, without SQLite's busy timeout.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const db = new (require("node:sqlite").DatabaseSync)(process.argv[1]);
         db.exec("BEGIN IMMEDIATE");
         process.stdout.write("HOLDING\\n");
         setTimeout(() => { db.exec("COMMIT"); process.exit(0); }, 300);`,
        path,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = new Promise((resolve) => holder.on("exit", resolve));
    await new Promise((resolve) => holder.stdout!.once("data", resolve));

    await open().close();
    expect(await exited).toBe(0);
    const raw = new DatabaseSync(path);
    try {
      expect(raw.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
    } finally {
      raw.close();
    }
  });

  it("fails with STORE_UNWRITABLE when the new file stays locked past the busy timeout", () => {
    mkdirSync(dirname(path), { recursive: true });
    const locker = new DatabaseSync(path);
    locker.exec("BEGIN IMMEDIATE");
    try {
      const error = openError({ path, busyTimeoutMs: 50 });
      expect(PaiError.hasCode(error, "STORE_UNWRITABLE")).toBe(true);
      expect((error as PaiError).message).toContain("database is locked");
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
    }
  });

  it("migrates a version 1 store: its runs and leases stay, with no owner, and owners can be recorded", async () => {
    await open().close();
    // Back to the version 1 schema, with a run and a lease written by a PAI without owners.
    const raw = new DatabaseSync(path);
    raw.exec(`
      ${dropCheckpoints}
      DROP TABLE run_stop_requests; DROP TABLE thread_leases; DROP TABLE run_chunks; ALTER TABLE pending_actions DROP COLUMN applied_by;
      DROP TABLE owners; DROP INDEX runs_status;
      ALTER TABLE runs DROP COLUMN owner_id;
      ALTER TABLE leases DROP COLUMN owner_id; ALTER TABLE leases DROP COLUMN handover_to;
      ALTER TABLE pending_actions DROP COLUMN inner_call; ALTER TABLE pending_actions DROP COLUMN journal;
      INSERT INTO runs (id, thread_id, agent_id, status, started_at) VALUES ('r1', 't1', 'coder', 'running', 1);
      INSERT INTO leases (capability, lifetime, key, resource_id, meta, created_at, last_used_at)
        VALUES ('sandbox', 'thread', 't1', 'c1', '{}', 1, 1);
      PRAGMA user_version = 1;
    `);
    raw.close();

    const store = open();
    expect(await store.getRun("r1")).toEqual({
      id: "r1",
      threadId: "t1",
      agentId: "coder",
      status: "running",
      startedAt: 1,
    });
    expect(await store.listLeases()).toEqual([
      {
        capability: "sandbox",
        lifetime: "thread",
        key: "t1",
        resourceId: "c1",
        meta: {},
        createdAt: 1,
        lastUsedAt: 1,
      },
    ]);
    expect(await store.claimLease("sandbox", "thread", "t1", { from: undefined, to: "a" })).toBe(true);
    await store.heartbeatOwner({ ownerId: "a", host: "h", pid: 1, startedAt: 1, heartbeatAt: 2 });
    expect(await store.listOwners()).toHaveLength(1);
  });

  it("migrates a version 2 store: its pending actions stay, waiting at the top-level call", async () => {
    await open().close();
    const raw = new DatabaseSync(path);
    raw.exec(`
      ${dropCheckpoints}
      DROP TABLE run_stop_requests; DROP TABLE thread_leases; DROP TABLE run_chunks; ALTER TABLE pending_actions DROP COLUMN applied_by;
      ALTER TABLE pending_actions DROP COLUMN inner_call; ALTER TABLE pending_actions DROP COLUMN journal;
      INSERT INTO pending_actions (id, thread_id, run_id, tool_call_id, tool_id, tool_name, input_hash, input,
        kind, name, payload, suspend_history, status, created_at)
        VALUES ('a1', 't1', 'r1', 'c1', 'deploy', 'deploy', 'h', '{}', 'suspend', 'default', '"Deploy?"', '[]',
          'pending', 1);
      ${dropOwnerPlace}
      PRAGMA user_version = 2;
    `);
    raw.close();

    const store = open();
    const stored = await store.getPendingAction("a1");
    expect(stored).toMatchObject({ id: "a1", status: "pending", payload: "Deploy?" });
    expect(stored).not.toHaveProperty("inner");
    expect(stored).not.toHaveProperty("journal");
    const inner = { path: ["deploy", "check"], key: "0", toolId: "check", input: { a: 1 } };
    await store.putPendingAction({ ...stored!, inner, journal: [] });
    expect(await store.getPendingAction("a1")).toMatchObject({ inner, journal: [] });
  });

  it("migrates a version 3 store: an answered nested action stays, unclaimed, and threads can be leased", async () => {
    await open().close();
    const raw = new DatabaseSync(path);
    raw.exec(`
      ${dropCheckpoints}
      DROP TABLE run_stop_requests; DROP TABLE thread_leases; DROP TABLE run_chunks; ALTER TABLE pending_actions DROP COLUMN applied_by;
      INSERT INTO pending_actions (id, thread_id, run_id, tool_call_id, tool_id, tool_name, input_hash, input,
        kind, name, payload, suspend_history, status, created_at, settled_at, answer, inner_call, journal)
        VALUES ('a1', 't1', 'r1', 'c1', 'deploy', 'deploy', 'h', '{}', 'suspend', 'default', '"Deploy?"', '[]',
          'resumed', 1, 2, '{"type":"resume","resume":true}',
          '{"path":["deploy","check"],"key":"0","toolId":"check","input":{}}', '[]');
      ${dropOwnerPlace}
      PRAGMA user_version = 3;
    `);
    raw.close();

    const store = open();
    const stored = await store.getPendingAction("a1");
    expect(stored).toMatchObject({ id: "a1", status: "resumed", inner: { key: "0" }, journal: [] });
    expect(stored).not.toHaveProperty("appliedBy");
    expect(await store.claimPendingAction("a1", "r2")).toBe(true);
    expect((await store.getPendingAction("a1"))?.appliedBy).toBe("r2");
    const taken = await store.acquireThreadLease({
      threadId: "t1",
      runId: "r2",
      ownerId: "o",
      ttlMs: 10_000,
    });
    expect(taken.acquired).toBe(true);
    await store.appendRunChunks({ runId: "r2", seq: 0, chunks: [{ type: "start" }] });
    expect(await store.listRunChunks("r2")).toEqual([{ runId: "r2", seq: 0, chunk: { type: "start" } }]);
  });

  it("migrates a version 4 store: a run it left running can be asked to stop", async () => {
    await open().close();
    const raw = new DatabaseSync(path);
    raw.exec(`
      ${dropCheckpoints}
      DROP TABLE run_stop_requests;
      INSERT INTO runs (id, thread_id, agent_id, status, started_at, owner_id)
        VALUES ('r1', 't1', 'coder', 'running', 1, 'a');
      ${dropOwnerPlace}
      PRAGMA user_version = 4;
    `);
    raw.close();

    const store = open();
    expect(await store.getRun("r1")).toMatchObject({ id: "r1", status: "running", ownerId: "a" });
    expect(await store.listRunStopRequests(["r1"])).toEqual([]);
    expect(await store.requestRunStop("r1")).toBe(true);
    expect(await store.listRunStopRequests(["r1"])).toEqual(["r1"]);
  });

  it("migrates a version 5 store: its owners stay, without a place, and record one at their next heartbeat", async () => {
    await open().close();
    const raw = new DatabaseSync(path);
    raw.exec(`
      ${dropCheckpoints}
      ${dropOwnerPlace}
      INSERT INTO owners VALUES ('a', 'host-a', 42, 1000, 2000);
      INSERT INTO thread_leases VALUES ('t1', 'r1', 'a', 1e15);
      PRAGMA user_version = 5;
    `);
    raw.close();

    const store = open();
    expect(await store.listOwners()).toEqual([
      { ownerId: "a", host: "host-a", pid: 42, startedAt: 1000, heartbeatAt: 2000 },
    ]);
    const place = { bootId: "b", pidNamespace: "pid:[1]", processStartTicks: 7 };
    await store.heartbeatOwner({
      ownerId: "a",
      host: "host-a",
      pid: 42,
      startedAt: 1000,
      heartbeatAt: 3000,
      ...place,
    });
    expect(await store.listOwners()).toEqual([
      { ownerId: "a", host: "host-a", pid: 42, startedAt: 1000, heartbeatAt: 3000, ...place },
    ]);
    await store.releaseOwnerThreadLeases("a");
    expect(await store.getThreadLease("t1")).toBeUndefined();
  });

  it("migrates a version 6 store: its threads stay, with no checkpoints, and checkpoints can be recorded", async () => {
    const first = open();
    await first.commitRun({ thread, messages: conversation, run });
    await first.close();
    const raw = new DatabaseSync(path);
    raw.exec(`${dropCheckpoints} PRAGMA user_version = 6;`);
    raw.close();

    const store = open();
    expect(await store.loadMessages("t1")).toStrictEqual(conversation);
    expect(await store.listCheckpoints("t1")).toEqual([]);
    const checkpoint = {
      id: "k1",
      threadId: "t1",
      messageId: "m2",
      capability: "sandbox",
      manifestDigest: "a".repeat(64),
      files: 2,
      totalBytes: 10,
      bytesAdded: 10,
      createdAt: 3000,
    };
    await store.putCheckpoint(checkpoint);
    expect(await store.listCheckpoints("t1")).toEqual([checkpoint]);
  });

  it("adopts an empty file as a new store", async () => {
    const emptyFile = join(directory, "empty.db");
    writeFileSync(emptyFile, "");

    const store = createSqliteThreadStore({ path: emptyFile });
    opened.push(store);

    expect(await store.ensureThread(thread)).toEqual(thread);
  });

  it("refuses a file that is not SQLite and leaves its bytes unchanged", () => {
    const garbage = join(directory, "garbage.db");
    const bytes = Buffer.from("this is not a database, just some notes\n".repeat(64));
    writeFileSync(garbage, bytes);

    const error = openError({ path: garbage });

    expect(PaiError.hasCode(error, "STORE_CORRUPT")).toBe(true);
    expect((error as PaiError).message).toContain(`${garbage} is not a PAI thread store`);
    expect((error as PaiError).cause).toBeInstanceOf(Error);
    expect(readFileSync(garbage).equals(bytes)).toBe(true);
    expect(readdirSync(directory)).toEqual(["garbage.db"]);
  });

  it("refuses another application's SQLite database without touching it", () => {
    const foreign = join(directory, "foreign.db");
    const raw = new DatabaseSync(foreign);
    raw.exec(
      "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL); INSERT INTO invoices VALUES (1, 9.5)",
    );
    raw.close();
    const bytes = readFileSync(foreign);

    const error = openError({ path: foreign });

    expect(PaiError.hasCode(error, "STORE_CORRUPT")).toBe(true);
    expect((error as PaiError).message).toContain(`${foreign} is not a PAI thread store`);
    expect(readFileSync(foreign).equals(bytes)).toBe(true);
  });

  it("migrates a version 7 store: its runs stay, without a rewind, and a rewind's run can be recorded", async () => {
    const first = open();
    await first.commitRun({ thread, messages: conversation, run });
    await first.close();
    const raw = new DatabaseSync(path);
    raw.exec(`${dropRunRewind} PRAGMA user_version = 7;`);
    raw.close();

    const store = open();
    expect(await store.getRun(run.id)).toEqual(run);
    const rewind = { kind: "rewind" as const, toMessageId: "m1", droppedCount: 1, stoppedProcesses: [] };
    await store.createRun({ ...run, id: "r-rewind", status: "completed", rewind });
    expect((await store.getRun("r-rewind"))?.rewind).toEqual(rewind);
  });

  it("migrates a version 8 store: its pending actions stay, without a trace parent, and one can be recorded", async () => {
    const first = open();
    await first.commitRun({ thread, messages: conversation, run });
    await first.putPendingAction(pending);
    await first.close();
    const raw = new DatabaseSync(path);
    raw.exec(`${dropTraceParent} PRAGMA user_version = 8;`);
    raw.close();

    const store = open();
    expect(await store.getPendingAction(pending.id)).toEqual(pending);
    const traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    await store.putPendingAction({ ...pending, id: "a-traced", traceParent });
    expect((await store.getPendingAction("a-traced"))?.traceParent).toBe(traceParent);
    await store.close();
  });

  it("refuses a store written by a newer schema version without touching it", async () => {
    await open().close();
    const raw = new DatabaseSync(path);
    raw.exec("PRAGMA user_version = 99");
    raw.close();
    const bytes = readFileSync(path);

    const error = openError({ path });

    expect(PaiError.hasCode(error, "STORE_CORRUPT")).toBe(true);
    expect((error as PaiError).message).toMatch(/schema version 99, written by a newer PAI/);
    expect((error as PaiError).details).toMatchObject({ schemaVersion: 99, supportedSchemaVersion: 9 });
    expect(readFileSync(path).equals(bytes)).toBe(true);
  });

  it("reports STORE_UNWRITABLE when the parent of the path is a regular file", () => {
    const file = join(directory, "plain-file");
    writeFileSync(file, "x");

    const error = openError({ path: join(file, "threads.db") });

    expect(PaiError.hasCode(error, "STORE_UNWRITABLE")).toBe(true);
    expect((error as PaiError).cause).toBeDefined();
  });

  it("reports STORE_UNWRITABLE for a path where no file can be created", () => {
    expect(
      PaiError.hasCode(openError({ path: "/proc/pai-thread-store/threads.db" }), "STORE_UNWRITABLE"),
    ).toBe(true);
    expect(PaiError.hasCode(openError({ path: "/proc/pai-threads.db" }), "STORE_UNWRITABLE")).toBe(true);
  });

  it("keeps earlier messages when a commit fails midway", async () => {
    const store = open();
    await store.commitRun({ thread, messages: conversation, run });
    // Make the second message insert of the next commit fail, after the old messages were deleted.
    const raw = new DatabaseSync(path);
    raw.exec(`CREATE TRIGGER fail_second_message BEFORE INSERT ON messages WHEN NEW.position = 1
      BEGIN SELECT RAISE(ABORT, 'disk went away'); END`);
    raw.close();

    const replacement: UIMessage[] = [
      { id: "m3", role: "user", parts: [{ type: "text", text: "again" }] },
      { id: "m4", role: "assistant", parts: [{ type: "text", text: "sure" }] },
    ];
    const error = await rejection(
      store.commitRun({
        thread: { ...thread, updatedAt: 9000 },
        messages: replacement,
        run: { ...run, id: "r2" },
      }),
    );

    expect(PaiError.isInstance(error)).toBe(true);
    expect((error as PaiError).message).toContain("disk went away");
    const fresh = open();
    expect(await fresh.loadMessages("t1")).toStrictEqual(conversation);
    expect(await fresh.getThread("t1")).toEqual(thread);
    expect(await fresh.getRun("r2")).toBeUndefined();
  });

  it("fails a commit with STORE_UNWRITABLE while another connection holds the write lock", async () => {
    const store = open({ busyTimeoutMs: 20 });
    await store.commitRun({ thread, messages: conversation, run });
    const locker = new DatabaseSync(path);
    locker.exec("BEGIN IMMEDIATE");
    try {
      const error = await rejection(
        store.commitRun({ thread, messages: conversation.slice(0, 1), run: { ...run, id: "r2" } }),
      );
      expect(PaiError.hasCode(error, "STORE_UNWRITABLE")).toBe(true);
      expect((error as PaiError).message).toContain("database is locked");
    } finally {
      locker.exec("ROLLBACK");
      locker.close();
    }

    expect(await open().loadMessages("t1")).toStrictEqual(conversation);
    await store.commitRun({ thread, messages: conversation.slice(0, 1), run: { ...run, id: "r2" } });
    expect(await open().loadMessages("t1")).toEqual(conversation.slice(0, 1));
  });

  it("lets only one of two stores on the same file settle a pending action", async () => {
    const first = open();
    const second = open();
    await first.putPendingAction(pending);

    const results = await Promise.all([
      first.settlePendingAction("a1", "pending", {
        status: "succeeded",
        answer: { approved: true },
        settledAt: 3000,
      }),
      second.settlePendingAction("a1", "pending", {
        status: "denied",
        answer: { approved: false },
        settledAt: 3001,
      }),
    ]);

    expect(results.map((result) => result.changed)).toEqual([true, false]);
    const settled = { ...pending, status: "succeeded", answer: { approved: true }, settledAt: 3000 };
    expect(results.map((result) => result.action)).toEqual([settled, settled]);
    expect(await second.getPendingAction("a1")).toEqual(settled);
  });

  it("releases the file on close so it can be reopened, and rejects calls afterwards", async () => {
    const store = open();
    await store.ensureThread(thread);
    await (store as ThreadStore & AsyncDisposable)[Symbol.asyncDispose]();
    await store.close();

    expect(PaiError.hasCode(await rejection(store.getThread("t1")), "STORE_CLOSED")).toBe(true);
    expect(await open().getThread("t1")).toEqual(thread);
  });
});
