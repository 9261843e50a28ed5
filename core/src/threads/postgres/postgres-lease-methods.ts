import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { leaseColumns, leaseFromRow, leaseToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's capability leases and their handovers between owners. */
export function postgresLeaseMethods(connection: PostgresConnection): ThreadStoreParts["leases"] {
  const { use } = connection;
  const query = connection.statements(leaseStatements);
  return {
    putLease: (input) =>
      use("write", async () => {
        const lease = parseStoreInput(schemas.lease, input, "lease");
        await query("upsertLease", leaseToRow(lease));
      }),

    listLeases: (input = {}) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.leaseQuery, input, "lease query");
        const rows = await query("listLeases", [
          filter.capability ?? null,
          filter.lifetime ?? null,
          filter.key ?? null,
        ]);
        return rows.map(leaseFromRow);
      }),

    touchLease: (capability, lifetime, key, at) =>
      use("write", async () => {
        const lastUsedAt = parseStoreInput(schemas.timestamp, at, "lease time");
        await query("touchLease", [lastUsedAt, capability, lifetime, key]);
      }),

    deleteLease: (capability, lifetime, key) =>
      use("write", async () => {
        await query("deleteLease", [capability, lifetime, key]);
      }),

    claimLease: (capability, lifetime, key, input) =>
      use("write", async () => {
        const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
        return (await query("claimLease", [capability, lifetime, key, from ?? null, to])).length === 1;
      }),

    requestLeaseHandover: (capability, lifetime, key, input) =>
      use("write", async () => {
        const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
        return (await query("requestHandover", [capability, lifetime, key, from ?? null, to])).length === 1;
      }),
  };
}

/** The statements of {@link postgresLeaseMethods}, for the quoted schema `s`. */
function leaseStatements(s: string) {
  return {
    upsertLease: `INSERT INTO ${s}.leases (${leaseColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (capability, lifetime, key) DO UPDATE SET resource_id = excluded.resource_id,
        meta = excluded.meta, created_at = excluded.created_at, last_used_at = excluded.last_used_at,
        owner_id = excluded.owner_id, handover_to = excluded.handover_to`,
    listLeases: `SELECT ${leaseColumns} FROM ${s}.leases WHERE ($1::text IS NULL OR capability = $1)
      AND ($2::text IS NULL OR lifetime = $2) AND ($3::text IS NULL OR key = $3) ORDER BY created_at, ordinal`,
    touchLease: `UPDATE ${s}.leases SET last_used_at = $1 WHERE capability = $2 AND lifetime = $3 AND key = $4`,
    deleteLease: `DELETE FROM ${s}.leases WHERE capability = $1 AND lifetime = $2 AND key = $3`,
    /** The owner compare-and-set (`IS NOT DISTINCT FROM`: a NULL owner matches a NULL `from`). */
    claimLease: `UPDATE ${s}.leases SET owner_id = $5, handover_to = NULL
      WHERE capability = $1 AND lifetime = $2 AND key = $3 AND owner_id IS NOT DISTINCT FROM $4::text
      RETURNING key`,
    requestHandover: `UPDATE ${s}.leases SET handover_to = $5
      WHERE capability = $1 AND lifetime = $2 AND key = $3 AND owner_id IS NOT DISTINCT FROM $4::text
      RETURNING key`,
  };
}
