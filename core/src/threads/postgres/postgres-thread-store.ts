import type { UIMessage } from "ai";
import { type CustomTypesConfig, Client as PgClient, Pool as PgPool, type Pool, types as pgTypes } from "pg";
import { z } from "zod";
import { PaiError } from "../../errors/pai-error.ts";
import {
  fromStoredJson,
  parseStoreInput,
  storeInputSchemas as schemas,
  storeClosedError,
  toStoredJson,
} from "../parse-store-input.ts";
import {
  actionColumns,
  actionFromRow,
  actionToRow,
  leaseColumns,
  leaseFromRow,
  leaseToRow,
  optionalRecord,
  ownerColumns,
  ownerFromRow,
  ownerToRow,
  runChunkColumns,
  runChunkFromRow,
  runColumns,
  runFromRow,
  runToRow,
  type StoredRow,
  threadColumns,
  threadFromRow,
  threadLeaseColumns,
  threadLeaseFromRow,
  threadToRow,
  toolDataColumns,
  toolDataFromRow,
  toolDataToRow,
  toolDataWrittenColumns,
} from "../row-codecs.ts";
import type { PendingActionRecord, ThreadStore } from "../thread-store.ts";
import { migratePostgresSchema, quoteIdentifier } from "./postgres-migrations.ts";
import { createPostgresRunWatcher, RUN_CHANNEL } from "./postgres-run-watcher.ts";
import { toPostgresStoreError } from "./postgres-store-error.ts";

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

