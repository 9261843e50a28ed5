import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { toolDataColumns, toolDataFromRow, toolDataToRow, toolDataWrittenColumns } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's tool-data writes. */
export function postgresToolDataMethods(connection: PostgresConnection): ThreadStoreParts["toolData"] {
  const { use } = connection;
  const query = connection.statements(toolDataStatements);
  return {
    appendToolData: (input) =>
      use("write", async () => {
        const record = parseStoreInput(schemas.toolData, input, "tool data");
        const [row] = await query("insertToolData", toolDataToRow(record));
        return toolDataFromRow(row!);
      }),

    listToolData: (input) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.toolDataQuery, input, "tool data query");
        const rows = await query("listToolData", [
          filter.threadId,
          filter.toolCallId ?? null,
          filter.channel ?? null,
        ]);
        return rows.map(toolDataFromRow);
      }),
  };
}

/** The statements of {@link postgresToolDataMethods}, for the quoted schema `s`. */
function toolDataStatements(s: string) {
  return {
    insertToolData: `INSERT INTO ${s}.tool_data (${toolDataWrittenColumns})
      VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING ${toolDataColumns}`,
    listToolData: `SELECT ${toolDataColumns} FROM ${s}.tool_data WHERE thread_id = $1
      AND ($2::text IS NULL OR tool_call_id = $2) AND ($3::text IS NULL OR channel = $3) ORDER BY seq`,
  };
}
