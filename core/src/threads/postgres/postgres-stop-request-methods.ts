import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's stop requests: stops asked for runs another process runs. */
export function postgresStopRequestMethods(connection: PostgresConnection): ThreadStoreParts["stopRequests"] {
  const { use } = connection;
  const query = connection.statements(stopRequestStatements);
  return {
    requestRunStop: (runId) =>
      use("write", async () => (await query("requestRunStop", [runId, Date.now()])).length === 1),

    listRunStopRequests: (input) =>
      use("read", async () => {
        const runIds = parseStoreInput(schemas.runIds, input, "run ids");
        return (await query("listRunStopRequests", [runIds])).map((row) => row.run_id as string);
      }),
  };
}

/** The statements of {@link postgresStopRequestMethods}, for the quoted schema `s`. */
function stopRequestStatements(s: string) {
  return {
    /**
     * Recorded only while the run is running (the run's row is read in the statement); a second request keeps the
     * first's time and is returned too.
     */
    requestRunStop: `INSERT INTO ${s}.run_stop_requests (run_id, requested_at)
        SELECT id, $2 FROM ${s}.runs WHERE id = $1 AND status = 'running'
      ON CONFLICT (run_id) DO UPDATE SET requested_at = run_stop_requests.requested_at
      RETURNING run_id`,
    listRunStopRequests: `SELECT run_id FROM ${s}.run_stop_requests WHERE run_id = ANY($1::text[])`,
  };
}
