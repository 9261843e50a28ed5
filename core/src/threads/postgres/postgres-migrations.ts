import type { Pool, PoolClient } from "pg";
import { PaiError } from "../../errors/pai-error.ts";

/** One numbered step of the Postgres thread store's schema. */
export interface PostgresMigration {
  /** 1, 2, 3, …: applied in order, each once, recorded in the schema's `schema_migrations` table. */
  version: number;
  /** What the step does, recorded beside its version. */
  name: string;
  /** The step's SQL for the schema `schema` (already quoted), run in the migration's transaction. */
  sql(schema: string): string;
}

/**
 * The Postgres thread store's schema, step by step. Never edit a shipped step: append a new one. Timestamps
 * are `double precision` (JavaScript numbers round-trip exactly); JSON values are `json`, which keeps the text
 * as written (key order, and `\u0000` escapes, which `jsonb` refuses); keys compare bytewise (`COLLATE "C"`),
 * as in SQLite. `ordinal` columns keep insertion order where SQLite orders by `rowid`.
 */
export const postgresMigrations: readonly PostgresMigration[] = [
  {
    version: 1,
    name: "threads, messages, runs, tool data, pending actions, leases",
    sql: (s) => `
      CREATE TABLE ${s}.threads (
        id text COLLATE "C" PRIMARY KEY,
        agent_id text COLLATE "C" NOT NULL,
        owner_key text COLLATE "C" NOT NULL,
        title text,
        created_at double precision NOT NULL,
        updated_at double precision NOT NULL
      );
      CREATE INDEX threads_owner_updated ON ${s}.threads (owner_key, updated_at DESC);

      CREATE TABLE ${s}.messages (
        thread_id text COLLATE "C" NOT NULL,
        position integer NOT NULL,
        message json NOT NULL,
        PRIMARY KEY (thread_id, position)
      );

      CREATE TABLE ${s}.runs (
        id text COLLATE "C" PRIMARY KEY,
        ordinal bigint GENERATED ALWAYS AS IDENTITY,
        thread_id text COLLATE "C" NOT NULL,
        agent_id text COLLATE "C" NOT NULL,
        status text NOT NULL,
        started_at double precision NOT NULL,
        ended_at double precision,
        error text
      );
      CREATE INDEX runs_thread ON ${s}.runs (thread_id, started_at, ordinal);

      CREATE TABLE ${s}.tool_data (
        seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        thread_id text COLLATE "C" NOT NULL,
        run_id text COLLATE "C" NOT NULL,
        tool_call_id text COLLATE "C" NOT NULL,
        tool_id text COLLATE "C" NOT NULL,
        channel text COLLATE "C" NOT NULL,
        data json,
        created_at double precision NOT NULL
      );
      CREATE INDEX tool_data_thread_call ON ${s}.tool_data (thread_id, tool_call_id);

      CREATE TABLE ${s}.pending_actions (
        id text COLLATE "C" PRIMARY KEY,
        ordinal bigint GENERATED ALWAYS AS IDENTITY,
        thread_id text COLLATE "C" NOT NULL,
        run_id text COLLATE "C" NOT NULL,
        tool_call_id text COLLATE "C" NOT NULL,
        tool_id text COLLATE "C" NOT NULL,
        tool_name text NOT NULL,
        input_hash text NOT NULL,
        input json,
        kind text NOT NULL,
        name text,
        payload json,
        suspend_history json NOT NULL,
        status text NOT NULL,
        created_at double precision NOT NULL,
        settled_at double precision,
        answer json
      );
      CREATE INDEX pending_actions_thread_status ON ${s}.pending_actions (thread_id, status);
      CREATE INDEX pending_actions_status ON ${s}.pending_actions (status, created_at);

      CREATE TABLE ${s}.leases (
        capability text COLLATE "C" NOT NULL,
        lifetime text COLLATE "C" NOT NULL,
        key text COLLATE "C" NOT NULL,
        ordinal bigint GENERATED ALWAYS AS IDENTITY,
        resource_id text NOT NULL,
        meta json NOT NULL,
        created_at double precision NOT NULL,
        last_used_at double precision NOT NULL,
        PRIMARY KEY (capability, lifetime, key)
      );
    `,
  },
  {
    version: 2,
    name: "owners: runs and leases name the runtime process holding them; owners heartbeat",
    sql: (s) => `
      ALTER TABLE ${s}.runs ADD COLUMN owner_id text COLLATE "C";
      CREATE INDEX runs_status ON ${s}.runs (status, started_at, ordinal);
      ALTER TABLE ${s}.leases ADD COLUMN owner_id text COLLATE "C";
      ALTER TABLE ${s}.leases ADD COLUMN handover_to text COLLATE "C";
      CREATE TABLE ${s}.owners (
        owner_id text COLLATE "C" PRIMARY KEY,
        host text NOT NULL,
        pid bigint NOT NULL,
        started_at double precision NOT NULL,
        heartbeat_at double precision NOT NULL
      );
      `,
  },
  {
    version: 3,
    name: "pending actions: the inner call that waits and the top-level call's journal",
    sql: (s) => `
      ALTER TABLE ${s}.pending_actions ADD COLUMN inner_call json;
      ALTER TABLE ${s}.pending_actions ADD COLUMN journal json;
    `,
  },
  {
    version: 4,
    name: "thread leases (one run of a thread at a time across processes), stored run stream chunks, answers' appliers",
    sql: (s) => `
      CREATE TABLE ${s}.thread_leases (
        thread_id text COLLATE "C" PRIMARY KEY,
        run_id text COLLATE "C" NOT NULL,
        owner_id text COLLATE "C" NOT NULL,
        expires_at double precision NOT NULL
      );
      CREATE INDEX thread_leases_owner ON ${s}.thread_leases (owner_id);
      CREATE TABLE ${s}.run_chunks (
        run_id text COLLATE "C" NOT NULL,
        seq integer NOT NULL,
        chunk json NOT NULL,
        PRIMARY KEY (run_id, seq)
      );
      ALTER TABLE ${s}.pending_actions ADD COLUMN applied_by text COLLATE "C";
    `,
  },
  {
    version: 5,
    name: "stop requests: a stop sent to one process for a run another process runs",
    sql: (s) => `
      CREATE TABLE ${s}.run_stop_requests (
        run_id text COLLATE "C" PRIMARY KEY,
        requested_at double precision NOT NULL
      );
    `,
  },
  {
    version: 6,
    name: "owners: where each process runs (boot, pid namespace, start), so that one on the same machine sees its end at once",
    sql: (s) => `
      ALTER TABLE ${s}.owners ADD COLUMN boot_id text COLLATE "C";
      ALTER TABLE ${s}.owners ADD COLUMN pid_namespace text COLLATE "C";
      ALTER TABLE ${s}.owners ADD COLUMN process_start_ticks bigint;
    `,
  },
  {
    version: 7,
    name: "checkpoints of threads' resources: what a rewind or a fork restores",
    sql: (s) => `
      CREATE TABLE ${s}.checkpoints (
        id text COLLATE "C" PRIMARY KEY,
        thread_id text COLLATE "C" NOT NULL,
        message_id text COLLATE "C" NOT NULL,
        capability text COLLATE "C" NOT NULL,
        manifest_digest text COLLATE "C" NOT NULL,
        files bigint NOT NULL,
        total_bytes bigint NOT NULL,
        bytes_added bigint NOT NULL,
        created_at double precision NOT NULL
      );
      CREATE INDEX checkpoints_thread_created ON ${s}.checkpoints (thread_id, created_at, id);
    `,
  },
  {
    version: 8,
    name: "what a rewind did, on its run: the thread's history says it",
    sql: (s) => `ALTER TABLE ${s}.runs ADD COLUMN rewind json;`,
  },
  {
    version: 9,
    name: "pending actions: the trace context of the run that made each, which the run resuming it links to",
    sql: (s) => `ALTER TABLE ${s}.pending_actions ADD COLUMN trace_parent text COLLATE "C";`,
  },
];

