import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { checkpointColumns, checkpointFromRow, checkpointToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's checkpoint records of threads' resources. */
export function postgresCheckpointMethods(connection: PostgresConnection): ThreadStoreParts["checkpoints"] {
  const { use } = connection;
  const query = connection.statements(checkpointStatements);
  return {
    putCheckpoint: (input) =>
      use("write", async () => {
        const checkpoint = parseStoreInput(schemas.checkpoint, input, "checkpoint");
        await query("upsertCheckpoint", checkpointToRow(checkpoint));
      }),

    listCheckpoints: (threadId) =>
      use("read", async () => (await query("listCheckpoints", [threadId])).map(checkpointFromRow)),

    deleteCheckpoints: (threadId, input) =>
      use("write", async () => {
        const ids = parseStoreInput(schemas.checkpointIds, input, "checkpoint ids");
        await query("deleteCheckpoints", [threadId, ids]);
      }),

    listCheckpointDigests: () =>
      use("read", async () =>
        (await query("listCheckpointDigests", [])).map((row) => String(row.manifest_digest)),
      ),
  };
}

/** The statements of {@link postgresCheckpointMethods}, for the quoted schema `s`. */
function checkpointStatements(s: string) {
  return {
    upsertCheckpoint: `INSERT INTO ${s}.checkpoints (${checkpointColumns})
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, message_id = excluded.message_id,
        capability = excluded.capability, manifest_digest = excluded.manifest_digest, files = excluded.files,
        total_bytes = excluded.total_bytes, bytes_added = excluded.bytes_added, created_at = excluded.created_at`,
    listCheckpoints: `SELECT ${checkpointColumns} FROM ${s}.checkpoints WHERE thread_id = $1
      ORDER BY created_at, id`,
    /** Only the thread's own: an id of another thread's checkpoint is left alone. */
    deleteCheckpoints: `DELETE FROM ${s}.checkpoints WHERE thread_id = $1 AND id = ANY($2::text[])`,
    listCheckpointDigests: `SELECT DISTINCT manifest_digest FROM ${s}.checkpoints`,
  };
}
