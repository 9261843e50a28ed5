import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { ownerColumns, ownerFromRow, ownerToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's owners: the runtime processes sharing the schema, and their heartbeats. */
export function postgresOwnerMethods(connection: PostgresConnection): ThreadStoreParts["owners"] {
  const { use } = connection;
  const query = connection.statements(ownerStatements);
  return {
    heartbeatOwner: (input) =>
      use("write", async () => {
        const owner = parseStoreInput(schemas.owner, input, "owner");
        await query("upsertOwner", ownerToRow(owner));
      }),

    listOwners: () => use("read", async () => (await query("listOwners", [])).map(ownerFromRow)),

    removeOwner: (ownerId) =>
      use("write", async () => {
        await query("deleteOwner", [ownerId]);
      }),
  };
}

/** The statements of {@link postgresOwnerMethods}, for the quoted schema `s`. */
function ownerStatements(s: string) {
  return {
    upsertOwner: `INSERT INTO ${s}.owners (${ownerColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (owner_id) DO UPDATE SET host = excluded.host, pid = excluded.pid,
        started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, boot_id = excluded.boot_id,
        pid_namespace = excluded.pid_namespace, process_start_ticks = excluded.process_start_ticks`,
    listOwners: `SELECT ${ownerColumns} FROM ${s}.owners ORDER BY started_at, owner_id`,
    deleteOwner: `DELETE FROM ${s}.owners WHERE owner_id = $1`,
  };
}
