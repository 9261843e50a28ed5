import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import type { UIMessage } from "ai";
import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema } from "../../../../tests/fixtures/test-postgres.ts";
import { PaiError } from "../../errors/pai-error.ts";
import type { PendingActionRecord, RunRecord, ThreadRecord, ThreadStore } from "../thread-store.ts";
import { POSTGRES_SCHEMA_VERSION } from "./postgres-migrations.ts";
import { createPostgresThreadStore, type PostgresThreadStoreOptions } from "./postgres-thread-store.ts";

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
    metadata: { runId: "r1" },
    parts: [
      { type: "step-start" },
      {
        type: "tool-listFiles",
        toolCallId: "call-1",
        state: "output-available",
        input: { path: "." },
        output: { files: ["a.ts", "b.ts"] },
      },
      { type: "text", text: "Two files — ✓", state: "done" },
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
  suspendHistory: [],
  status: "pending",
  createdAt: 2000,
};

let schema: TestSchema;
const opened: ThreadStore[] = [];
const children: ChildProcess[] = [];

/** Opens a store on the test's schema that the test's cleanup closes. */
async function open(
  options: Partial<{ lockTimeoutMs: number; statementTimeoutMs: number }> = {},
): Promise<ThreadStore> {
  const store = await createPostgresThreadStore({
    connectionString: schema.connectionString,
    schema: schema.name,
    ...options,
  });
  opened.push(store);
  return store;
}

async function rejection(promise: Promise<unknown>): Promise<PaiError> {
  const error = await promise.then(
    () => expect.fail("expected the promise to reject"),
    (caught: unknown) => caught,
  );
  expect(PaiError.isInstance(error), `expected a PaiError, got ${String(error)}`).toBe(true);
  return error as PaiError;
}

/** A connection of the test's own, outside every store, holding a transaction open until `end()`. */
async function transaction(): Promise<{ client: pg.Client; end(): Promise<void> }> {
  const client = new pg.Client({ connectionString: schema.connectionString });
  await client.connect();
  await client.query("BEGIN");
  return {
    client,
    end: async () => {
      try {
        await client.query("COMMIT");
      } finally {
        await client.end();
      }
    },
  };
}

