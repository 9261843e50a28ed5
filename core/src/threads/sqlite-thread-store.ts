import { parseStoreInput, storeInputSchemas as schemas } from "./parse-store-input.ts";
import { sqliteCheckpointMethods } from "./sqlite/sqlite-checkpoint-methods.ts";
import { openSqliteConnection } from "./sqlite/sqlite-connection.ts";
import { sqliteLeaseMethods } from "./sqlite/sqlite-lease-methods.ts";
import { sqliteOwnerMethods } from "./sqlite/sqlite-owner-methods.ts";
import { sqlitePendingActionMethods } from "./sqlite/sqlite-pending-action-methods.ts";
import { sqliteRunChunkMethods } from "./sqlite/sqlite-run-chunk-methods.ts";
import { sqliteRunMethods } from "./sqlite/sqlite-run-methods.ts";
import { sqliteStopRequestMethods } from "./sqlite/sqlite-stop-request-methods.ts";
import { toSqliteStoreError } from "./sqlite/sqlite-store-error.ts";
import { sqliteThreadLeaseMethods } from "./sqlite/sqlite-thread-lease-methods.ts";
import { sqliteThreadMethods } from "./sqlite/sqlite-thread-methods.ts";
import { sqliteToolDataMethods } from "./sqlite/sqlite-tool-data-methods.ts";
import type { ThreadStore } from "./thread-store.ts";

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
  const connection = openSqliteConnection({ path, busyTimeoutMs });
  try {
    // Each part prepares its statements on the open database.
    const store: ThreadStore & AsyncDisposable = {
      ...(connection.location === ":memory:"
        ? {}
        : { checkpointDirectory: `${connection.location}-checkpoints` }),
      ...sqliteThreadMethods(connection),
      ...sqliteRunMethods(connection),
      ...sqliteStopRequestMethods(connection),
      ...sqliteRunChunkMethods(connection),
      ...sqliteToolDataMethods(connection),
      ...sqlitePendingActionMethods(connection),
      ...sqliteCheckpointMethods(connection),
      ...sqliteLeaseMethods(connection),
      ...sqliteThreadLeaseMethods(connection),
      ...sqliteOwnerMethods(connection),
      close: async () => connection.close(),
      [Symbol.asyncDispose]: () => store.close(),
    };
    return store;
  } catch (error) {
    connection.db.close();
    throw toSqliteStoreError(error, connection.location, "open");
  }
}
