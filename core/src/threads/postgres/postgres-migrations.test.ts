import pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createTestSchema, type TestSchema } from "../../../../tests/fixtures/test-postgres.ts";
import { PaiError } from "../../errors/pai-error.ts";
import type { ThreadRecord } from "../thread-store.ts";
import { migratePostgresSchema, POSTGRES_SCHEMA_VERSION, postgresMigrations } from "./postgres-migrations.ts";
import { createPostgresThreadStore } from "./postgres-thread-store.ts";

const thread: ThreadRecord = {
  id: "t1",
  agentId: "coder",
  ownerKey: "user:1",
  createdAt: 1000,
  updatedAt: 1000,
};
const storeTables = [
  "checkpoints",
  "leases",
  "messages",
  "owners",
  "pending_actions",
  "run_chunks",
  "run_stop_requests",
  "runs",
  "schema_migrations",
  "thread_leases",
  "threads",
  "tool_data",
];

let schema: TestSchema;
let pool: pg.Pool;

function migrate() {
  return migratePostgresSchema({ pool, schema: schema.name, target: "the test server" });
}

async function tables(): Promise<string[]> {
  const rows = await schema.sql<{ name: string }>(
    "SELECT tablename AS name FROM pg_catalog.pg_tables WHERE schemaname = $1 ORDER BY tablename",
    [schema.name],
  );
  return rows.map((row) => row.name);
}

async function applied() {
  return schema.sql<{ version: number; name: string; applied_at: Date }>(
    `SELECT version, name, applied_at FROM "${schema.name}".schema_migrations ORDER BY version`,
  );
}