/** Waits until `count` backends wait for a lock while running a statement that names `text` (the test's schema). */
async function lockWaiters(count: number, text = schema.name): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const [row] = await schema.sql<{ waiting: number }>(
      `SELECT count(*)::integer AS waiting FROM pg_stat_activity
        WHERE wait_event_type = 'Lock' AND position($1 in query) > 0`,
      [text],
    );
    if (row!.waiting >= count) return;
    if (Date.now() > deadline)
      throw new Error(`only ${row!.waiting} of ${count} connections wait for the lock`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeEach(() => {
  schema = createTestSchema();
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  try {
    await Promise.all(opened.splice(0).map((store) => store.close()));
  } finally {
    await schema.drop();
  }
});

describe("createPostgresThreadStore", () => {
  it("shows a store on other connections everything the first wrote", async () => {
    const first = await open();
    await first.commitRun({
      thread: { ...thread, title: "Files", updatedAt: 3000 },
      messages: conversation,
      run,
    });
    await first.putPendingAction(pending);

    const second = await open();

    expect(await second.loadMessages("t1")).toStrictEqual(conversation);
    expect(await second.getThread("t1")).toEqual({ ...thread, title: "Files", updatedAt: 3000 });
    expect(await second.listRuns("t1")).toEqual([run]);
    expect(await second.listPendingActions({ status: "pending" })).toEqual([pending]);
  });

  it("lets exactly one of two connections settle an action both wait for", async () => {
    const first = await open();
    const second = await open();
    await first.putPendingAction(pending);
    // Hold the row so both settles are in the server, waiting, before either can run.
    const locker = await transaction();
    await locker.client.query(`SELECT 1 FROM "${schema.name}".pending_actions WHERE id = 'a1' FOR UPDATE`);

    const settling = Promise.all([
      first.settlePendingAction("a1", "pending", {
        status: "succeeded",
        answer: { by: "first" },
        settledAt: 3000,
      }),
      second.settlePendingAction("a1", "pending", {
        status: "denied",
        answer: { by: "second" },
        settledAt: 3001,
      }),
    ]);
    await lockWaiters(2);
    await locker.end();
    const results = await settling;

    expect(results.filter((result) => result.changed)).toHaveLength(1);
    const winner = results.find((result) => result.changed)!.action!;
    expect(results.map((result) => result.action)).toEqual([winner, winner]);
    expect(await first.getPendingAction("a1")).toEqual(winner);
    expect(winner.answer).toEqual({ by: winner.status === "succeeded" ? "first" : "second" });
  });

  it("lets exactly one of three processes settle an action they answer at once", async () => {
    const store = await open();
    await store.putPendingAction(pending);
    const locker = await transaction();
    await locker.client.query(`SELECT 1 FROM "${schema.name}".pending_actions WHERE id = 'a1' FOR UPDATE`);

    const fixture = join(
      import.meta.dirname,
      "..",
      "..",
      "..",
      "..",
      "tests",
      "fixtures",
      "settle-action.ts",
    );
    const results = ["succeeded", "denied", "succeeded"].map((status) => {
      const child = spawn(process.execPath, [fixture, schema.connectionString, schema.name, "a1", status], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      children.push(child);
      return new Promise<{ pid: number; changed: boolean; action: PendingActionRecord }>(
        (resolve, reject) => {
          let out = "";
          let err = "";
          child.stdout!.on("data", (data: Buffer) => {
            out += data.toString();
            const line = out.split("\n").find((candidate) => candidate.startsWith("RESULT "));
            if (line) resolve(JSON.parse(line.slice("RESULT ".length)));
          });
          child.stderr!.on("data", (data: Buffer) => {
            err += data.toString();
          });
          child.on("exit", (code) => reject(new Error(`settle-action exited ${code}: ${out}\n${err}`)));
        },
      );
    });
    await lockWaiters(3);
    await locker.end();
    const settled = await Promise.all(results);

    const winners = settled.filter((result) => result.changed);
    expect(winners).toHaveLength(1);
    const stored = (await store.getPendingAction("a1"))!;
    expect(stored.answer).toEqual({ by: winners[0]!.pid });
    expect(settled.map((result) => result.action)).toEqual([stored, stored, stored]);
  });

  it("wakes a run's watchers in one store when another store's connections append to it or release its thread", async () => {
    const follower = await open();
    const runner = await open();
    let woken = 0;
    const stop = follower.watchRun!("r1", () => {
      woken += 1;
    });
    await runner.acquireThreadLease({ threadId: "t1", runId: "r1", ownerId: "a", ttlMs: 60_000 });
    // The follower's listening connection comes up in the background: append until it hears one.
    const deadline = Date.now() + 10_000;
    for (let seq = 0; woken === 0 && Date.now() < deadline; seq++) {
      await runner.appendRunChunks({ runId: "r1", seq, chunks: [{ type: "start" }] });
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(woken).toBeGreaterThan(0);
    const before = woken;
    await runner.releaseThreadLease("t1", "r1");
    while (woken === before && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(woken).toBeGreaterThan(before);
    stop();
    // Closing a store with a watch still on ends its listening connection too.
    follower.watchRun!("r2", () => {});
    await follower.close();
  });

  it("keeps the old messages, thread and run when a commit fails midway", async () => {
    const store = await open();
    await store.commitRun({ thread, messages: conversation, run });
    // The second message's write of the next commit fails, after the first was rewritten.
    await schema.sql(`CREATE FUNCTION "${schema.name}".fail() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'disk went away'; END $$`);
    await schema.sql(`CREATE TRIGGER fail_second_message BEFORE INSERT ON "${schema.name}".messages
      FOR EACH ROW WHEN (NEW.position = 1) EXECUTE FUNCTION "${schema.name}".fail()`);
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

    expect(error.code).toBe("STORE_UNWRITABLE");
    expect(error.message).toContain("disk went away");
    const fresh = await open();
    expect(await fresh.loadMessages("t1")).toStrictEqual(conversation);
    expect(await fresh.getThread("t1")).toEqual(thread);
    expect(await fresh.getRun("r2")).toBeUndefined();
  });

  it("keeps a thread and all recorded on it when its deletion fails midway", async () => {
    const store = await open();
    await store.commitRun({ thread, messages: conversation, run });
    await store.putPendingAction(pending);
    await store.putLease({
      capability: "sandbox",
      lifetime: "thread",
      key: "t1",
      resourceId: "c1",
      meta: {},
      createdAt: 1000,
      lastUsedAt: 1000,
    });
    await schema.sql(`CREATE FUNCTION "${schema.name}".fail() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'disk went away'; END $$`);
    await schema.sql(`CREATE TRIGGER fail_thread_delete BEFORE DELETE ON "${schema.name}".threads
      FOR EACH ROW EXECUTE FUNCTION "${schema.name}".fail()`);

    expect((await rejection(store.deleteThread("t1"))).code).toBe("STORE_UNWRITABLE");

    expect(await store.getThread("t1")).toEqual(thread);
    expect(await store.loadMessages("t1")).toStrictEqual(conversation);
    expect(await store.getRun("r1")).toEqual(run);
    expect(await store.getPendingAction("a1")).toEqual(pending);
    expect(await store.listLeases({ key: "t1" })).toHaveLength(1);
  });

  it("fails a write with STORE_UNWRITABLE while another connection holds its row past lockTimeoutMs", async () => {
    const store = await open({ lockTimeoutMs: 100 });
    await store.putPendingAction(pending);
    const locker = await transaction();
    try {
      await locker.client.query(`SELECT 1 FROM "${schema.name}".pending_actions WHERE id = 'a1' FOR UPDATE`);
      const error = await rejection(store.settlePendingAction("a1", "pending", { status: "cancelled" }));
      expect(error.code).toBe("STORE_UNWRITABLE");
      expect(error.message).toContain("lock timeout");
      expect(error.details).toMatchObject({ sqlState: "55P03" });
    } finally {
      await locker.end();
    }

    expect((await store.settlePendingAction("a1", "pending", { status: "cancelled" })).changed).toBe(true);
  });

  it("cancels a statement that runs past statementTimeoutMs with STORE_UNWRITABLE and writes nothing", async () => {
    const store = await open({ statementTimeoutMs: 200 });
    await schema.sql(`CREATE FUNCTION "${schema.name}".stall() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN PERFORM pg_sleep(5); RETURN NEW; END $$`);
    await schema.sql(`CREATE TRIGGER stall_thread BEFORE INSERT ON "${schema.name}".threads
      FOR EACH ROW EXECUTE FUNCTION "${schema.name}".stall()`);

    const error = await rejection(store.ensureThread(thread));

    expect(error.code).toBe("STORE_UNWRITABLE");
    expect(error.message).toContain("statement timeout");
    await schema.sql(`DROP TRIGGER stall_thread ON "${schema.name}".threads`);
    expect(await store.getThread("t1")).toBeUndefined();
  });

  it("refuses a NUL character in a text field with INVALID_ARGUMENT and writes nothing", async () => {
    const store = await open();

    const error = await rejection(store.ensureThread({ ...thread, title: "a\u0000b" }));

    expect(error.code).toBe("INVALID_ARGUMENT");
    expect(error.message).toContain("NUL");
    expect(await store.getThread("t1")).toBeUndefined();
  });

  it("finishes the calls in flight before it closes", async () => {
    const store = await open();

    const committing = store.commitRun({ thread, messages: conversation, run });
    await store.close();

    await expect(committing).resolves.toBeUndefined();
    expect((await rejection(store.getThread("t1"))).code).toBe("STORE_CLOSED");
    expect(await (await open()).loadMessages("t1")).toStrictEqual(conversation);
  });

  it("borrows a pool the app passes and leaves it open on close", async () => {
    const pool = new pg.Pool({ connectionString: schema.connectionString, max: 2 });
    try {
      const store = await createPostgresThreadStore({ pool, schema: schema.name });
      await store.commitRun({ thread, messages: conversation, run });
      await store.close();

      const { rows } = await pool.query(
        `SELECT count(*)::integer AS messages FROM "${schema.name}".messages`,
      );
      expect(rows).toEqual([{ messages: 2 }]);
      expect((await rejection(store.loadMessages("t1"))).code).toBe("STORE_CLOSED");
    } finally {
      await pool.end();
    }
  });

  it("reports STORE_CORRUPT when its tables were dropped under it", async () => {
    const store = await open();
    await schema.sql(`DROP TABLE "${schema.name}".messages`);

    const error = await rejection(store.loadMessages("t1"));

    expect(error.code).toBe("STORE_CORRUPT");
    expect(error.message).toContain(`schema "${schema.name}"`);
  });

  it("stops opening when its signal aborts while another process holds the migration lock", async () => {
    const holder = await transaction();
    try {
      await holder.client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [0x50414931, schema.name]);
      const controller = new AbortController();
      const opening = createPostgresThreadStore({
        connectionString: schema.connectionString,
        schema: schema.name,
        signal: controller.signal,
      });
      await lockWaiters(1, "pg_advisory_xact_lock");
      const reason = new Error("the app is shutting down");

      controller.abort(reason);

      await expect(opening).rejects.toBe(reason);
    } finally {
      await holder.end();
    }
    // The aborted open rolls back once it gets the lock; the next store migrates the schema itself, once.
    const store = await open();
    expect(await store.getThread("t1")).toBeUndefined();
    const applied = await schema.sql(`SELECT version FROM "${schema.name}".schema_migrations`);
    expect(applied).toHaveLength(POSTGRES_SCHEMA_VERSION);
  });

  it("reports an unreachable server as STORE_UNWRITABLE naming where it looked", async () => {
    const refused = await rejection(
      createPostgresThreadStore({
        connectionString: "postgresql://pai@127.0.0.1:1/pai",
        connectionTimeoutMs: 2000,
      }),
    );
    expect(refused.code).toBe("STORE_UNWRITABLE");
    expect(refused.message).toMatch(/Cannot reach .*pai@127\.0\.0\.1:1\/pai.*ECONNREFUSED/);
    expect(refused.details).toMatchObject({ unreachable: true, code: "ECONNREFUSED" });

    const noSocket = await rejection(
      createPostgresThreadStore({
        connectionString: "postgresql://pai@localhost/pai?host=/nonexistent/pai-socket",
      }),
    );
    expect(noSocket.code).toBe("STORE_UNWRITABLE");
    expect(noSocket.message).toContain("/nonexistent/pai-socket");
  });

  it("reports a database that does not exist as STORE_UNWRITABLE", async () => {
    const url = new URL(schema.connectionString);
    url.pathname = "/pai_no_such_database";

    const error = await rejection(createPostgresThreadStore({ connectionString: url.toString() }));

    expect(error.code).toBe("STORE_UNWRITABLE");
    expect(error.message).toContain('database "pai_no_such_database" does not exist');
  });

  it("rejects options without exactly one of connectionString and pool, and a schema name that needs quoting", async () => {
    const pool = new pg.Pool({ connectionString: schema.connectionString });
    try {
      const invalid: unknown[] = [
        {},
        { connectionString: "" },
        { connectionString: schema.connectionString, pool },
        { pool: {} },
        { connectionString: schema.connectionString, schema: 'Pai"; DROP SCHEMA public; --' },
        { connectionString: schema.connectionString, lockTimeoutMs: -1 },
      ];
      for (const [index, options] of invalid.entries()) {
        const error = await rejection(createPostgresThreadStore(options as PostgresThreadStoreOptions));
        expect(error.code, `options #${index}`).toBe("INVALID_ARGUMENT");
      }
    } finally {
      await pool.end();
    }
  });
});
