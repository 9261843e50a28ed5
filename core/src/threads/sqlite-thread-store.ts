import { existsSync, mkdirSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { StatementSync } from "node:sqlite";
import { DatabaseSync } from "node:sqlite";
import type { UIMessage } from "ai";
import { PaiError } from "../errors/pai-error.ts";
import {
  applyRunPatch,
  fromStoredJson,
  parseStoreInput,
  storeInputSchemas as schemas,
  storeClosedError,
  toStoredJson,
} from "./parse-store-input.ts";
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
  threadColumns,
  threadFromRow,
  threadLeaseColumns,
  threadLeaseFromRow,
  threadToRow,
  toolDataColumns,
  toolDataFromRow,
  toolDataToRow,
  toolDataWrittenColumns,
} from "./row-codecs.ts";
import type { PendingActionRecord, ThreadStore } from "./thread-store.ts";

/** Options of {@link createSqliteThreadStore}. */
export interface SqliteThreadStoreOptions {
  /**
   * The database file. Its parent directory is created when missing. `":memory:"` keeps the store in
   * memory (nothing survives `close()`).
   */
  path: string;
  /**
   * How long a write waits for another connection's lock before it fails with `STORE_UNWRITABLE`.
   * @default 5000
   */
  busyTimeoutMs?: number;
}

/** `PRAGMA application_id` of a PAI thread store: "PAI1" in ASCII. */
const APPLICATION_ID = 0x50414931;
const MEMORY = ":memory:";

/**
 * Schema migrations; `migrations[n]` takes the schema from version `n` to `n + 1`. The version lives in
 * `PRAGMA user_version`. Never edit a shipped step: append a new one.
 */
const migrations: ReadonlyArray<(db: DatabaseSync) => void> = [
  (db) =>
    db.exec(`
      CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        agent_id TEXT NOT NULL,
        owner_key TEXT NOT NULL,
        title TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      );
      CREATE INDEX threads_owner_updated ON threads (owner_key, updated_at);

      CREATE TABLE messages (
        thread_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        message TEXT NOT NULL,
        PRIMARY KEY (thread_id, position)
      ) WITHOUT ROWID;

      CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        ended_at INTEGER,
        error TEXT
      );
      CREATE INDEX runs_thread ON runs (thread_id, started_at);

      CREATE TABLE tool_data (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        thread_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        channel TEXT NOT NULL,
        data TEXT,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX tool_data_thread_call ON tool_data (thread_id, tool_call_id);

      CREATE TABLE pending_actions (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        tool_call_id TEXT NOT NULL,
        tool_id TEXT NOT NULL,
        tool_name TEXT NOT NULL,
        input_hash TEXT NOT NULL,
        input TEXT,
        kind TEXT NOT NULL,
        name TEXT,
        payload TEXT,
        suspend_history TEXT NOT NULL,
        status TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        settled_at INTEGER,
        answer TEXT
      );
      CREATE INDEX pending_actions_thread_status ON pending_actions (thread_id, status);

      CREATE TABLE leases (
        capability TEXT NOT NULL,
        lifetime TEXT NOT NULL,
        key TEXT NOT NULL,
        resource_id TEXT NOT NULL,
        meta TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        last_used_at INTEGER NOT NULL,
        PRIMARY KEY (capability, lifetime, key)
      );
    `),
  // Owners: runs and leases name the runtime process that holds them; owners heartbeat in their own table.
  (db) =>
    db.exec(`
      ALTER TABLE runs ADD COLUMN owner_id TEXT;
      CREATE INDEX runs_status ON runs (status, started_at);
      ALTER TABLE leases ADD COLUMN owner_id TEXT;
      ALTER TABLE leases ADD COLUMN handover_to TEXT;
      CREATE TABLE owners (
        owner_id TEXT PRIMARY KEY,
        host TEXT NOT NULL,
        pid INTEGER NOT NULL,
        started_at INTEGER NOT NULL,
        heartbeat_at INTEGER NOT NULL
      );
    `),
  // Approvals anywhere: the inner call a pending action waits on, and the journal its top-level call replays.
  (db) =>
    db.exec(`
      ALTER TABLE pending_actions ADD COLUMN inner_call TEXT;
      ALTER TABLE pending_actions ADD COLUMN journal TEXT;
    `),
  // Thread leases (one run of a thread at a time across processes), the stored chunks of runs' streams, and the run
  // that applied each answer.
  (db) =>
    db.exec(`
      CREATE TABLE thread_leases (
        thread_id TEXT PRIMARY KEY,
        run_id TEXT NOT NULL,
        owner_id TEXT NOT NULL,
        expires_at REAL NOT NULL
      );
      CREATE INDEX thread_leases_owner ON thread_leases (owner_id);
      CREATE TABLE run_chunks (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        chunk TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
      ) WITHOUT ROWID;
      ALTER TABLE pending_actions ADD COLUMN applied_by TEXT;
    `),
  // Stop requests: a stop sent to one process for a run another process runs.
  (db) =>
    db.exec(`
      CREATE TABLE run_stop_requests (
        run_id TEXT PRIMARY KEY,
        requested_at REAL NOT NULL
      ) WITHOUT ROWID;
    `),
  // Where an owner's process runs, so that a process on the same machine sees at once when it is gone.
  (db) =>
    db.exec(`
      ALTER TABLE owners ADD COLUMN boot_id TEXT;
      ALTER TABLE owners ADD COLUMN pid_namespace TEXT;
      ALTER TABLE owners ADD COLUMN process_start_ticks INTEGER;
    `),
];

