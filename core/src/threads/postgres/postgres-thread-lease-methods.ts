import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { optionalRecord, threadLeaseColumns, threadLeaseFromRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";
import { RUN_CHANNEL } from "./postgres-run-watcher.ts";

/** The Postgres store's thread leases: one run of a thread at a time across processes. */
export function postgresThreadLeaseMethods(connection: PostgresConnection): ThreadStoreParts["threadLeases"] {
  const { use } = connection;
  const query = connection.statements(threadLeaseStatements);
  return {
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
        await query("releaseThreadLease", [threadId, runId, connection.noticePrefix + runId]);
      }),

    getThreadLease: (threadId) =>
      use("read", async () =>
        optionalRecord((await query("getThreadLease", [threadId]))[0], threadLeaseFromRow),
      ),

    releaseOwnerThreadLeases: (ownerId) =>
      use("write", async () => {
        await query("releaseOwnerThreadLeases", [ownerId, connection.noticePrefix]);
      }),
  };
}

/** The statements of {@link postgresThreadLeaseMethods}, for the quoted schema `s`. */
function threadLeaseStatements(s: string) {
  /** The server's clock in milliseconds since the epoch: every process reads lease expiry on the same clock. */
  const now = "(extract(epoch FROM clock_timestamp()) * 1000)::double precision";
  return {
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
  };
}