/** The schema version this build writes and the newest it reads. */
export const POSTGRES_SCHEMA_VERSION = postgresMigrations.at(-1)!.version;

/** `pg_advisory_xact_lock(PAI, hashtext(schema))`: "PAI1" in ASCII, as the SQLite store's application id. */
const LOCK_CLASS = 0x50414931;

/** How long a store waits for another process's migration of the same schema. */
const MIGRATION_LOCK_TIMEOUT = "60s";

/** Where the migrations run and how failures name the store. */
export interface MigratePostgresSchemaOptions {
  pool: Pool;
  /** The schema's name, unquoted (a lowercase identifier). */
  schema: string;
  /** The store as error messages name it (no password). */
  target: string;
  /** Checked once the lock is held and between steps: an aborted migration rolls back. */
  signal?: AbortSignal | undefined;
}

/**
 * Brings `schema` to {@link POSTGRES_SCHEMA_VERSION}: creates it when missing, then applies every step not
 * yet recorded, all in one transaction under an advisory lock on the schema's name, so processes starting at
 * once apply each step exactly once and a failed step leaves the schema as it was. A schema already current
 * is checked without the lock. Returns the versions before and after.
 *
 * Throws `PaiError('STORE_CORRUPT')`, touching nothing, when the schema holds tables but no PAI migrations
 * (another application's) or was migrated by a newer PAI.
 */
