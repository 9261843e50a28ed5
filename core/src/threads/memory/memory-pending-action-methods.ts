import {
  asStored,
  parseStoreInput,
  storeInputSchemas as schemas,
  withoutUndefined,
} from "../parse-store-input.ts";
import type { PendingActionRecord } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables } from "./memory-tables.ts";
import { byCreatedAt } from "./record-order.ts";

/** The memory store's pending actions and their answers. */
export function memoryPendingActionMethods(tables: MemoryTables): ThreadStoreParts["pendingActions"] {
  const { actions } = tables;
  return {
    async putPendingAction(input) {
      assertOpen(tables);
      const action = asStored(
        parseStoreInput(schemas.pendingAction, input, "pending action"),
        "pending action",
      );
      actions.set(action.id, action as PendingActionRecord);
    },

    async getPendingAction(actionId) {
      assertOpen(tables);
      return copy(actions.get(actionId));
    },

    async listPendingActions(input) {
      assertOpen(tables);
      const query = parseStoreInput(schemas.pendingActionQuery, input, "pending action query");
      return copy(
        [...actions.values()]
          .filter(
            (action) =>
              (query.threadId === undefined || action.threadId === query.threadId) &&
              (query.status === undefined || action.status === query.status),
          )
          .sort(byCreatedAt),
      );
    },

    async settlePendingAction(actionId, expectedInput, input) {
      assertOpen(tables);
      const expected = parseStoreInput(schemas.actionStatus, expectedInput, "expected status");
      const patch = asStored(parseStoreInput(schemas.settlePatch, input, "settle patch"), "settle patch");
      const action = actions.get(actionId);
      if (!action || action.status !== expected) return { changed: false, action: copy(action) };
      const settled = withoutUndefined({
        ...action,
        status: patch.status,
        answer: "answer" in input ? patch.answer : action.answer,
        settledAt: "settledAt" in input ? patch.settledAt : action.settledAt,
      });
      actions.set(actionId, settled);
      return { changed: true, action: copy(settled) };
    },

    async claimPendingAction(actionId, runId) {
      assertOpen(tables);
      const applier = parseStoreInput(schemas.id, runId, "run id");
      const action = actions.get(actionId);
      if (!action || action.appliedBy !== undefined) return false;
      action.appliedBy = applier;
      return true;
    },
  };
}