/** The schema version this build writes and the newest it reads. */
const SCHEMA_VERSION = migrations.length;

/**
 * Creates the embedded {@link ThreadStore}: one SQLite file through `node:sqlite` (no native addon),
 * in WAL mode so readers never block the writer. Several stores, in one process or many, may open the
 * same file. The file is created, or migrated to the current schema, on open.
 *
 * Opening throws `PaiError`:
 * - `STORE_CORRUPT` when the file is not a PAI thread store (not SQLite, another application's
 *   database) or was written by a newer PAI; the file is left untouched;
 * - `STORE_UNWRITABLE` when the file or its directory cannot be created or written.
 *
 * Every method returns a promise and rejects with `STORE_CLOSED` after `close()`; a write that SQLite
 * refuses (locked past `busyTimeoutMs`, read-only, disk full) rejects with `STORE_UNWRITABLE` and
 * changes nothing.
 *
 * @example
 * ```ts
 * const store = createSqliteThreadStore({ path: ".pai/threads.db" });
 * const messages = await store.loadMessages(threadId);
 * await store.close();
 * ```
 */
export function createSqliteThreadStore(options: SqliteThreadStoreOptions): ThreadStore & AsyncDisposable {
  const path = parseStoreInput(schemas.id, options.path, "path");
  const busyTimeoutMs = parseStoreInput(
    schemas.busyTimeoutMs,
    options.busyTimeoutMs ?? 5000,
    "busyTimeoutMs",
  );
  const location = path === MEMORY ? MEMORY : resolve(path);
  const db = openDatabase(location, busyTimeoutMs);
  let statements: Statements;
  try {
    statements = prepareStatements(db);
  } catch (error) {
    db.close();
    throw toStoreError(error, location, "open");
  }
  const s = statements;
  let closed = false;

  /** Runs `body` against the open database, mapping SQLite failures to `PaiError`. */
  async function use<RESULT>(action: string, body: () => RESULT): Promise<RESULT> {
    if (closed) throw storeClosedError();
    try {
      return body();
    } catch (error) {
      throw toStoreError(error, location, action);
    }
  }

  /** `BEGIN IMMEDIATE … COMMIT`; any failure rolls the whole body back. */
  function transaction<RESULT>(body: () => RESULT): RESULT {
    db.exec("BEGIN IMMEDIATE");
    try {
      const result = body();
      db.exec("COMMIT");
      return result;
    } catch (error) {
      if (db.isTransaction) {
        try {
          db.exec("ROLLBACK");
        } catch {
          // The original error says more; SQLite rolls back on its own when ROLLBACK itself fails.
        }
      }
      throw error;
    }
  }

  const store: ThreadStore & AsyncDisposable = {
    getThread: (threadId) => use("read", () => optionalRecord(s.getThread.get(threadId), threadFromRow)),

    ensureThread: (input) =>
      use("write", () => {
        const thread = parseStoreInput(schemas.thread, input, "thread");
        return transaction(() => {
          s.insertThreadIfMissing.run(...threadToRow(thread));
          return threadFromRow(s.getThread.get(thread.id)!);
        });
      }),

    listThreads: (input) =>
      use("read", () => {
        const query = parseStoreInput(schemas.threadQuery, input, "thread query");
        const rows =
          query.agentId === undefined
            ? s.listThreads.all(query.ownerKey, query.limit ?? -1)
            : s.listThreadsOfAgent.all(query.ownerKey, query.agentId, query.limit ?? -1);
        return rows.map(threadFromRow);
      }),

    deleteThread: (threadId) =>
      use("write", () =>
        transaction(() => {
          s.deleteThreadLeases.run(threadId, threadId);
          s.deleteThreadRunChunks.run(threadId);
          s.deleteThreadStopRequests.run(threadId);
          s.deleteThreadLease.run(threadId);
          s.deleteThreadRuns.run(threadId);
          s.deleteThreadActions.run(threadId);
          s.deleteThreadToolData.run(threadId);
          s.deleteMessages.run(threadId);
          s.deleteThread.run(threadId);
        }),
      ),

    loadMessages: (threadId) =>
      use("read", () =>
        s.loadMessages.all(threadId).map((row) => fromStoredJson(row.message as string) as UIMessage),
      ),

    createRun: (input) =>
      use("write", () => {
        const run = parseStoreInput(schemas.run, input, "run");
        if (s.insertRunIfMissing.run(...runToRow(run)).changes === 0) {
          throw new PaiError("INVALID_ARGUMENT", `Run ${run.id} already exists`);
        }
      }),

    getRun: (runId) => use("read", () => optionalRecord(s.getRun.get(runId), runFromRow)),

    listRuns: (threadId) => use("read", () => s.listRuns.all(threadId).map(runFromRow)),

    updateRun: (runId, input) =>
      use("write", () => {
        const patch = parseStoreInput(schemas.runPatch, input, "run patch");
        transaction(() => {
          const run = optionalRecord(s.getRun.get(runId), runFromRow);
          if (!run) throw new PaiError("UNKNOWN_RUN", `Run ${runId} does not exist`, { details: { runId } });
          s.upsertRun.run(...runToRow(applyRunPatch(run, patch, input)));
        });
      }),

    listRunsByStatus: (input) =>
      use("read", () => {
        const status = parseStoreInput(schemas.runStatus, input, "run status");
        return s.listRunsByStatus.all(status).map(runFromRow);
      }),

    settleRun: (runId, expectedInput, input) =>
      use("write", () => {
        const expected = parseStoreInput(schemas.runStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settleRunPatch, input, "run settle patch");
        return (
          s.settleRun.run(
            patch.status,
            "endedAt" in input ? 1 : 0,
            patch.endedAt ?? null,
            "error" in input ? 1 : 0,
            patch.error ?? null,
            runId,
            expected,
          ).changes === 1
        );
      }),

    requestRunStop: (runId) => use("write", () => s.requestRunStop.run(Date.now(), runId).changes === 1),

    listRunStopRequests: (input) =>
      use("read", () => {
        const runIds = parseStoreInput(schemas.runIds, input, "run ids");
        return s.listRunStopRequests.all(JSON.stringify(runIds)).map((row) => row.run_id as string);
      }),

    commitRun: (input) =>
      use("commit", () => {
        const { thread, messages, run } = parseStoreInput(schemas.runCommit, input, "run commit");
        // Serialize before the transaction: a message JSON cannot hold must not get as far as the file.
        const rows = messages.map((message, position) => toStoredJson(message, `message ${position}`)!);
        transaction(() => {
          s.deleteMessages.run(thread.id);
          for (const [position, message] of rows.entries()) s.insertMessage.run(thread.id, position, message);
          s.upsertThread.run(...threadToRow(thread));
          s.upsertRun.run(...runToRow(run));
        });
      }),

    appendToolData: (input) =>
      use("write", () => {
        const record = parseStoreInput(schemas.toolData, input, "tool data");
        return toolDataFromRow(s.insertToolData.get(...toolDataToRow(record))!);
      }),

    listToolData: (input) =>
      use("read", () => {
        const query = parseStoreInput(schemas.toolDataQuery, input, "tool data query");
        return s.listToolData
          .all(query.threadId, query.toolCallId ?? null, query.channel ?? null)
          .map(toolDataFromRow);
      }),

    putPendingAction: (input) =>
      use("write", () => {
        const action = parseStoreInput(schemas.pendingAction, input, "pending action");
        s.upsertAction.run(...actionToRow(action as PendingActionRecord));
      }),

    getPendingAction: (actionId) =>
      use("read", () => optionalRecord(s.getAction.get(actionId), actionFromRow)),

    listPendingActions: (input) =>
      use("read", () => {
        const query = parseStoreInput(schemas.pendingActionQuery, input, "pending action query");
        return s.listActions.all(query.threadId ?? null, query.status ?? null).map(actionFromRow);
      }),

    settlePendingAction: (actionId, expectedInput, input) =>
      use("write", () => {
        const expected = parseStoreInput(schemas.actionStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settlePatch, input, "settle patch");
        const answer = toStoredJson(patch.answer, "answer");
        return transaction(() => {
          const changed =
            s.settleAction.run(
              patch.status,
              "answer" in input ? 1 : 0,
              answer,
              "settledAt" in input ? 1 : 0,
              patch.settledAt ?? null,
              actionId,
              expected,
            ).changes === 1;
          return { changed, action: optionalRecord(s.getAction.get(actionId), actionFromRow) };
        });
      }),

    claimPendingAction: (actionId, runId) =>
      use("write", () => {
        const applier = parseStoreInput(schemas.id, runId, "run id");
        return s.claimAction.run(applier, actionId).changes === 1;
      }),

    putLease: (input) =>
      use("write", () => {
        const lease = parseStoreInput(schemas.lease, input, "lease");
        s.upsertLease.run(...leaseToRow(lease));
      }),

    listLeases: (input = {}) =>
      use("read", () => {
        const query = parseStoreInput(schemas.leaseQuery, input, "lease query");
        return s.listLeases
          .all(query.capability ?? null, query.lifetime ?? null, query.key ?? null)
          .map(leaseFromRow);
      }),

    touchLease: (capability, lifetime, key, at) =>
      use("write", () => {
        const lastUsedAt = parseStoreInput(schemas.timestamp, at, "lease time");
        s.touchLease.run(lastUsedAt, capability, lifetime, key);
      }),

    deleteLease: (capability, lifetime, key) =>
      use("write", () => {
        s.deleteLease.run(capability, lifetime, key);
      }),

    claimLease: (capability, lifetime, key, input) =>
      use("write", () => {
        const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
        return s.claimLease.run(to, capability, lifetime, key, from ?? null).changes === 1;
      }),

    requestLeaseHandover: (capability, lifetime, key, input) =>
      use("write", () => {
        const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
        return s.requestHandover.run(to, capability, lifetime, key, from ?? null).changes === 1;
      }),

    acquireThreadLease: (input) =>
      use("write", () => {
        const request = parseStoreInput(schemas.threadLeaseRequest, input, "thread lease request");
        return transaction(() => {
          const taken = s.acquireThreadLease.get(
            request.threadId,
            request.runId,
            request.ownerId,
            request.ttlMs,
          );
          if (taken) return { acquired: true, lease: threadLeaseFromRow(taken) };
          return { acquired: false, lease: threadLeaseFromRow(s.getThreadLeaseRow.get(request.threadId)!) };
        });
      }),

    renewThreadLeases: (ownerId, ttlInput) =>
      use("write", () => {
        const ttlMs = parseStoreInput(schemas.ttlMs, ttlInput, "ttlMs");
        return s.renewThreadLeases.all(ttlMs, ownerId).map(threadLeaseFromRow);
      }),

    releaseThreadLease: (threadId, runId) =>
      use("write", () => {
        s.releaseThreadLease.run(threadId, runId);
      }),

    getThreadLease: (threadId) =>
      use("read", () => optionalRecord(s.getLiveThreadLease.get(threadId), threadLeaseFromRow)),

    appendRunChunks: (input) =>
      use("write", () => {
        const batch = parseStoreInput(schemas.runChunks, input, "run chunks");
        const texts = batch.chunks.map((chunk, index) =>
          toStoredJson(chunk, `run chunk ${batch.seq + index}`),
        );
        transaction(() => {
          for (const [index, text] of texts.entries())
            s.insertRunChunk.run(batch.runId, batch.seq + index, text ?? "null");
        });
      }),

    listRunChunks: (runId, input = {}) =>
      use("read", () => {
        const query = parseStoreInput(schemas.runChunkQuery, input, "run chunk query");
        return s.listRunChunks.all(runId, query.afterSeq ?? -1).map(runChunkFromRow);
      }),

    pruneRunChunks: (endedBefore) =>
      use("write", () => {
        const before = parseStoreInput(schemas.timestamp, endedBefore, "endedBefore");
        transaction(() => {
          s.pruneRunChunks.run(before);
          s.pruneStopRequests.run(before);
        });
      }),

    heartbeatOwner: (input) =>
      use("write", () => {
        const owner = parseStoreInput(schemas.owner, input, "owner");
        s.upsertOwner.run(...ownerToRow(owner));
      }),

    releaseOwnerThreadLeases: (ownerId) =>
      use("write", () => {
        s.deleteOwnerThreadLeases.run(ownerId);
      }),

    listOwners: () => use("read", () => s.listOwners.all().map(ownerFromRow)),

    removeOwner: (ownerId) =>
      use("write", () => {
        s.deleteOwner.run(ownerId);
      }),

    async close() {
      if (closed) return;
      closed = true;
      try {
        db.close();
      } catch (error) {
        throw toStoreError(error, location, "close");
      }
    },

    async [Symbol.asyncDispose]() {
      await store.close();
    },
  };
  return store;
}

