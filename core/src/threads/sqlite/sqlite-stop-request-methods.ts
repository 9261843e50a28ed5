import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's stop requests: stops asked for runs another process runs. */
export function sqliteStopRequestMethods(connection: SqliteConnection): ThreadStoreParts["stopRequests"] {
  const { use } = connection;
  const s = prepareStopRequestStatements(connection.db);
  return {
    requestRunStop: (runId) => use("write", () => s.requestRunStop.run(Date.now(), runId).changes === 1),

    listRunStopRequests: (input) =>
      use("read", () => {
        const runIds = parseStoreInput(schemas.runIds, input, "run ids");
        return s.listRunStopRequests.all(JSON.stringify(runIds)).map((row) => row.run_id as string);
      }),
  };
}

function prepareStopRequestStatements(db: DatabaseSync) {
  return {
    /** Recorded only while the run is running; a second request keeps the first's time and counts as recorded. */
    requestRunStop: db.prepare(
      `INSERT INTO run_stop_requests (run_id, requested_at) SELECT id, ?1 FROM runs WHERE id = ?2 AND status = 'running'
         ON CONFLICT (run_id) DO UPDATE SET requested_at = run_stop_requests.requested_at`,
    ),
    listRunStopRequests: db.prepare(
      "SELECT run_id FROM run_stop_requests WHERE run_id IN (SELECT value FROM json_each(?))",
    ),
  } satisfies Record<string, StatementSync>;
}