/** The schema as a release of PAI left it: the migrations up to `version`, recorded. Returns the quoted schema. */
async function migratedTo(version: number): Promise<string> {
  const quoted = `"${schema.name}"`;
  await schema.sql(`CREATE SCHEMA ${quoted}`);
  await schema.sql(`CREATE TABLE ${quoted}.schema_migrations
    (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  for (const step of postgresMigrations.filter((candidate) => candidate.version <= version)) {
    await schema.sql(step.sql(quoted));
    await schema.sql(`INSERT INTO ${quoted}.schema_migrations (version, name) VALUES ($1, $2)`, [
      step.version,
      step.name,
    ]);
  }
  return quoted;
}

async function rejection(promise: Promise<unknown>): Promise<PaiError> {
  const error = await promise.then(
    () => expect.fail("expected the promise to reject"),
    (caught: unknown) => caught,
  );
  expect(PaiError.isInstance(error), `expected a PaiError, got ${String(error)}`).toBe(true);
  return error as PaiError;
}

beforeEach(() => {
  schema = createTestSchema();
  pool = new pg.Pool({ connectionString: schema.connectionString, max: 4 });
});

afterEach(async () => {
  try {
    await pool.end();
  } finally {
    await schema.drop();
  }
});

describe("Postgres thread store migrations", () => {
  it("numbers its steps from 1 without gaps", () => {
    expect(postgresMigrations.map((step) => step.version)).toEqual(
      Array.from({ length: postgresMigrations.length }, (_, index) => index + 1),
    );
    expect(POSTGRES_SCHEMA_VERSION).toBe(postgresMigrations.length);
  });

  it("creates the schema and its tables and records each step applied", async () => {
    expect(await migrate()).toEqual({ from: 0, to: POSTGRES_SCHEMA_VERSION });

    expect(await tables()).toEqual(storeTables);
    expect((await applied()).map(({ version, name }) => ({ version, name }))).toEqual(
      postgresMigrations.map(({ version, name }) => ({ version, name })),
    );
  });

  it("applies nothing the second time and keeps what the store holds", async () => {
    const store = await createPostgresThreadStore({ pool, schema: schema.name });
    await store.ensureThread(thread);
    await store.close();
    const before = await applied();

    expect(await migrate()).toEqual({ from: POSTGRES_SCHEMA_VERSION, to: POSTGRES_SCHEMA_VERSION });
    const reopened = await createPostgresThreadStore({ pool, schema: schema.name });

    expect(await applied()).toEqual(before);
    expect(await reopened.getThread("t1")).toEqual(thread);
    await reopened.close();
  });

  it("migrates once when several stores open a new schema at the same time", async () => {
    const stores = await Promise.all(
      Array.from({ length: 5 }, () =>
        createPostgresThreadStore({ connectionString: schema.connectionString, schema: schema.name }),
      ),
    );
    try {
      expect(await applied()).toHaveLength(POSTGRES_SCHEMA_VERSION);
      await Promise.all(stores.map((store, index) => store.ensureThread({ ...thread, id: `t${index}` })));
      const listed = await stores[0]!.listThreads({ ownerKey: "user:1" });
      expect(listed.map((found) => found.id).sort()).toEqual(["t0", "t1", "t2", "t3", "t4"]);
    } finally {
      await Promise.all(stores.map((store) => store.close()));
    }
  });

  it("upgrades a version-1 store in place, keeping its runs and leases without owners", async () => {
    // A store as the first release left it: step 1 only, with a run and a lease recorded.
    const quoted = `"${schema.name}"`;
    await schema.sql(`CREATE SCHEMA ${quoted}`);
    await schema.sql(`CREATE TABLE ${quoted}.schema_migrations
      (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    await schema.sql(postgresMigrations[0]!.sql(quoted));
    await schema.sql(`INSERT INTO ${quoted}.schema_migrations (version, name) VALUES (1, 'v1')`);
    await schema.sql(`INSERT INTO ${quoted}.runs (id, thread_id, agent_id, status, started_at)
      VALUES ('r1', 't1', 'coder', 'running', 1000)`);
    await schema.sql(`INSERT INTO ${quoted}.leases
      (capability, lifetime, key, resource_id, meta, created_at, last_used_at)
      VALUES ('sandbox', 'thread', 't1', 'c1', '{}', 1000, 1000)`);

    expect(await migrate()).toEqual({ from: 1, to: POSTGRES_SCHEMA_VERSION });
    const store = await createPostgresThreadStore({ pool, schema: schema.name });
    try {
      expect(await store.listRunsByStatus("running")).toEqual([
        { id: "r1", threadId: "t1", agentId: "coder", status: "running", startedAt: 1000 },
      ]);
      const [lease] = await store.listLeases();
      expect(lease).toEqual({
        capability: "sandbox",
        lifetime: "thread",
        key: "t1",
        resourceId: "c1",
        meta: {},
        createdAt: 1000,
        lastUsedAt: 1000,
      });
      expect(await store.claimLease("sandbox", "thread", "t1", { from: undefined, to: "a" })).toBe(true);
      expect(await store.listOwners()).toEqual([]);
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-3 store in place: an answered nested action stays, unclaimed, and threads can be leased", async () => {
    // A store as the approvals release left it: steps 1 to 3, with an answered action waiting below its call.
    const quoted = await migratedTo(3);
    await schema.sql(`INSERT INTO ${quoted}.pending_actions (id, thread_id, run_id, tool_call_id, tool_id,
        tool_name, input_hash, input, kind, name, payload, suspend_history, status, created_at, settled_at, answer,
        inner_call, journal)
      VALUES ('a1', 't1', 'r1', 'c1', 'deploy', 'deploy', 'h', '{}', 'suspend', 'default', '"Deploy?"', '[]',
        'resumed', 1, 2, '{"type":"resume","resume":true}',
        '{"path":["deploy","check"],"key":"0","toolId":"check","input":{}}', '[]')`);

    expect(await migrate()).toEqual({ from: 3, to: POSTGRES_SCHEMA_VERSION });
    const store = await createPostgresThreadStore({ pool, schema: schema.name });
    try {
      const stored = await store.getPendingAction("a1");
      expect(stored).toMatchObject({ id: "a1", status: "resumed", inner: { key: "0" }, journal: [] });
      expect(stored).not.toHaveProperty("appliedBy");
      expect(await store.claimPendingAction("a1", "r2")).toBe(true);
      expect(await store.claimPendingAction("a1", "r3")).toBe(false);
      const taken = await store.acquireThreadLease({
        threadId: "t1",
        runId: "r2",
        ownerId: "o",
        ttlMs: 10_000,
      });
      expect(taken.acquired).toBe(true);
      await store.appendRunChunks({ runId: "r2", seq: 0, chunks: [{ type: "start" }] });
      expect(await store.listRunChunks("r2")).toEqual([{ runId: "r2", seq: 0, chunk: { type: "start" } }]);
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-4 store in place: a run it left running can be asked to stop", async () => {
    const quoted = await migratedTo(4);
    await schema.sql(`INSERT INTO ${quoted}.runs (id, thread_id, agent_id, status, started_at, owner_id)
      VALUES ('r1', 't1', 'coder', 'running', 1000, 'a')`);

    expect(await migrate()).toEqual({ from: 4, to: POSTGRES_SCHEMA_VERSION });
    const store = await createPostgresThreadStore({ pool, schema: schema.name });
    try {
      expect(await store.getRun("r1")).toMatchObject({ status: "running", ownerId: "a" });
      expect(await store.listRunStopRequests(["r1"])).toEqual([]);
      expect(await store.requestRunStop("r1")).toBe(true);
      expect(await store.listRunStopRequests(["r1"])).toEqual(["r1"]);
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-5 store in place: its owners stay, without a place, and record one at their next heartbeat", async () => {
    const quoted = await migratedTo(5);
    await schema.sql(`INSERT INTO ${quoted}.owners (owner_id, host, pid, started_at, heartbeat_at)
      VALUES ('a', 'host-a', 42, 1000, 2000)`);

    expect(await migrate()).toEqual({ from: 5, to: POSTGRES_SCHEMA_VERSION });
    const store = await createPostgresThreadStore({ pool, schema: schema.name });
    try {
      const recorded = { ownerId: "a", host: "host-a", pid: 42, startedAt: 1000 };
      expect(await store.listOwners()).toEqual([{ ...recorded, heartbeatAt: 2000 }]);
      const place = { bootId: "b", pidNamespace: "pid:[1]", processStartTicks: 7 };
      await store.heartbeatOwner({ ...recorded, heartbeatAt: 3000, ...place });
      expect(await store.listOwners()).toEqual([{ ...recorded, heartbeatAt: 3000, ...place }]);
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-6 store in place: its threads stay, with no checkpoints, and checkpoints can be recorded", async () => {
    const quoted = await migratedTo(6);
    await schema.sql(`INSERT INTO ${quoted}.threads (id, agent_id, owner_key, created_at, updated_at)
      VALUES ('t1', 'coder', 'user:1', 1000, 1000)`);

    expect(await migrate()).toEqual({ from: 6, to: POSTGRES_SCHEMA_VERSION });
    const store = await createPostgresThreadStore({ pool, schema: schema.name });
    try {
      expect(await store.getThread("t1")).toEqual(thread);
      expect(await store.listCheckpoints("t1")).toEqual([]);
      const checkpoint = {
        id: "k1",
        threadId: "t1",
        messageId: "m1",
        capability: "sandbox",
        manifestDigest: "a".repeat(64),
        files: 2,
        totalBytes: 10,
        bytesAdded: 10,
        createdAt: 2000,
      };
      await store.putCheckpoint(checkpoint);
      expect(await store.listCheckpoints("t1")).toEqual([checkpoint]);
    } finally {
      await store.close();
    }
  });

  it("upgrades a version-8 store in place: its pending actions stay, without a trace parent, and one can be stored", async () => {
    const quoted = await migratedTo(8);
    await schema.sql(`INSERT INTO ${quoted}.pending_actions (id, thread_id, run_id, tool_call_id, tool_id,
        tool_name, input_hash, input, kind, name, payload, suspend_history, status, created_at)
      VALUES ('a1', 't1', 'r1', 'c1', 'deploy', 'deploy', 'h', '{}', 'suspend', 'default', '"Deploy?"', '[]',
        'pending', 1)`);

    expect(await migrate()).toEqual({ from: 8, to: POSTGRES_SCHEMA_VERSION });
    const store = await createPostgresThreadStore({ pool, schema: schema.name });
    try {
      const stored = await store.getPendingAction("a1");
      expect(stored).toMatchObject({ id: "a1", status: "pending" });
      expect(stored).not.toHaveProperty("traceParent");
      const traceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
      await store.putPendingAction({ ...stored!, id: "a2", traceParent });
      expect((await store.getPendingAction("a2"))?.traceParent).toBe(traceParent);
    } finally {
      await store.close();
    }
  });

  it("adopts an existing empty schema", async () => {
    await schema.sql(`CREATE SCHEMA "${schema.name}"`);

    expect(await migrate()).toEqual({ from: 0, to: POSTGRES_SCHEMA_VERSION });
    expect(await tables()).toEqual(storeTables);
  });

  it("rolls a failed step back entirely", async () => {
    // A schema that looks like a new PAI store, but where the step's last table cannot be created.
    await schema.sql(`CREATE SCHEMA "${schema.name}"`);
    await schema.sql(`CREATE TABLE "${schema.name}".schema_migrations
      (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    await schema.sql(`CREATE TYPE "${schema.name}".leases AS (blocked integer)`);

    const error = await rejection(createPostgresThreadStore({ pool, schema: schema.name }));

    expect(error.code).toBe("STORE_UNWRITABLE");
    expect(error.message).toContain('"leases" already exists');
    expect(await tables()).toEqual(["schema_migrations"]);
    expect(await applied()).toEqual([]);
  });

  it("refuses a schema migrated by a newer PAI and leaves it untouched", async () => {
    await migrate();
    await schema.sql(
      `INSERT INTO "${schema.name}".schema_migrations (version, name) VALUES (99, 'from the future')`,
    );
    const before = await applied();

    const error = await rejection(createPostgresThreadStore({ pool, schema: schema.name }));

    expect(error.code).toBe("STORE_CORRUPT");
    expect(error.message).toMatch(/schema version 99, written by a newer PAI/);
    expect(error.details).toMatchObject({
      schemaVersion: 99,
      supportedSchemaVersion: POSTGRES_SCHEMA_VERSION,
    });
    expect(await applied()).toEqual(before);
  });

  it("refuses a schema holding another application's tables and leaves it untouched", async () => {
    await schema.sql(`CREATE SCHEMA "${schema.name}"`);
    await schema.sql(`CREATE TABLE "${schema.name}".invoices (id integer PRIMARY KEY, total numeric)`);

    const error = await rejection(createPostgresThreadStore({ pool, schema: schema.name }));

    expect(error.code).toBe("STORE_CORRUPT");
    expect(error.message).toContain("is not a PAI thread store");
    expect(await tables()).toEqual(["invoices"]);
  });
});