/** Opens (creating or migrating) the file; never writes to a file that is not a PAI thread store. */
function openDatabase(location: string, busyTimeoutMs: number): DatabaseSync {
  if (location !== MEMORY) {
    try {
      makeDirectory(dirname(location));
    } catch (cause) {
      throw new PaiError(
        "STORE_UNWRITABLE",
        `Cannot create the directory of the thread store ${location}: ${messageOf(cause)}`,
        { cause, details: { path: location } },
      );
    }
  }
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(location, { timeout: busyTimeoutMs });
  } catch (error) {
    throw toStoreError(error, location, "open");
  }
  try {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    // Reads only: a file that is not ours must be refused before anything is written to it.
    checkOwnership(db, location);
    if (location !== MEMORY) db.prepare("PRAGMA journal_mode = WAL").get();
    db.exec("PRAGMA synchronous = NORMAL");
    migrate(db, location);
  } catch (error) {
    db.close();
    throw toStoreError(error, location, "open");
  }
  return db;
}

/**
 * `mkdir -p`, one level at a time. Not `mkdirSync(..., { recursive: true })`: on Node 24 that never
 * returns for a path under `/proc` (each ENOENT makes it retry the parent, which exists).
 */
function makeDirectory(directory: string): void {
  const missing: string[] = [];
  let current = directory;
  while (!existsSync(current)) {
    missing.unshift(current);
    const parent = dirname(current);
    if (parent === current) break;
    current = parent;
  }
  if (!statSync(current).isDirectory()) throw new Error(`${current} is not a directory`);
  for (const path of missing) {
    try {
      mkdirSync(path);
    } catch (error) {
      // Another process may have created it meanwhile.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST" || !statSync(path).isDirectory()) throw error;
    }
  }
}

