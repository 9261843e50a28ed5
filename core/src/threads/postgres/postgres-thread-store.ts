import { createHash } from "node:crypto";
import { homedir } from "node:os";
import { join } from "node:path";
import { Pool as PgPool, type Pool } from "pg";
import { z } from "zod";
import { parseStoreInput } from "../parse-store-input.ts";
import type { ThreadStore } from "../thread-store.ts";
import { postgresCheckpointMethods } from "./postgres-checkpoint-methods.ts";
import { openPostgresConnection } from "./postgres-connection.ts";
import { postgresLeaseMethods } from "./postgres-lease-methods.ts";
import { postgresOwnerMethods } from "./postgres-owner-methods.ts";
import { postgresPendingActionMethods } from "./postgres-pending-action-methods.ts";
import { postgresRunChunkMethods } from "./postgres-run-chunk-methods.ts";
import { postgresRunMethods } from "./postgres-run-methods.ts";
import { postgresStopRequestMethods } from "./postgres-stop-request-methods.ts";
import { postgresThreadLeaseMethods } from "./postgres-thread-lease-methods.ts";
import { postgresThreadMethods } from "./postgres-thread-methods.ts";
import { postgresToolDataMethods } from "./postgres-tool-data-methods.ts";

interface PostgresThreadStoreCommonOptions {
  /**
   * The schema the store's tables live in, created (with its tables) when missing. A lowercase identifier.
   * Several stores — in one process or many — may share a schema; a schema that holds another application's
   * tables is refused.
   * @default "pai"
   */
  schema?: string;
  /**
   * Aborts opening (connecting, migrating): the promise rejects with the signal's reason at once; a
   * migration waiting for another process's rolls back once it gets its turn, and the store's own connections
   * close.
   */
  signal?: AbortSignal;
}

/** The store opens and owns its connections. */
export interface PostgresThreadStoreConnectionOptions extends PostgresThreadStoreCommonOptions {
  /**
   * Where the server is: `postgresql://user:password@host:5432/database`, or a unix socket's directory as
   * `postgresql://user@localhost/database?host=/run/postgresql`. pg's `PG*` environment variables fill in
   * what it leaves out.
   */
  connectionString: string;
  pool?: never;
  /**
   * Connections the store opens at most.
   * @default 10
   */
  maxConnections?: number;
  /**
   * How long a call waits to connect (or for a free connection) before it fails with `STORE_UNWRITABLE`.
   * @default 5000
   */
  connectionTimeoutMs?: number;
  /**
   * How long a write waits for a row another connection holds locked before it fails with
   * `STORE_UNWRITABLE`, as `busyTimeoutMs` does for SQLite; 0 waits without limit.
   * @default 5000
   */
  lockTimeoutMs?: number;
  /**
   * How long one statement may run before the server cancels it and the call fails with `STORE_UNWRITABLE`
   * (nothing is changed): a deadline for a server that stalls; 0 sets none.
   * @default 30000
   */
  statementTimeoutMs?: number;
}

/** The store borrows connections from the app's `pg` pool and never ends it. */
export interface PostgresThreadStorePoolOptions extends PostgresThreadStoreCommonOptions {
  /** A `pg` `Pool` the app owns (its timeouts apply); `close()` leaves it open. */
  pool: Pool;
  connectionString?: never;
}

/** Options of {@link createPostgresThreadStore}: a connection string, or a `pg` pool. */
export type PostgresThreadStoreOptions =
  | PostgresThreadStoreConnectionOptions
  | PostgresThreadStorePoolOptions;

const optionsSchema = z.union([
  z.object({
    connectionString: z.string().min(1),
    pool: z.undefined().optional(),
    schema: z.string().optional(),
    maxConnections: z.number().int().positive().optional(),
    connectionTimeoutMs: z.number().int().positive().optional(),
    lockTimeoutMs: z.number().int().nonnegative().optional(),
    statementTimeoutMs: z.number().int().nonnegative().optional(),
    signal: z.instanceof(AbortSignal).optional(),
  }),
  z.object({
    pool: z.custom<Pool>(
      (value) =>
        typeof (value as Partial<Pool> | null)?.query === "function" &&
        typeof (value as Partial<Pool>).connect === "function",
      { message: "pool must be a pg Pool" },
    ),
    connectionString: z.undefined().optional(),
    schema: z.string().optional(),
    signal: z.instanceof(AbortSignal).optional(),
  }),
]);

