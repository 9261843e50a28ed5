import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { ownerColumns, ownerFromRow, ownerToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's owners: the runtime processes sharing the file, and their heartbeats. */
export function sqliteOwnerMethods(connection: SqliteConnection): ThreadStoreParts["owners"] {
  const { use } = connection;
  const s = prepareOwnerStatements(connection.db);
  return {
    heartbeatOwner: (input) =>
      use("write", () => {
        const owner = parseStoreInput(schemas.owner, input, "owner");
        s.upsertOwner.run(...ownerToRow(owner));
      }),

    listOwners: () => use("read", () => s.listOwners.all().map(ownerFromRow)),

    removeOwner: (ownerId) =>
      use("write", () => {
        s.deleteOwner.run(ownerId);
      }),
  };
}

function prepareOwnerStatements(db: DatabaseSync) {
  return {
    upsertOwner: db.prepare(
      `INSERT INTO owners (${ownerColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner_id) DO UPDATE SET
         host = excluded.host, pid = excluded.pid, started_at = excluded.started_at,
         heartbeat_at = excluded.heartbeat_at, boot_id = excluded.boot_id, pid_namespace = excluded.pid_namespace,
         process_start_ticks = excluded.process_start_ticks`,
    ),
    listOwners: db.prepare(`SELECT ${ownerColumns} FROM owners ORDER BY started_at, owner_id`),
    deleteOwner: db.prepare("DELETE FROM owners WHERE owner_id = ?"),
  } satisfies Record<string, StatementSync>;
}
