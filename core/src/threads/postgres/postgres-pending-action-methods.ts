import { parseStoreInput, storeInputSchemas as schemas, toStoredJson } from "../parse-store-input.ts";
import { actionColumns, actionFromRow, actionToRow, optionalRecord } from "../row-codecs.ts";
import type { PendingActionRecord } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's pending actions and their answers. */
export function postgresPendingActionMethods(
  connection: PostgresConnection,
): ThreadStoreParts["pendingActions"] {
  const { use } = connection;
  const query = connection.statements(pendingActionStatements);
  return {
    putPendingAction: (input) =>
      use("write", async () => {
        const action = parseStoreInput(schemas.pendingAction, input, "pending action");
        await query("upsertAction", actionToRow(action as PendingActionRecord));
      }),

    getPendingAction: (actionId) =>
      use("read", async () => optionalRecord((await query("getAction", [actionId]))[0], actionFromRow)),

    listPendingActions: (input) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.pendingActionQuery, input, "pending action query");
        const rows = await query("listActions", [filter.threadId ?? null, filter.status ?? null]);
        return rows.map(actionFromRow);
      }),

    settlePendingAction: (actionId, expectedInput, input) =>
      use("write", async () => {
        const expected = parseStoreInput(schemas.actionStatus, expectedInput, "expected status");
        const patch = parseStoreInput(schemas.settlePatch, input, "settle patch");
        const [settled] = await query("settleAction", [
          actionId,
          expected,
          patch.status,
          "answer" in input,
          toStoredJson(patch.answer, "answer"),
          "settledAt" in input,
          patch.settledAt ?? null,
        ]);
        if (settled) return { changed: true, action: actionFromRow(settled) };
        // Lost (or nothing to settle): read in a new statement, which sees what the winner committed.
        return {
          changed: false,
          action: optionalRecord((await query("getAction", [actionId]))[0], actionFromRow),
        };
      }),

    claimPendingAction: (actionId, runId) =>
      use("write", async () => {
        const applier = parseStoreInput(schemas.id, runId, "run id");
        return (await query("claimAction", [actionId, applier])).length === 1;
      }),
  };
}

/** The statements of {@link postgresPendingActionMethods}, for the quoted schema `s`. */
function pendingActionStatements(s: string) {
  return {
    getAction: `SELECT ${actionColumns} FROM ${s}.pending_actions WHERE id = $1`,
    listActions: `SELECT ${actionColumns} FROM ${s}.pending_actions
      WHERE ($1::text IS NULL OR thread_id = $1) AND ($2::text IS NULL OR status = $2)
      ORDER BY created_at, ordinal`,
    upsertAction: `INSERT INTO ${s}.pending_actions (${actionColumns})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
      ON CONFLICT (id) DO UPDATE SET thread_id = excluded.thread_id, run_id = excluded.run_id,
        tool_call_id = excluded.tool_call_id, tool_id = excluded.tool_id, tool_name = excluded.tool_name,
        input_hash = excluded.input_hash, input = excluded.input, kind = excluded.kind, name = excluded.name,
        payload = excluded.payload, suspend_history = excluded.suspend_history, status = excluded.status,
        created_at = excluded.created_at, settled_at = excluded.settled_at, answer = excluded.answer,
        inner_call = excluded.inner_call, journal = excluded.journal, applied_by = excluded.applied_by,
        trace_parent = excluded.trace_parent`,
    /** The applier's compare-and-set: of two runs, the second finds it set. */
    claimAction: `UPDATE ${s}.pending_actions SET applied_by = $2 WHERE id = $1 AND applied_by IS NULL
      RETURNING id`,
    /**
     * The compare-and-set. Of two connections settling one action, the second waits for the first's row lock,
     * then finds the status changed and updates nothing.
     */
    settleAction: `UPDATE ${s}.pending_actions SET status = $3,
        answer = CASE WHEN $4::boolean THEN $5::json ELSE answer END,
        settled_at = CASE WHEN $6::boolean THEN $7::double precision ELSE settled_at END
      WHERE id = $1 AND status = $2 RETURNING ${actionColumns}`,
  };
}
