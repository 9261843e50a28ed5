import type { DatabaseSync, StatementSync } from "node:sqlite";
import { PaiError } from "../../errors/pai-error.ts";
import { applyRunPatch, parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import { optionalRecord, runColumns, runFromRow, runToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's run records. */
export function sqliteRunMethods(connection: SqliteConnection): ThreadStoreParts["runs"] {
  const { use, transaction } = connection;
  const s = prepareRunStatements(connection.db);
  return {
    createRun: (input) =>
      use("write", () => {
        const run = parseStoreInput(schemas.run, input, "run");
        if (s.insertRunIfMissing.run(...runToRow(run)).changes === 0) {
          throw new PaiError("INVALID_ARGUMENT", `Run ${run.id} already exists`);
        }
      }),

    getRun: (runId) => use("read", () => optionalRecord(s.getRun.get(runId), runFromRow)),

    listRuns: (threadId) => use("read", () => s.listRuns.all(threadId).map(runFromRow)),

    updateRun: (runId, input) =>
      use("write", () => {
        const patch = parseStoreInput(schemas.runPatch, input, "run patch");
        transaction(() => {
          const run = optionalRecord(s.getRun.get(runId), runFromRow);
          if (!run) throw new PaiError("UNKNOWN_RUN", `Run ${runId} does not exist`, { details: { runId } });
          s.upsertRun.run(...runToRow(applyRunPatch(run, patch, input)));
        });
      }),

    listRunsByStatus: (input) =>
      use("read", () => {
        const status = parseStoreInput(schemas.runStatus, input, "run status");
        return s.listRunsByStatus.all(status).map(runFromRow);
      }),

    settleRun: (runId, expectedInput, input) =>
      use("write", () => {
        const expected = parseStoreInput(schemas.runStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settleRunPatch, input, "run settle patch");
        return (
          s.settleRun.run(
            patch.status,
            "endedAt" in input ? 1 : 0,
            patch.endedAt ?? null,
            "error" in input ? 1 : 0,
            patch.error ?? null,
            runId,
            expected,
          ).changes === 1
        );
      }),
  };
}

/** Stores a run whole, inserted or replacing every column: how `updateRun` and `commitRun` write one. */
export function prepareRunUpsert(db: DatabaseSync): StatementSync {
  return db.prepare(
    `INSERT INTO runs (${runColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
       thread_id = excluded.thread_id, agent_id = excluded.agent_id, status = excluded.status,
       started_at = excluded.started_at, ended_at = excluded.ended_at, error = excluded.error,
       owner_id = excluded.owner_id, rewind = excluded.rewind`,
  );
}

function prepareRunStatements(db: DatabaseSync) {
  return {
    getRun: db.prepare(`SELECT ${runColumns} FROM runs WHERE id = ?`),
    listRuns: db.prepare(`SELECT ${runColumns} FROM runs WHERE thread_id = ? ORDER BY started_at, rowid`),
    insertRunIfMissing: db.prepare(
      `INSERT INTO runs (${runColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    upsertRun: prepareRunUpsert(db),
    listRunsByStatus: db.prepare(
      `SELECT ${runColumns} FROM runs WHERE status = ? ORDER BY started_at, rowid`,
    ),
    /** The compare-and-set: changes the run only while its status is still the expected one. */
    settleRun: db.prepare(
      `UPDATE runs SET status = ?1,
         ended_at = CASE WHEN ?2 THEN ?3 ELSE ended_at END,
         error = CASE WHEN ?4 THEN ?5 ELSE error END
       WHERE id = ?6 AND status = ?7`,
    ),
  } satisfies Record<string, StatementSync>;
}