function checkOwnership(db: DatabaseSync, location: string): void {
  const version = pragmaNumber(db, "user_version");
  const applicationId = pragmaNumber(db, "application_id");
  const hasTables = db.prepare("SELECT 1 FROM sqlite_schema LIMIT 1").get() !== undefined;
  const details = { path: location, applicationId, schemaVersion: version };
  if (applicationId !== APPLICATION_ID && (applicationId !== 0 || version !== 0 || hasTables)) {
    throw new PaiError(
      "STORE_CORRUPT",
      `${location} is not a PAI thread store: it is another application's SQLite database; it was left untouched`,
      { details },
    );
  }
  checkVersion(version, location, details);
}

function checkVersion(version: number, location: string, details: Record<string, unknown>): void {
  if (version > SCHEMA_VERSION) {
    throw new PaiError(
      "STORE_CORRUPT",
      `${location} is a PAI thread store of schema version ${version}, written by a newer PAI; ` +
        `this version reads up to ${SCHEMA_VERSION}. It was left untouched: upgrade PAI to open it`,
      { details: { ...details, supportedSchemaVersion: SCHEMA_VERSION } },
    );
  }
}

function migrate(db: DatabaseSync, location: string): void {
  if (pragmaNumber(db, "user_version") === SCHEMA_VERSION) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    // Read again under the write lock: another process may have migrated meanwhile.
    const version = pragmaNumber(db, "user_version");
    checkVersion(version, location, { path: location, schemaVersion: version });
    for (let step = version; step < SCHEMA_VERSION; step++) migrations[step]!(db);
    db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
    db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

function pragmaNumber(db: DatabaseSync, name: "user_version" | "application_id"): number {
  return Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0] ?? 0);
}

