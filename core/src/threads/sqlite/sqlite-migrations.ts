import type { DatabaseSync } from "node:sqlite";
import { PaiError } from "../../errors/pai-error.ts";

/** `PRAGMA application_id` of a PAI thread store: "PAI1" in ASCII. */
const APPLICATION_ID = 0x50414931;

/**
 * Schema migrations; `sqliteMigrations[n]` takes the schema from version `n` to `n + 1`. The version lives in
 * `PRAGMA user_version`. Never edit a shipped step: append a new one.
 */
const sqliteMigrations: ReadonlyArray<(db: DatabaseSync) => void> = [
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
  // Checkpoints of threads' resources: what a rewind or a fork restores (the blobs live in the checkpoint store).
  (db) =>
    db.exec(`
      CREATE TABLE checkpoints (
        id TEXT PRIMARY KEY,
        thread_id TEXT NOT NULL,
        message_id TEXT NOT NULL,
        capability TEXT NOT NULL,
        manifest_digest TEXT NOT NULL,
        files INTEGER NOT NULL,
        total_bytes INTEGER NOT NULL,
        bytes_added INTEGER NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX checkpoints_thread_created ON checkpoints (thread_id, created_at, id);
    `),
  // What a rewind did, on its run: the thread's history says it (JSON).
  (db) => db.exec("ALTER TABLE runs ADD COLUMN rewind TEXT;"),
  // The trace context of the run that made a pending action: the run that resumes it links to that run's span.
  (db) => db.exec("ALTER TABLE pending_actions ADD COLUMN trace_parent TEXT;"),
];

/** The schema version this build writes and the newest it reads. */
const SQLITE_SCHEMA_VERSION = sqliteMigrations.length;

/**
 * Refuses, by reading only, a file that is not a PAI thread store (another application's SQLite database) or
 * was written by a newer PAI: `PaiError('STORE_CORRUPT')`, the file left untouched.
 */
export function checkSqliteStore(db: DatabaseSync, location: string): void {
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
  if (version > SQLITE_SCHEMA_VERSION) {
    throw new PaiError(
      "STORE_CORRUPT",
      `${location} is a PAI thread store of schema version ${version}, written by a newer PAI; ` +
        `this version reads up to ${SQLITE_SCHEMA_VERSION}. It was left untouched: upgrade PAI to open it`,
      { details: { ...details, supportedSchemaVersion: SQLITE_SCHEMA_VERSION } },
    );
  }
}

/**
 * Brings the file's schema to {@link SQLITE_SCHEMA_VERSION} in one write transaction, so processes opening it at
 * once migrate it once; a failed step leaves it as it was.
 */
export function migrateSqliteSchema(db: DatabaseSync, location: string): void {
  if (pragmaNumber(db, "user_version") === SQLITE_SCHEMA_VERSION) return;
  db.exec("BEGIN IMMEDIATE");
  try {
    // Read again under the write lock: another process may have migrated meanwhile.
    const version = pragmaNumber(db, "user_version");
    checkVersion(version, location, { path: location, schemaVersion: version });
    for (let step = version; step < SQLITE_SCHEMA_VERSION; step++) sqliteMigrations[step]!(db);
    db.exec(`PRAGMA application_id = ${APPLICATION_ID}`);
    db.exec(`PRAGMA user_version = ${SQLITE_SCHEMA_VERSION}`);
    db.exec("COMMIT");
  } catch (error) {
    if (db.isTransaction) db.exec("ROLLBACK");
    throw error;
  }
}

function pragmaNumber(db: DatabaseSync, name: "user_version" | "application_id"): number {
  return Number(Object.values(db.prepare(`PRAGMA ${name}`).get() ?? {})[0] ?? 0);
}
