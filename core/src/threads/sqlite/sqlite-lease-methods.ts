import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { leaseColumns, leaseFromRow, leaseToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's capability leases and their handovers between owners. */
export function sqliteLeaseMethods(connection: SqliteConnection): ThreadStoreParts["leases"] {
  const { use } = connection;
  const s = prepareLeaseStatements(connection.db);
  return {
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
  };
}

function prepareLeaseStatements(db: DatabaseSync) {
  return {
    upsertLease: db.prepare(
      `INSERT INTO leases (${leaseColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (capability, lifetime, key) DO UPDATE SET
         resource_id = excluded.resource_id, meta = excluded.meta, created_at = excluded.created_at,
         last_used_at = excluded.last_used_at, owner_id = excluded.owner_id, handover_to = excluded.handover_to`,
    ),
    listLeases: db.prepare(
      `SELECT ${leaseColumns} FROM leases WHERE (?1 IS NULL OR capability = ?1)
         AND (?2 IS NULL OR lifetime = ?2) AND (?3 IS NULL OR key = ?3) ORDER BY created_at, rowid`,
    ),
    touchLease: db.prepare(
      "UPDATE leases SET last_used_at = ? WHERE capability = ? AND lifetime = ? AND key = ?",
    ),
    deleteLease: db.prepare("DELETE FROM leases WHERE capability = ? AND lifetime = ? AND key = ?"),
    /** The owner compare-and-set (`IS`: a NULL owner matches a NULL `from`). */
    claimLease: db.prepare(
      `UPDATE leases SET owner_id = ?1, handover_to = NULL
       WHERE capability = ?2 AND lifetime = ?3 AND key = ?4 AND owner_id IS ?5`,
    ),
    requestHandover: db.prepare(
      `UPDATE leases SET handover_to = ?1
       WHERE capability = ?2 AND lifetime = ?3 AND key = ?4 AND owner_id IS ?5`,
    ),
  } satisfies Record<string, StatementSync>;
}