/** SQLite primary result codes that mean the file is not (or no longer) a readable database. */
const CORRUPT_CODES = new Set([11 /* SQLITE_CORRUPT */, 26 /* SQLITE_NOTADB */]);

/** Maps a `node:sqlite` error to `PaiError`; anything else (including a `PaiError`) passes through. */
function toStoreError(error: unknown, location: string, action: string): unknown {
  if (PaiError.isInstance(error)) return error;
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof errcode !== "number") return error;
  const message = messageOf(error);
  const details = { path: location, sqliteCode: errcode };
  if (CORRUPT_CODES.has(errcode & 0xff) || /^no such (table|column)/.test(message)) {
    return new PaiError(
      "STORE_CORRUPT",
      `${location} is not a PAI thread store or is damaged (${message}); it was left untouched`,
      { cause: error, details },
    );
  }
  return new PaiError("STORE_UNWRITABLE", `Cannot ${action} the thread store ${location}: ${message}`, {
    cause: error,
    details,
  });
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function prepareStatements(db: DatabaseSync) {
  /** The store's clock in milliseconds since the epoch. */
  const now = "(unixepoch('subsec') * 1000)";
  const newestFirst = "ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT ?";
  return {
    getThread: db.prepare(`SELECT ${threadColumns} FROM threads WHERE id = ?`),
    insertThreadIfMissing: db.prepare(
      `INSERT INTO threads (${threadColumns}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    upsertThread: db.prepare(
      `INSERT INTO threads (${threadColumns}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
         agent_id = excluded.agent_id, owner_key = excluded.owner_key, title = excluded.title,
         updated_at = excluded.updated_at`,
    ),
    listThreads: db.prepare(`SELECT ${threadColumns} FROM threads WHERE owner_key = ? ${newestFirst}`),
    listThreadsOfAgent: db.prepare(
      `SELECT ${threadColumns} FROM threads WHERE owner_key = ? AND agent_id = ? ${newestFirst}`,
    ),
    deleteThread: db.prepare("DELETE FROM threads WHERE id = ?"),
    deleteThreadLeases: db.prepare(
      `DELETE FROM leases WHERE (lifetime = 'thread' AND key = ?)
         OR (lifetime = 'run' AND key IN (SELECT id FROM runs WHERE thread_id = ?))`,
    ),
    deleteThreadRuns: db.prepare("DELETE FROM runs WHERE thread_id = ?"),
    deleteThreadActions: db.prepare("DELETE FROM pending_actions WHERE thread_id = ?"),
    deleteThreadToolData: db.prepare("DELETE FROM tool_data WHERE thread_id = ?"),

    loadMessages: db.prepare("SELECT message FROM messages WHERE thread_id = ? ORDER BY position"),
    deleteMessages: db.prepare("DELETE FROM messages WHERE thread_id = ?"),
    insertMessage: db.prepare("INSERT INTO messages (thread_id, position, message) VALUES (?, ?, ?)"),

    getRun: db.prepare(`SELECT ${runColumns} FROM runs WHERE id = ?`),
    listRuns: db.prepare(`SELECT ${runColumns} FROM runs WHERE thread_id = ? ORDER BY started_at, rowid`),
    insertRunIfMissing: db.prepare(
      `INSERT INTO runs (${runColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    upsertRun: db.prepare(
      `INSERT INTO runs (${runColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
         thread_id = excluded.thread_id, agent_id = excluded.agent_id, status = excluded.status,
         started_at = excluded.started_at, ended_at = excluded.ended_at, error = excluded.error,
         owner_id = excluded.owner_id`,
    ),
    listRunsByStatus: db.prepare(
      `SELECT ${runColumns} FROM runs WHERE status = ? ORDER BY started_at, rowid`,
    ),
    /** The compare-and-set: changes the run only while its status is still the expected one. */
    settleRun: db.prepare(
      `UPDATE runs SET status = ?1,
         ended_at = CASE WHEN ?2 THEN ?3 ELSE ended_at END,
         error = CASE WHEN ?4 THEN ?5 ELSE error END
       WHERE id = ?6 AND status = ?7`,
    ),

    insertToolData: db.prepare(
      `INSERT INTO tool_data (${toolDataWrittenColumns})
         VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${toolDataColumns}`,
    ),
    listToolData: db.prepare(
      `SELECT ${toolDataColumns} FROM tool_data WHERE thread_id = ?1
         AND (?2 IS NULL OR tool_call_id = ?2) AND (?3 IS NULL OR channel = ?3) ORDER BY seq`,
    ),

    getAction: db.prepare(`SELECT ${actionColumns} FROM pending_actions WHERE id = ?`),
    listActions: db.prepare(
      `SELECT ${actionColumns} FROM pending_actions WHERE (?1 IS NULL OR thread_id = ?1)
         AND (?2 IS NULL OR status = ?2) ORDER BY created_at, rowid`,
    ),
    upsertAction: db.prepare(
      `INSERT INTO pending_actions (${actionColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET
         thread_id = excluded.thread_id, run_id = excluded.run_id, tool_call_id = excluded.tool_call_id,
         tool_id = excluded.tool_id, tool_name = excluded.tool_name, input_hash = excluded.input_hash,
         input = excluded.input, kind = excluded.kind, name = excluded.name, payload = excluded.payload,
         suspend_history = excluded.suspend_history, status = excluded.status,
         created_at = excluded.created_at, settled_at = excluded.settled_at, answer = excluded.answer,
         inner_call = excluded.inner_call, journal = excluded.journal, applied_by = excluded.applied_by`,
    ),
    claimAction: db.prepare("UPDATE pending_actions SET applied_by = ? WHERE id = ? AND applied_by IS NULL"),
    /** The compare-and-set: changes one row only while the status is still the expected one. */
    settleAction: db.prepare(
      `UPDATE pending_actions SET status = ?1,
         answer = CASE WHEN ?2 THEN ?3 ELSE answer END,
         settled_at = CASE WHEN ?4 THEN ?5 ELSE settled_at END
       WHERE id = ?6 AND status = ?7`,
    ),

    upsertLease: db.prepare(
      `INSERT INTO leases (${leaseColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (capability, lifetime, key) DO UPDATE SET
         resource_id = excluded.resource_id, meta = excluded.meta, created_at = excluded.created_at,
         last_used_at = excluded.last_used_at, owner_id = excluded.owner_id, handover_to = excluded.handover_to`,
    ),
    /** The owner compare-and-set (`IS`: a NULL owner matches a NULL `from`). */
    claimLease: db.prepare(
      `UPDATE leases SET owner_id = ?1, handover_to = NULL
       WHERE capability = ?2 AND lifetime = ?3 AND key = ?4 AND owner_id IS ?5`,
    ),
    requestHandover: db.prepare(
      `UPDATE leases SET handover_to = ?1
       WHERE capability = ?2 AND lifetime = ?3 AND key = ?4 AND owner_id IS ?5`,
    ),
    upsertOwner: db.prepare(
      `INSERT INTO owners (${ownerColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner_id) DO UPDATE SET
         host = excluded.host, pid = excluded.pid, started_at = excluded.started_at,
         heartbeat_at = excluded.heartbeat_at, boot_id = excluded.boot_id, pid_namespace = excluded.pid_namespace,
         process_start_ticks = excluded.process_start_ticks`,
    ),
    listOwners: db.prepare(`SELECT ${ownerColumns} FROM owners ORDER BY started_at, owner_id`),

    /** Takes the lease when there is none or it lapsed (`now` is the store's clock: this host's). */
    acquireThreadLease: db.prepare(
      `INSERT INTO thread_leases (${threadLeaseColumns}) VALUES (?1, ?2, ?3, ${now} + ?4)
         ON CONFLICT (thread_id) DO UPDATE SET run_id = excluded.run_id, owner_id = excluded.owner_id,
           expires_at = excluded.expires_at
         WHERE thread_leases.expires_at <= ${now}
       RETURNING ${threadLeaseColumns}`,
    ),
    getThreadLeaseRow: db.prepare(`SELECT ${threadLeaseColumns} FROM thread_leases WHERE thread_id = ?`),
    getLiveThreadLease: db.prepare(
      `SELECT ${threadLeaseColumns} FROM thread_leases WHERE thread_id = ? AND expires_at > ${now}`,
    ),
    renewThreadLeases: db.prepare(
      `UPDATE thread_leases SET expires_at = ${now} + ?1 WHERE owner_id = ?2 AND expires_at > ${now}
       RETURNING ${threadLeaseColumns}`,
    ),
    releaseThreadLease: db.prepare("DELETE FROM thread_leases WHERE thread_id = ? AND run_id = ?"),
    deleteThreadLease: db.prepare("DELETE FROM thread_leases WHERE thread_id = ?"),
    deleteOwnerThreadLeases: db.prepare("DELETE FROM thread_leases WHERE owner_id = ?"),

    insertRunChunk: db.prepare(
      `INSERT INTO run_chunks (${runChunkColumns}) VALUES (?, ?, ?) ON CONFLICT (run_id, seq) DO NOTHING`,
    ),
    listRunChunks: db.prepare(
      `SELECT ${runChunkColumns} FROM run_chunks WHERE run_id = ? AND seq > ? ORDER BY seq`,
    ),
    pruneRunChunks: db.prepare(
      `DELETE FROM run_chunks WHERE run_id IN
         (SELECT id FROM runs WHERE status <> 'running' AND ended_at < ?)`,
    ),
    deleteThreadRunChunks: db.prepare(
      "DELETE FROM run_chunks WHERE run_id IN (SELECT id FROM runs WHERE thread_id = ?)",
    ),
    /** Recorded only while the run is running; a second request keeps the first's time and counts as recorded. */
    requestRunStop: db.prepare(
      `INSERT INTO run_stop_requests (run_id, requested_at) SELECT id, ?1 FROM runs WHERE id = ?2 AND status = 'running'
         ON CONFLICT (run_id) DO UPDATE SET requested_at = run_stop_requests.requested_at`,
    ),
    listRunStopRequests: db.prepare(
      "SELECT run_id FROM run_stop_requests WHERE run_id IN (SELECT value FROM json_each(?))",
    ),
    pruneStopRequests: db.prepare(
      `DELETE FROM run_stop_requests WHERE run_id IN
         (SELECT id FROM runs WHERE status <> 'running' AND ended_at < ?)`,
    ),
    deleteThreadStopRequests: db.prepare(
      "DELETE FROM run_stop_requests WHERE run_id IN (SELECT id FROM runs WHERE thread_id = ?)",
    ),
    deleteOwner: db.prepare("DELETE FROM owners WHERE owner_id = ?"),
    listLeases: db.prepare(
      `SELECT ${leaseColumns} FROM leases WHERE (?1 IS NULL OR capability = ?1)
         AND (?2 IS NULL OR lifetime = ?2) AND (?3 IS NULL OR key = ?3) ORDER BY created_at, rowid`,
    ),
    touchLease: db.prepare(
      "UPDATE leases SET last_used_at = ? WHERE capability = ? AND lifetime = ? AND key = ?",
    ),
    deleteLease: db.prepare("DELETE FROM leases WHERE capability = ? AND lifetime = ? AND key = ?"),
  } satisfies Record<string, StatementSync>;
}

type Statements = ReturnType<typeof prepareStatements>;
