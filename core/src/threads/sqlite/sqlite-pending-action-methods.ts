import type { DatabaseSync, StatementSync } from "node:sqlite";
import { parseStoreInput, storeInputSchemas as schemas, toStoredJson } from "../parse-store-input.ts";
import { actionColumns, actionFromRow, actionToRow, optionalRecord } from "../row-codecs.ts";
import type { PendingActionRecord } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";

/** The SQLite store's pending actions and their answers. */
export function sqlitePendingActionMethods(connection: SqliteConnection): ThreadStoreParts["pendingActions"] {
  const { use, transaction } = connection;
  const s = preparePendingActionStatements(connection.db);
  return {
    putPendingAction: (input) =>
      use("write", () => {
        const action = parseStoreInput(schemas.pendingAction, input, "pending action");
        s.upsertAction.run(...actionToRow(action as PendingActionRecord));
      }),

    getPendingAction: (actionId) =>
      use("read", () => optionalRecord(s.getAction.get(actionId), actionFromRow)),

    listPendingActions: (input) =>
      use("read", () => {
        const query = parseStoreInput(schemas.pendingActionQuery, input, "pending action query");
        return s.listActions.all(query.threadId ?? null, query.status ?? null).map(actionFromRow);
      }),

    settlePendingAction: (actionId, expectedInput, input) =>
      use("write", () => {
        const expected = parseStoreInput(schemas.actionStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settlePatch, input, "settle patch");
        const answer = toStoredJson(patch.answer, "answer");
        return transaction(() => {
          const changed =
            s.settleAction.run(
              patch.status,
              "answer" in input ? 1 : 0,
              answer,
              "settledAt" in input ? 1 : 0,
              patch.settledAt ?? null,
              actionId,
              expected,
            ).changes === 1;
          return { changed, action: optionalRecord(s.getAction.get(actionId), actionFromRow) };
        });
      }),

    claimPendingAction: (actionId, runId) =>
      use("write", () => {
        const applier = parseStoreInput(schemas.id, runId, "run id");
        return s.claimAction.run(applier, actionId).changes === 1;
      }),
  };
}

function preparePendingActionStatements(db: DatabaseSync) {
  return {
    getAction: db.prepare(`SELECT ${actionColumns} FROM pending_actions WHERE id = ?`),
    listActions: db.prepare(
      `SELECT ${actionColumns} FROM pending_actions WHERE (?1 IS NULL OR thread_id = ?1)
         AND (?2 IS NULL OR status = ?2) ORDER BY created_at, rowid`,
    ),
    upsertAction: db.prepare(
      `INSERT INTO pending_actions (${actionColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET
         thread_id = excluded.thread_id, run_id = excluded.run_id, tool_call_id = excluded.tool_call_id,
         tool_id = excluded.tool_id, tool_name = excluded.tool_name, input_hash = excluded.input_hash,
         input = excluded.input, kind = excluded.kind, name = excluded.name, payload = excluded.payload,
         suspend_history = excluded.suspend_history, status = excluded.status,
         created_at = excluded.created_at, settled_at = excluded.settled_at, answer = excluded.answer,
         inner_call = excluded.inner_call, journal = excluded.journal, applied_by = excluded.applied_by,
         trace_parent = excluded.trace_parent`,
    ),
    claimAction: db.prepare("UPDATE pending_actions SET applied_by = ? WHERE id = ? AND applied_by IS NULL"),
    /** The compare-and-set: changes one row only while the status is still the expected one. */
    settleAction: db.prepare(
      `UPDATE pending_actions SET status = ?1,
         answer = CASE WHEN ?2 THEN ?3 ELSE answer END,
         settled_at = CASE WHEN ?4 THEN ?5 ELSE settled_at END
       WHERE id = ?6 AND status = ?7`,
    ),
  } satisfies Record<string, StatementSync>;
}
