import { PaiError } from "../../errors/pai-error.ts";
import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { optionalRecord, runColumns, runFromRow, runToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's run records. */
export function postgresRunMethods(connection: PostgresConnection): ThreadStoreParts["runs"] {
  const { use } = connection;
  const query = connection.statements(runStatements);
  return {
    createRun: (input) =>
      use("write", async () => {
        const run = parseStoreInput(schemas.run, input, "run");
        if ((await query("insertRunIfMissing", runToRow(run))).length === 0) {
          throw new PaiError("INVALID_ARGUMENT", `Run ${run.id} already exists`);
        }
      }),

    getRun: (runId) =>
      use("read", async () => optionalRecord((await query("getRun", [runId]))[0], runFromRow)),

    listRuns: (threadId) => use("read", async () => (await query("listRuns", [threadId])).map(runFromRow)),

    updateRun: (runId, input) =>
      use("write", async () => {
        const patch = parseStoreInput(schemas.runPatch, input, "run patch");
        const updated = await query("updateRun", [
          runId,
          patch.agentId ?? null,
          patch.status ?? null,
          patch.startedAt ?? null,
          "endedAt" in input,
          patch.endedAt ?? null,
          "error" in input,
          patch.error ?? null,
        ]);
        if (updated.length === 0) {
          throw new PaiError("UNKNOWN_RUN", `Run ${runId} does not exist`, { details: { runId } });
        }
      }),

    listRunsByStatus: (input) =>
      use("read", async () => {
        const status = parseStoreInput(schemas.runStatus, input, "run status");
        return (await query("listRunsByStatus", [status])).map(runFromRow);
      }),

    settleRun: (runId, expectedInput, input) =>
      use("write", async () => {
        const expected = parseStoreInput(schemas.runStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settleRunPatch, input, "run settle patch");
        const settled = await query("settleRun", [
          runId,
          expected,
          patch.status,
          "endedAt" in input,
          patch.endedAt ?? null,
          "error" in input,
          patch.error ?? null,
        ]);
        return settled.length === 1;
      }),
  };
}

/** The statements of {@link postgresRunMethods}, for the quoted schema `s`. */
function runStatements(s: string) {
  return {
    getRun: `SELECT ${runColumns} FROM ${s}.runs WHERE id = $1`,
    listRuns: `SELECT ${runColumns} FROM ${s}.runs WHERE thread_id = $1 ORDER BY started_at, ordinal`,
    insertRunIfMissing: `INSERT INTO ${s}.runs (${runColumns}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
      ON CONFLICT (id) DO NOTHING RETURNING id`,
    /** A patch in one statement: required fields left out keep their value; optional ones given as undefined clear. */
    updateRun: `UPDATE ${s}.runs SET agent_id = coalesce($2, agent_id), status = coalesce($3, status),
        started_at = coalesce($4, started_at),
        ended_at = CASE WHEN $5::boolean THEN $6::double precision ELSE ended_at END,
        error = CASE WHEN $7::boolean THEN $8::text ELSE error END
      WHERE id = $1 RETURNING id`,
    listRunsByStatus: `SELECT ${runColumns} FROM ${s}.runs WHERE status = $1 ORDER BY started_at, ordinal`,
    /** The compare-and-set of a run's end: of two connections, the second finds the status changed. */
    settleRun: `UPDATE ${s}.runs SET status = $3,
        ended_at = CASE WHEN $4::boolean THEN $5::double precision ELSE ended_at END,
        error = CASE WHEN $6::boolean THEN $7::text ELSE error END
      WHERE id = $1 AND status = $2 RETURNING id`,
  };
}