const schemaName = z
  .string()
  .regex(/^[a-z_][a-z0-9_]{0,62}$/, "a lowercase identifier: a-z, 0-9 and _, at most 63 characters");

/**
 * Creates the {@link ThreadStore} for several processes that share threads: PostgreSQL through `pg`
 * (node-postgres). It has the SQLite store's semantics — the same input checks, ordering and JSON values;
 * `commitRun` and `deleteThread` are each one statement, so a failure leaves nothing half-written; and
 * `settlePendingAction`, `settleRun`, `claimLease` and `requestLeaseHandover` are conditional `UPDATE`s
 * (compare-and-set), so of two processes settling one action, ending one run or claiming one lease exactly one
 * changes it.
 *
 * On creation it connects and brings its schema to the current version (numbered migrations in one
 * transaction under an advisory lock, so processes starting at once migrate once). It rejects with `PaiError`:
 * - `STORE_UNWRITABLE` when the server cannot be reached or refuses (the message names host, port, database);
 * - `STORE_CORRUPT` when the schema holds another application's tables or was migrated by a newer PAI;
 *   nothing is changed then.
 *
 * Every method rejects with `STORE_CLOSED` after `close()`, with `STORE_UNWRITABLE` when the server fails a
 * write (nothing is changed) and with `STORE_CORRUPT` when the store's tables are gone. `close()` waits for
 * calls in flight, then ends the store's own connections (never a `pool` the app passed). One difference
 * from SQLite: PostgreSQL text holds no NUL character, so a plain text field (an id, a title) with one is
 * refused with `INVALID_ARGUMENT`; JSON values (messages, tool data, payloads, answers) hold any string.
 *
 * Import it from `@pai/core/postgres`; it needs the `pg` package (`npm install pg`).
 *
 * @example
 * ```ts
 * import { createPostgresThreadStore } from "@pai/core/postgres";
 *
 * const store = await createPostgresThreadStore({ connectionString: process.env.DATABASE_URL! });
 * const runtime = createAgentRuntime({ pai, store });
 * ```
 */
export async function createPostgresThreadStore(
  options: PostgresThreadStoreOptions,
): Promise<ThreadStore & AsyncDisposable> {
  const parsed = parseStoreInput(optionsSchema, options, "Postgres store options");
  const schema = parseStoreInput(schemaName, parsed.schema ?? "pai", "schema");
  parsed.signal?.throwIfAborted();
  const connection = await openPostgresConnection({
    pool: parsed.pool === undefined ? createOwnPool(parsed) : parsed.pool,
    ownsPool: parsed.pool === undefined,
    schema,
    signal: parsed.signal,
  });
  const store: ThreadStore & AsyncDisposable = {
    checkpointDirectory: checkpointDirectoryOf(connection.databaseKey),
    ...postgresThreadMethods(connection),
    ...postgresRunMethods(connection),
    ...postgresStopRequestMethods(connection),
    ...postgresRunChunkMethods(connection),
    ...postgresToolDataMethods(connection),
    ...postgresPendingActionMethods(connection),
    ...postgresCheckpointMethods(connection),
    ...postgresLeaseMethods(connection),
    ...postgresThreadLeaseMethods(connection),
    ...postgresOwnerMethods(connection),
    close: () => connection.close(),
    [Symbol.asyncDispose]: () => store.close(),
  };
  return store;
}

/**
 * The default checkpoint folder of a database's threads on this machine: under the user's cache folder
 * (`$XDG_CACHE_HOME`, else `~/.cache`), named by a hash of the database and schema. Processes on other machines
 * sharing the database have their own; an app running on several names a shared checkpoint store.
 */
function checkpointDirectoryOf(databaseKey: string): string {
  const cache = process.env.XDG_CACHE_HOME || join(homedir(), ".cache");
  const name = createHash("sha256").update(databaseKey).digest("hex").slice(0, 16);
  return join(cache, "pai", "checkpoints", `postgres-${name}`);
}

/** The pool the store opens for a connection string, and ends on close. */
function createOwnPool(options: PostgresThreadStoreConnectionOptions): Pool {
  const pool = new PgPool({
    connectionString: options.connectionString,
    max: options.maxConnections ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
    lock_timeout: options.lockTimeoutMs ?? 5000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    application_name: "pai-thread-store",
  });
  // An idle connection the server closes is dropped by the pool and the next call opens another; without a
  // listener, pg's 'error' event would end the process.
  pool.on("error", () => {});
  return pool;
}
