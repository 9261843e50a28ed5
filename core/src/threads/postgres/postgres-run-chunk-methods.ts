import { parseStoreInput, storeInputSchemas as schemas, toStoredJson } from "../parse-store-input.ts";
import { runChunkColumns, runChunkFromRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";
import { RUN_CHANNEL } from "./postgres-run-watcher.ts";

/** The Postgres store's stored chunks of runs' streams; each append notifies the run's followers in every process. */
export function postgresRunChunkMethods(connection: PostgresConnection): ThreadStoreParts["runChunks"] {
  const { use } = connection;
  const query = connection.statements(runChunkStatements);
  return {
    appendRunChunks: (input) =>
      use("write", async () => {
        const batch = parseStoreInput(schemas.runChunks, input, "run chunks");
        const text = toStoredJson(batch.chunks, "run chunks") ?? "[]";
        await query("appendRunChunks", [batch.runId, batch.seq, text, connection.noticePrefix + batch.runId]);
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

    watchRun: (runId, onChange) => connection.watch(runId, onChange),
  };
}

/** The statements of {@link postgresRunChunkMethods}, for the quoted schema `s`. */
function runChunkStatements(s: string) {
  return {
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
  };
}
