import { dirname, resolve } from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { PaiError } from "../../errors/pai-error.ts";
import { storeClosedError } from "../parse-store-input.ts";
import { makeDirectory } from "./make-directory.ts";
import { checkSqliteStore, migrateSqliteSchema } from "./sqlite-migrations.ts";
import { errorMessage, toSqliteStoreError } from "./sqlite-store-error.ts";

const MEMORY = ":memory:";

/** The SQLite store's open database, shared by the modules of the store's parts. */
export interface SqliteConnection {
  /** The database the parts prepare their statements on. */
  readonly db: DatabaseSync;
  /** The file as error messages name it (absolute), or `":memory:"`. */
  readonly location: string;
  /**
   * Runs `body` against the open database, mapping SQLite failures to `PaiError`; rejects with `STORE_CLOSED`
   * after {@link SqliteConnection.close}.
   */
  use<RESULT>(action: string, body: () => RESULT): Promise<RESULT>;
  /** `BEGIN IMMEDIATE … COMMIT`; any failure rolls the whole body back. */
  transaction<RESULT>(body: () => RESULT): RESULT;
  /** Closes the database (once: later calls do nothing); a failure is a `PaiError`. */
  close(): void;
}

/**
 * Opens the file at `path` (creating or migrating it; `":memory:"` for a store in memory), never writing to a
 * file that is not a PAI thread store. Throws `PaiError` (`STORE_CORRUPT`, `STORE_UNWRITABLE`) as
 * `createSqliteThreadStore` documents.
 */
export function openSqliteConnection(options: { path: string; busyTimeoutMs: number }): SqliteConnection {
  const location = options.path === MEMORY ? MEMORY : resolve(options.path);
  const db = openDatabase(location, options.busyTimeoutMs);
  let closed = false;
  return {
    db,
    location,
    async use(action, body) {
      if (closed) throw storeClosedError();
      try {
        return body();
      } catch (error) {
        throw toSqliteStoreError(error, location, action);
      }
    },
    transaction(body) {
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
    },
    close() {
      if (closed) return;
      closed = true;
      try {
        db.close();
      } catch (error) {
        throw toSqliteStoreError(error, location, "close");
      }
    },
  };
}

/** Opens (creating or migrating) the file; never writes to a file that is not a PAI thread store. */
function openDatabase(location: string, busyTimeoutMs: number): DatabaseSync {
  if (location !== MEMORY) {
    try {
      makeDirectory(dirname(location));
    } catch (cause) {
      throw new PaiError(
        "STORE_UNWRITABLE",
        `Cannot create the directory of the thread store ${location}: ${errorMessage(cause)}`,
        { cause, details: { path: location } },
      );
    }
  }
  // Loaded here, not imported: importing @pai/core must work on a Node 22 whose node:sqlite still needs a flag.
  const sqlite = process.getBuiltinModule("node:sqlite") as typeof import("node:sqlite") | undefined;
  if (!sqlite) {
    throw new PaiError(
      "STORE_UNWRITABLE",
      `The SQLite thread store needs node:sqlite, which Node ${process.version} does not offer: use Node 22.13 or ` +
        "newer (or run with --experimental-sqlite)",
      { details: { path: location } },
    );
  }
  let db: DatabaseSync;
  try {
    db = new sqlite.DatabaseSync(location, { timeout: busyTimeoutMs });
  } catch (error) {
    throw toSqliteStoreError(error, location, "open");
  }
  try {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    // Reads only: a file that is not ours must be refused before anything is written to it.
    checkSqliteStore(db, location);
    if (location !== MEMORY) useWal(db, busyTimeoutMs);
    db.exec("PRAGMA synchronous = NORMAL");
    migrateSqliteSchema(db, location);
  } catch (error) {
    db.close();
    throw toSqliteStoreError(error, location, "open");
  }
  return db;
}

/** SQLite's result code for a file another connection holds locked (`SQLITE_BUSY`, and its extended codes). */
const SQLITE_BUSY = 5;

/**
 * Puts the file in WAL mode (kept in the file: a no-op once any process did it). While other processes open the same
 * new file, the switch can answer "database is locked" at once, without waiting on the busy timeout as statements
 * do: it is tried again, with short pauses, until the busy timeout has passed.
 */
function useWal(db: DatabaseSync, busyTimeoutMs: number): void {
  const deadline = Date.now() + busyTimeoutMs;
  for (let pauseMs = 1; ; pauseMs = Math.min(pauseMs * 2, 50)) {
    try {
      db.prepare("PRAGMA journal_mode = WAL").get();
      return;
    } catch (error) {
      const code = (error as { errcode?: unknown }).errcode;
      if (typeof code !== "number" || (code & 0xff) !== SQLITE_BUSY || Date.now() >= deadline) throw error;
    }
    // The store opens synchronously (DatabaseSync): the pause blocks this thread, as a busy timeout would.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pauseMs);
  }
}