/** pg's type parsers, except that `json` stays text (parsed here, so SQL NULL and JSON `null` differ) and `bigint` is a number. */
const storedTypes: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: "text" | "binary") => {
    if (oid === pgTypes.builtins.JSON) return (text: string) => text;
    if (oid === pgTypes.builtins.INT8) return (text: string) => Number(text);
    return pgTypes.getTypeParser(oid, format);
  }) as CustomTypesConfig["getTypeParser"],
};

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
  const ownPool = parsed.pool === undefined;
  const pool: Pool =
    parsed.pool ??
    new PgPool({
      connectionString: parsed.connectionString,
      max: parsed.maxConnections ?? 10,
      connectionTimeoutMillis: parsed.connectionTimeoutMs ?? 5000,
      lock_timeout: parsed.lockTimeoutMs ?? 5000,
      statement_timeout: parsed.statementTimeoutMs ?? 30_000,
      application_name: "pai-thread-store",
    });
  // An idle connection the server closes is dropped by the pool and the next call opens another; without a
  // listener, pg's 'error' event would end the process.
  if (ownPool) pool.on("error", () => {});
  const target = describeTarget(pool, schema);
  try {
    await untilAborted(migratePostgresSchema({ pool, schema, target, signal: parsed.signal }), parsed.signal);
  } catch (error) {
    // pool.end() closes idle connections at once and a busy one (a migration still running) when released.
    const ending = ownPool ? pool.end().catch(() => {}) : undefined;
    if (parsed.signal?.aborted) throw parsed.signal.reason;
    await ending;
    throw toPostgresStoreError(error, target, "open");
  }

  const sql = statements(quoteIdentifier(schema));
  /** Statement names are per connection; the schema is in them, as stores of two schemas may share a pool. */
  const namePrefix = `pai:${schema}:`;

  async function query<ROW extends StoredRow>(
    statement: keyof typeof sql,
    values: unknown[],
  ): Promise<ROW[]> {
    const result = await pool.query<ROW>({
      name: namePrefix + statement,
      text: sql[statement],
      values,
      types: storedTypes,
    });
    return result.rows;
  }

  const watcher = createPostgresRunWatcher({ pool, schema });
  /** What a notification about `runId` carries (the channel is shared by every schema of the database). */
  const notice = (runId: string) => `${schema}:${runId}`;

  let closed = false;
  let closing: Promise<void> | undefined;
  const inFlight = new Set<Promise<void>>();

  /** Runs `body` while the store is open, mapping failures to `PaiError`; `close()` waits for it. */
  function use<RESULT>(action: string, body: () => Promise<RESULT>): Promise<RESULT> {
    if (closed) return Promise.reject(storeClosedError());
    const running = (async () => {
      try {
        return await body();
      } catch (error) {
        throw toPostgresStoreError(error, target, action);
      }
    })();
    const settled = running.then(
      () => {},
      () => {},
    );
    inFlight.add(settled);
    void settled.then(() => inFlight.delete(settled));
    return running;
  }

  const store: ThreadStore & AsyncDisposable = {
    getThread: (threadId) =>
      use("read", async () => optionalRecord((await query("getThread", [threadId]))[0], threadFromRow)),

    ensureThread: (input) =>
      use("write", async () => {
        const thread = parseStoreInput(schemas.thread, input, "thread");
        const [inserted] = await query("insertThreadIfMissing", threadToRow(thread));
        // Read in a second statement when it existed: it sees a row another connection committed meanwhile.
        return threadFromRow(inserted ?? (await query("getThread", [thread.id]))[0]!);
      }),

    listThreads: (input) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.threadQuery, input, "thread query");
        const rows = await query("listThreads", [
          filter.ownerKey,
          filter.agentId ?? null,
          filter.limit ?? null,
        ]);
        return rows.map(threadFromRow);
      }),

    deleteThread: (threadId) =>
      use("write", async () => {
        await query("deleteThread", [threadId]);
      }),

    loadMessages: (threadId) =>
      use("read", async () => {
        const [row] = await query("loadMessages", [threadId]);
        return fromStoredJson(row?.messages as string) as UIMessage[];
      }),

    createRun: (input) =>
      use("write", async () => {
        const run = parseStoreInput(schemas.run, input, "run");
        if ((await query("insertRunIfMissing", runToRow(run))).length === 0) {
          throw new PaiError("INVALID_ARGUMENT", `Run ${run.id} already exists`);
        }
      }),

    getRun: (runId) =>
      use("read", async () => optionalRecord((await query("getRun", [runId]))[0], runFromRow)),

    listRuns: (threadId) => use("read", async () => (await query("listRuns", [threadId])).map(runFromRow)),

    updateRun: (runId, input) =>
      use("write", async () => {
        const patch = parseStoreInput(schemas.runPatch, input, "run patch");
        const updated = await query("updateRun", [
          runId,
          patch.agentId ?? null,
          patch.status ?? null,
          patch.startedAt ?? null,
          "endedAt" in input,
          patch.endedAt ?? null,
          "error" in input,
          patch.error ?? null,
        ]);
        if (updated.length === 0) {
          throw new PaiError("UNKNOWN_RUN", `Run ${runId} does not exist`, { details: { runId } });
        }
      }),

    listRunsByStatus: (input) =>
      use("read", async () => {
        const status = parseStoreInput(schemas.runStatus, input, "run status");
        return (await query("listRunsByStatus", [status])).map(runFromRow);
      }),

    settleRun: (runId, expectedInput, input) =>
      use("write", async () => {
        const expected = parseStoreInput(schemas.runStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settleRunPatch, input, "run settle patch");
        const settled = await query("settleRun", [
          runId,
          expected,
          patch.status,
          "endedAt" in input,
          patch.endedAt ?? null,
          "error" in input,
          patch.error ?? null,
        ]);
        return settled.length === 1;
      }),

    requestRunStop: (runId) =>
      use("write", async () => (await query("requestRunStop", [runId, Date.now()])).length === 1),

    listRunStopRequests: (input) =>
      use("read", async () => {
        const runIds = parseStoreInput(schemas.runIds, input, "run ids");
        return (await query("listRunStopRequests", [runIds])).map((row) => row.run_id as string);
      }),

    commitRun: (input) =>
      use("commit", async () => {
        const { thread, messages, run } = parseStoreInput(schemas.runCommit, input, "run commit");
        // Serialized before the statement: a message JSON cannot hold must not get as far as the server.
        const text = toStoredJson(messages, "messages") ?? "[]";
        await query("commitRun", [...threadToRow(thread), ...runToRow(run), text]);
      }),

    appendToolData: (input) =>
      use("write", async () => {
        const record = parseStoreInput(schemas.toolData, input, "tool data");
        const [row] = await query("insertToolData", toolDataToRow(record));
        return toolDataFromRow(row!);
      }),

    listToolData: (input) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.toolDataQuery, input, "tool data query");
        const rows = await query("listToolData", [
          filter.threadId,
          filter.toolCallId ?? null,
          filter.channel ?? null,
        ]);
        return rows.map(toolDataFromRow);
      }),

    putPendingAction: (input) =>
      use("write", async () => {
        const action = parseStoreInput(schemas.pendingAction, input, "pending action");
        await query("upsertAction", actionToRow(action as PendingActionRecord));
      }),

    getPendingAction: (actionId) =>
      use("read", async () => optionalRecord((await query("getAction", [actionId]))[0], actionFromRow)),

    listPendingActions: (input) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.pendingActionQuery, input, "pending action query");
        const rows = await query("listActions", [filter.threadId ?? null, filter.status ?? null]);
        return rows.map(actionFromRow);
      }),

    settlePendingAction: (actionId, expectedInput, input) =>
      use("write", async () => {
        const expected = parseStoreInput(schemas.actionStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settlePatch, input, "settle patch");
        const [settled] = await query("settleAction", [
          actionId,
          expected,
          patch.status,
          "answer" in input,
          toStoredJson(patch.answer, "answer"),
          "settledAt" in input,
          patch.settledAt ?? null,
        ]);
        if (settled) return { changed: true, action: actionFromRow(settled) };
        // Lost (or nothing to settle): read in a new statement, which sees what the winner committed.
        return {
          changed: false,
          action: optionalRecord((await query("getAction", [actionId]))[0], actionFromRow),
        };
      }),

    claimPendingAction: (actionId, runId) =>
      use("write", async () => {
        const applier = parseStoreInput(schemas.id, runId, "run id");
        return (await query("claimAction", [actionId, applier])).length === 1;
      }),

    putLease: (input) =>
      use("write", async () => {
        const lease = parseStoreInput(schemas.lease, input, "lease");
        await query("upsertLease", leaseToRow(lease));
      }),

    listLeases: (input = {}) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.leaseQuery, input, "lease query");
        const rows = await query("listLeases", [
          filter.capability ?? null,
          filter.lifetime ?? null,
          filter.key ?? null,
        ]);
        return rows.map(leaseFromRow);
      }),

    touchLease: (capability, lifetime, key, at) =>
      use("write", async () => {
        const lastUsedAt = parseStoreInput(schemas.timestamp, at, "lease time");
        await query("touchLease", [lastUsedAt, capability, lifetime, key]);
      }),

    deleteLease: (capability, lifetime, key) =>
      use("write", async () => {
        await query("deleteLease", [capability, lifetime, key]);
      }),

    claimLease: (capability, lifetime, key, input) =>
      use("write", async () => {
        const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
        return (await query("claimLease", [capability, lifetime, key, from ?? null, to])).length === 1;
      }),

    requestLeaseHandover: (capability, lifetime, key, input) =>
      use("write", async () => {
        const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
        return (await query("requestHandover", [capability, lifetime, key, from ?? null, to])).length === 1;
      }),

    acquireThreadLease: (input) =>
      use("write", async () => {
        const request = parseStoreInput(schemas.threadLeaseRequest, input, "thread lease request");
        const values = [request.threadId, request.runId, request.ownerId, request.ttlMs];
        // Empty only when another connection inserted the lease during the statement: read again.
        for (;;) {
          const [row] = await query("acquireThreadLease", values);
          if (row) return { acquired: row.acquired as boolean, lease: threadLeaseFromRow(row) };
        }
      }),

    renewThreadLeases: (ownerId, ttlInput) =>
      use("write", async () => {
        const ttlMs = parseStoreInput(schemas.ttlMs, ttlInput, "ttlMs");
        return (await query("renewThreadLeases", [ownerId, ttlMs])).map(threadLeaseFromRow);
      }),

    releaseThreadLease: (threadId, runId) =>
      use("write", async () => {
        await query("releaseThreadLease", [threadId, runId, notice(runId)]);
      }),

    getThreadLease: (threadId) =>
      use("read", async () =>
        optionalRecord((await query("getThreadLease", [threadId]))[0], threadLeaseFromRow),
      ),

    appendRunChunks: (input) =>
      use("write", async () => {
        const batch = parseStoreInput(schemas.runChunks, input, "run chunks");
        const text = toStoredJson(batch.chunks, "run chunks") ?? "[]";
        await query("appendRunChunks", [batch.runId, batch.seq, text, notice(batch.runId)]);
      }),

    listRunChunks: (runId, input = {}) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.runChunkQuery, input, "run chunk query");
        const rows = await query("listRunChunks", [runId, filter.afterSeq ?? -1]);
        return rows.map(runChunkFromRow);
      }),

    pruneRunChunks: (endedBefore) =>
      use("write", async () => {
        const before = parseStoreInput(schemas.timestamp, endedBefore, "endedBefore");
        await query("pruneRunChunks", [before]);
      }),

    watchRun(runId, onChange) {
      if (closed) throw storeClosedError();
      return watcher.watch(runId, onChange);
    },

    heartbeatOwner: (input) =>
      use("write", async () => {
        const owner = parseStoreInput(schemas.owner, input, "owner");
        await query("upsertOwner", ownerToRow(owner));
      }),

    releaseOwnerThreadLeases: (ownerId) =>
      use("write", async () => {
        await query("releaseOwnerThreadLeases", [ownerId, `${schema}:`]);
      }),

    listOwners: () => use("read", async () => (await query("listOwners", [])).map(ownerFromRow)),

    removeOwner: (ownerId) =>
      use("write", async () => {
        await query("deleteOwner", [ownerId]);
      }),

    close() {
      closing ??= (async () => {
        closed = true;
        await Promise.all(inFlight);
        watcher.close();
        if (!ownPool) return;
        try {
          await pool.end();
        } catch (error) {
          throw toPostgresStoreError(error, target, "close");
        }
      })();
      return closing;
    },

    async [Symbol.asyncDispose]() {
      await store.close();
    },
  };
  return store;
}

