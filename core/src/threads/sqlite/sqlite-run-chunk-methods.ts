import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas, toStoredJson } from "../parse-store-input.ts";
import { runChunkColumns, runChunkFromRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/**
 * The SQLite store's stored chunks of runs' streams. It has no `watchRun`: SQLite cannot tell another process's
 * writes, so readers poll.
 */
export function sqliteRunChunkMethods(connection: SqliteConnection): ThreadStoreParts["runChunks"] {
  const { use, transaction } = connection;
  const s = prepareRunChunkStatements(connection.db);
  return {
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
  };
}

function prepareRunChunkStatements(db: DatabaseSync) {
  return {
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
    pruneStopRequests: db.prepare(
      `DELETE FROM run_stop_requests WHERE run_id IN
         (SELECT id FROM runs WHERE status <> 'running' AND ended_at < ?)`,
    ),
  } satisfies Record<string, StatementSync>;
}