export async function migratePostgresSchema(
  options: MigratePostgresSchemaOptions,
): Promise<{ from: number; to: number }> {
  const { pool, schema, target, signal } = options;
  const quoted = quoteIdentifier(schema);
  const current = await appliedVersion(pool, schema, quoted, target);
  if (current === POSTGRES_SCHEMA_VERSION) return { from: current, to: current };

  const client = await pool.connect();
  let broken: unknown;
  try {
    await client.query("BEGIN");
    try {
      await client.query(`SET LOCAL lock_timeout = '${MIGRATION_LOCK_TIMEOUT}'`);
      await client.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [LOCK_CLASS, schema]);
      signal?.throwIfAborted();
      // Read again under the lock: another process may have migrated meanwhile.
      const version = await appliedVersion(client, schema, quoted, target);
      if (version === 0) {
        // Not `CREATE SCHEMA IF NOT EXISTS`: it needs the CREATE privilege even when the schema exists.
        const { rows } = await client.query("SELECT to_regnamespace($1) IS NULL AS missing", [quoted]);
        if (rows[0].missing) await client.query(`CREATE SCHEMA ${quoted}`);
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${quoted}.schema_migrations (
             version integer PRIMARY KEY,
             name text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
           )`,
        );
      }
      for (const step of postgresMigrations) {
        if (step.version <= version) continue;
        signal?.throwIfAborted();
        await client.query(step.sql(quoted));
        await client.query(`INSERT INTO ${quoted}.schema_migrations (version, name) VALUES ($1, $2)`, [
          step.version,
          step.name,
        ]);
      }
      await client.query("COMMIT");
      return { from: version, to: POSTGRES_SCHEMA_VERSION };
    } catch (error) {
      try {
        await client.query("ROLLBACK");
      } catch (rollbackError) {
        // The connection is gone; the server rolls the transaction back. Drop the connection from the pool.
        broken = rollbackError;
      }
      throw error;
    }
  } finally {
    client.release(broken instanceof Error ? broken : undefined);
  }
}

/**
 * The newest version recorded in the schema, 0 for a schema that is missing or empty. Refuses a schema that
 * holds other tables but no PAI migrations, and one migrated by a newer PAI.
 */
async function appliedVersion(
  queryable: Pool | PoolClient,
  schema: string,
  quoted: string,
  target: string,
): Promise<number> {
  const { rows } = await queryable.query(
    `SELECT to_regclass($1) IS NOT NULL AS migrated,
            (SELECT count(*)::integer FROM pg_catalog.pg_tables WHERE schemaname = $2) AS tables`,
    [`${quoted}.schema_migrations`, schema],
  );
  const { migrated, tables } = rows[0] as { migrated: boolean; tables: number };
  if (!migrated) {
    if (tables > 0) {
      throw new PaiError(
        "STORE_CORRUPT",
        `${target} is not a PAI thread store: the schema holds ${tables} tables of another application and no ` +
          "PAI migrations. It was left untouched; give the store an empty or new schema",
        { details: { schema, tables } },
      );
    }
    return 0;
  }
  const result = await queryable.query(
    `SELECT coalesce(max(version), 0)::integer AS version FROM ${quoted}.schema_migrations`,
  );
  const version = result.rows[0].version as number;
  if (version > POSTGRES_SCHEMA_VERSION) {
    throw new PaiError(
      "STORE_CORRUPT",
      `${target} is a PAI thread store of schema version ${version}, written by a newer PAI; this version ` +
        `reads up to ${POSTGRES_SCHEMA_VERSION}. It was left untouched: upgrade PAI to open it`,
      { details: { schema, schemaVersion: version, supportedSchemaVersion: POSTGRES_SCHEMA_VERSION } },
    );
  }
  return version;
}

/** `"name"`, for a name already checked to be a plain lowercase identifier. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