/** `promise`, or a rejection with the signal's reason as soon as it aborts. */
function untilAborted<VALUE>(promise: Promise<VALUE>, signal: AbortSignal | undefined): Promise<VALUE> {
  if (!signal) return promise;
  return new Promise<VALUE>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** `user@host:port/database (schema "pai")`: the server as pg resolves it, without the password. */
function describeTarget(pool: Pool, schema: string): string {
  // A client that never connects: pg resolves the connection string and the PG* variables on construction.
  const { user, host, port, database } = new PgClient(pool.options);
  return `${user}@${host}:${port}/${database} (schema "${schema}")`;
}

/** Every statement of the store, for the quoted schema `s`. */
function statements(s: string) {
  /** The server's clock in milliseconds since the epoch: every process reads lease expiry on the same clock. */
  const now = "(extract(epoch FROM clock_timestamp()) * 1000)::double precision";
  const runUpdate = `thread_id = excluded.thread_id, agent_id = excluded.agent_id, status = excluded.status,
    started_at = excluded.started_at, ended_at = excluded.ended_at, error = excluded.error,
    owner_id = excluded.owner_id`;
  return {
    getThread: `SELECT ${threadColumns} FROM ${s}.threads WHERE id = $1`,
    insertThreadIfMissing: `INSERT INTO ${s}.threads (${threadColumns}) VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (id) DO NOTHING RETURNING ${threadColumns}`,
    listThreads: `SELECT ${threadColumns} FROM ${s}.threads
      WHERE owner_key = $1 AND ($2::text IS NULL OR agent_id = $2)
      ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT $3`,
    /** One statement: the thread and everything recorded on it go together or not at all. */
    deleteThread: `WITH
        leases AS (DELETE FROM ${s}.leases WHERE (lifetime = 'thread' AND key = $1)
          OR (lifetime = 'run' AND key IN (SELECT id FROM ${s}.runs WHERE thread_id = $1))),
        runs AS (DELETE FROM ${s}.runs WHERE thread_id = $1),
        actions AS (DELETE FROM ${s}.pending_actions WHERE thread_id = $1),
        tool_data AS (DELETE FROM ${s}.tool_data WHERE thread_id = $1),
        messages AS (DELETE FROM ${s}.messages WHERE thread_id = $1),
        chunks AS (DELETE FROM ${s}.run_chunks
          WHERE run_id IN (SELECT id FROM ${s}.runs WHERE thread_id = $1)),
        stop_requests AS (DELETE FROM ${s}.run_stop_requests
          WHERE run_id IN (SELECT id FROM ${s}.runs WHERE thread_id = $1)),
        thread_lease AS (DELETE FROM ${s}.thread_leases WHERE thread_id = $1)
      DELETE FROM ${s}.threads WHERE id = $1`,

    loadMessages: `SELECT coalesce(json_agg(message ORDER BY position), '[]') AS messages
      FROM ${s}.messages WHERE thread_id = $1`,
    /**
     * One statement: the thread, the run, and the messages are stored together or not at all. Messages are
     * rewritten in place where they changed (a run's commit leaves the thread's earlier messages as they
     * were) and the surplus deleted; the two touch different rows.
     */
    commitRun: `WITH
        thread AS (INSERT INTO ${s}.threads (${threadColumns}) VALUES ($1, $2, $3, $4, $5, $6)
          ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id, owner_key = excluded.owner_key,
            title = excluded.title, updated_at = excluded.updated_at),
        run AS (INSERT INTO ${s}.runs (${runColumns}) VALUES ($7, $8, $9, $10, $11, $12, $13, $14)
          ON CONFLICT (id) DO UPDATE SET ${runUpdate}),
        written AS (INSERT INTO ${s}.messages (thread_id, position, message)
          SELECT $1, (ordinality - 1)::integer, value FROM json_array_elements($15::json) WITH ORDINALITY
          ON CONFLICT (thread_id, position) DO UPDATE SET message = excluded.message
            WHERE messages.message::text <> excluded.message::text)
      DELETE FROM ${s}.messages WHERE thread_id = $1 AND position >= json_array_length($15::json)`,

    getRun: `SELECT ${runColumns} FROM ${s}.runs WHERE id = $1`,
    listRuns: `SELECT ${runColumns} FROM ${s}.runs WHERE thread_id = $1 ORDER BY started_at, ordinal`,
    insertRunIfMissing: `INSERT INTO ${s}.runs (${runColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (id) DO NOTHING RETURNING id`,
    /** A patch in one statement: required fields left out keep their value; optional ones given as undefined clear. */
    updateRun: `UPDATE ${s}.runs SET agent_id = coalesce($2, agent_id), status = coalesce($3, status),
        started_at = coalesce($4, started_at),
        ended_at = CASE WHEN $5::boolean THEN $6::double precision ELSE ended_at END,
        error = CASE WHEN $7::boolean THEN $8::text ELSE error END
      WHERE id = $1 RETURNING id`,
    listRunsByStatus: `SELECT ${runColumns} FROM ${s}.runs WHERE status = $1 ORDER BY started_at, ordinal`,
    /** The compare-and-set of a run's end: of two connections, the second finds the status changed. */
    settleRun: `UPDATE ${s}.runs SET status = $3,
        ended_at = CASE WHEN $4::boolean THEN $5::double precision ELSE ended_at END,
        error = CASE WHEN $6::boolean THEN $7::text ELSE error END
      WHERE id = $1 AND status = $2 RETURNING id`,

    insertToolData: `INSERT INTO ${s}.tool_data (${toolDataWrittenColumns})
      VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${toolDataColumns}`,
    listToolData: `SELECT ${toolDataColumns} FROM ${s}.tool_data WHERE thread_id = $1
      AND ($2::text IS NULL OR tool_call_id = $2) AND ($3::text IS NULL OR channel = $3) ORDER BY seq`,

    getAction: `SELECT ${actionColumns} FROM ${s}.pending_actions WHERE id = $1`,
    listActions: `SELECT ${actionColumns} FROM ${s}.pending_actions
      WHERE ($1::text IS NULL OR thread_id = $1) AND ($2::text IS NULL OR status = $2)
      ORDER BY created_at, ordinal`,
    upsertAction: `INSERT INTO ${s}.pending_actions (${actionColumns})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)
      ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, run_id = excluded.run_id,
        tool_call_id = excluded.tool_call_id, tool_id = excluded.tool_id, tool_name = excluded.tool_name,
        input_hash = excluded.input_hash, input = excluded.input, kind = excluded.kind, name = excluded.name,
        payload = excluded.payload, suspend_history = excluded.suspend_history, status = excluded.status,
        created_at = excluded.created_at, settled_at = excluded.settled_at, answer = excluded.answer,
        inner_call = excluded.inner_call, journal = excluded.journal, applied_by = excluded.applied_by`,
    /** The applier's compare-and-set: of two runs, the second finds it set. */
    claimAction: `UPDATE ${s}.pending_actions SET applied_by = $2 WHERE id = $1 AND applied_by IS NULL
      RETURNING id`,
    /**
     * The compare-and-set. Of two connections settling one action, the second waits for the first's row lock,
     * then finds the status changed and updates nothing.
     */
    settleAction: `UPDATE ${s}.pending_actions SET status = $3,
        answer = CASE WHEN $4::boolean THEN $5::json ELSE answer END,
        settled_at = CASE WHEN $6::boolean THEN $7::double precision ELSE settled_at END
      WHERE id = $1 AND status = $2 RETURNING ${actionColumns}`,

    upsertLease: `INSERT INTO ${s}.leases (${leaseColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (capability, lifetime, key) DO UPDATE SET resource_id = excluded.resource_id,
        meta = excluded.meta, created_at = excluded.created_at, last_used_at = excluded.last_used_at,
        owner_id = excluded.owner_id, handover_to = excluded.handover_to`,
    listLeases: `SELECT ${leaseColumns} FROM ${s}.leases WHERE ($1::text IS NULL OR capability = $1)
      AND ($2::text IS NULL OR lifetime = $2) AND ($3::text IS NULL OR key = $3) ORDER BY created_at, ordinal`,
    touchLease: `UPDATE ${s}.leases SET last_used_at = $1 WHERE capability = $2 AND lifetime = $3 AND key = $4`,
    deleteLease: `DELETE FROM ${s}.leases WHERE capability = $1 AND lifetime = $2 AND key = $3`,
    /** The owner compare-and-set (`IS NOT DISTINCT FROM`: a NULL owner matches a NULL `from`). */
    claimLease: `UPDATE ${s}.leases SET owner_id = $5, handover_to = NULL
      WHERE capability = $1 AND lifetime = $2 AND key = $3 AND owner_id IS NOT DISTINCT FROM $4::text
      RETURNING key`,
    requestHandover: `UPDATE ${s}.leases SET handover_to = $5
      WHERE capability = $1 AND lifetime = $2 AND key = $3 AND owner_id IS NOT DISTINCT FROM $4::text
      RETURNING key`,

    upsertOwner: `INSERT INTO ${s}.owners (${ownerColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (owner_id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
        started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, boot_id = excluded.boot_id,
        pid_namespace = excluded.pid_namespace, process_start_ticks = excluded.process_start_ticks`,
    listOwners: `SELECT ${ownerColumns} FROM ${s}.owners ORDER BY started_at, owner_id`,
    deleteOwner: `DELETE FROM ${s}.owners WHERE owner_id = $1`,

    /**
     * Takes the lease when there is none or it lapsed, in one statement: the row as it stands afterwards, with
     * whether this statement took it. (Of two connections taking a lapsed lease, the second waits for the first's
     * row lock, then finds it unexpired.)
     */
    acquireThreadLease: `WITH taken AS (
        INSERT INTO ${s}.thread_leases (${threadLeaseColumns})
          VALUES ($1, $2, $3, ${now} + $4::double precision)
        ON CONFLICT (thread_id) DO UPDATE SET run_id = excluded.run_id, owner_id = excluded.owner_id,
          expires_at = excluded.expires_at
          WHERE thread_leases.expires_at <= ${now}
        RETURNING ${threadLeaseColumns})
      SELECT ${threadLeaseColumns}, true AS acquired FROM taken
      UNION ALL
      SELECT ${threadLeaseColumns}, false AS acquired FROM ${s}.thread_leases
        WHERE thread_id = $1 AND NOT EXISTS (SELECT 1 FROM taken)`,
    renewThreadLeases: `UPDATE ${s}.thread_leases SET expires_at = ${now} + $2::double precision
      WHERE owner_id = $1 AND expires_at > ${now} RETURNING ${threadLeaseColumns}`,
    /** Wakes the run's followers in every process: the run is over (or its thread was taken from it). */
    releaseThreadLease: `WITH released AS (
        DELETE FROM ${s}.thread_leases WHERE thread_id = $1 AND run_id = $2 RETURNING run_id)
      SELECT pg_notify('${RUN_CHANNEL}', $3::text) FROM released`,
    /** Every lease of the owner, each run's followers told (`$2` is the notice's prefix: the schema). */
    releaseOwnerThreadLeases: `WITH released AS (
        DELETE FROM ${s}.thread_leases WHERE owner_id = $1 RETURNING run_id)
      SELECT pg_notify('${RUN_CHANNEL}', $2::text || run_id) FROM released`,
    getThreadLease: `SELECT ${threadLeaseColumns} FROM ${s}.thread_leases
      WHERE thread_id = $1 AND expires_at > ${now}`,

    /** The chunks and the notification that wakes the run's followers go in one statement. */
    appendRunChunks: `WITH written AS (
        INSERT INTO ${s}.run_chunks (${runChunkColumns})
          SELECT $1, $2::integer + (ordinality - 1)::integer, value
          FROM json_array_elements($3::json) WITH ORDINALITY
        ON CONFLICT (run_id, seq) DO NOTHING)
      SELECT pg_notify('${RUN_CHANNEL}', $4::text)`,
    listRunChunks: `SELECT ${runChunkColumns} FROM ${s}.run_chunks WHERE run_id = $1 AND seq > $2
      ORDER BY seq`,
    /** The chunks and the stop requests of runs that ended, in one statement. */
    pruneRunChunks: `WITH
        ended AS (SELECT id FROM ${s}.runs WHERE status <> 'running' AND ended_at < $1),
        stop_requests AS (DELETE FROM ${s}.run_stop_requests WHERE run_id IN (SELECT id FROM ended))
      DELETE FROM ${s}.run_chunks WHERE run_id IN (SELECT id FROM ended)`,
    /**
     * Recorded only while the run is running (the run's row is read in the statement); a second request keeps the
     * first's time and is returned too.
     */
    requestRunStop: `INSERT INTO ${s}.run_stop_requests (run_id, requested_at)
        SELECT id, $2 FROM ${s}.runs WHERE id = $1 AND status = 'running'
      ON CONFLICT (run_id) DO UPDATE SET requested_at = run_stop_requests.requested_at
      RETURNING run_id`,
    listRunStopRequests: `SELECT run_id FROM ${s}.run_stop_requests WHERE run_id = ANY($1::text[])`,
  };
}
