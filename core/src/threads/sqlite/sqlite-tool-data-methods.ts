import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { toolDataColumns, toolDataFromRow, toolDataToRow, toolDataWrittenColumns } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's tool-data writes. */
export function sqliteToolDataMethods(connection: SqliteConnection): ThreadStoreParts["toolData"] {
  const { use } = connection;
  const s = prepareToolDataStatements(connection.db);
  return {
    appendToolData: (input) =>
      use("write", () => {
        const record = parseStoreInput(schemas.toolData, input, "tool data");
        return toolDataFromRow(s.insertToolData.get(...toolDataToRow(record))!);
      }),

    listToolData: (input) =>
      use("read", () => {
        const query = parseStoreInput(schemas.toolDataQuery, input, "tool data query");
        return s.listToolData
          .all(query.threadId, query.toolCallId ?? null, query.channel ?? null)
          .map(toolDataFromRow);
      }),
  };
}

function prepareToolDataStatements(db: DatabaseSync) {
  return {
    insertToolData: db.prepare(
      `INSERT INTO tool_data (${toolDataWrittenColumns})
         VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING ${toolDataColumns}`,
    ),
    listToolData: db.prepare(
      `SELECT ${toolDataColumns} FROM tool_data WHERE thread_id = ?1
         AND (?2 IS NULL OR tool_call_id = ?2) AND (?3 IS NULL OR channel = ?3) ORDER BY seq`,
    ),
  } satisfies Record<string, StatementSync>;
}
