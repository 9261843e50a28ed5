import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { optionalRecord, threadLeaseColumns, threadLeaseFromRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's thread leases: one run of a thread at a time across processes. */
export function sqliteThreadLeaseMethods(connection: SqliteConnection): ThreadStoreParts["threadLeases"] {
  const { use, transaction } = connection;
  const s = prepareThreadLeaseStatements(connection.db);
  return {
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

    releaseOwnerThreadLeases: (ownerId) =>
      use("write", () => {
        s.deleteOwnerThreadLeases.run(ownerId);
      }),
  };
}

function prepareThreadLeaseStatements(db: DatabaseSync) {
  /** The store's clock in milliseconds since the epoch. */
  const now = "(unixepoch('subsec') * 1000)";
  return {
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
    deleteOwnerThreadLeases: db.prepare("DELETE FROM thread_leases WHERE owner_id = ?"),
  } satisfies Record<string, StatementSync>;
}
