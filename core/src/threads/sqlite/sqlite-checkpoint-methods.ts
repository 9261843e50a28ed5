import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { checkpointColumns, checkpointFromRow, checkpointToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's checkpoint records of threads' resources. */
export function sqliteCheckpointMethods(connection: SqliteConnection): ThreadStoreParts["checkpoints"] {
  const { use } = connection;
  const s = prepareCheckpointStatements(connection.db);
  return {
    putCheckpoint: (input) =>
      use("write", () => {
        const checkpoint = parseStoreInput(schemas.checkpoint, input, "checkpoint");
        s.upsertCheckpoint.run(...checkpointToRow(checkpoint));
      }),

    listCheckpoints: (threadId) => use("read", () => s.listCheckpoints.all(threadId).map(checkpointFromRow)),

    deleteCheckpoints: (threadId, input) =>
      use("write", () => {
        const ids = parseStoreInput(schemas.checkpointIds, input, "checkpoint ids");
        s.deleteCheckpoints.run(threadId, JSON.stringify(ids));
      }),

    listCheckpointDigests: () =>
      use("read", () => s.listCheckpointDigests.all().map((row) => String(row.manifest_digest))),
  };
}

function prepareCheckpointStatements(db: DatabaseSync) {
  return {
    upsertCheckpoint: db.prepare(
      `INSERT INTO checkpoints (${checkpointColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, message_id = excluded.message_id,
         capability = excluded.capability, manifest_digest = excluded.manifest_digest, files = excluded.files,
         total_bytes = excluded.total_bytes, bytes_added = excluded.bytes_added, created_at = excluded.created_at`,
    ),
    listCheckpoints: db.prepare(
      `SELECT ${checkpointColumns} FROM checkpoints WHERE thread_id = ? ORDER BY created_at, id`,
    ),
    /** Only the thread's own: an id of another thread's checkpoint is left alone. */
    deleteCheckpoints: db.prepare(
      "DELETE FROM checkpoints WHERE thread_id = ? AND id IN (SELECT value FROM json_each(?))",
    ),
    listCheckpointDigests: db.prepare("SELECT DISTINCT manifest_digest FROM checkpoints"),
  } satisfies Record<string, StatementSync>;
}
