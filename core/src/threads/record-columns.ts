import { toStoredJson } from "./parse-store-input.ts";
import type { PendingActionRecord, RunRecord, ThreadRecord } from "./thread-store.ts";

/** One column value as the SQL stores (SQLite and Postgres) write it. */
export type StoredValue = string | number | null;

/** A thread's columns, in the order of the stores' thread tables. */
export function threadValues(thread: ThreadRecord): StoredValue[] {
  return [
    thread.id,
    thread.agentId,
    thread.ownerKey,
    thread.title ?? null,
    thread.createdAt,
    thread.updatedAt,
  ];
}

/** A run's columns, in the order of the stores' run tables. */
export function runValues(run: RunRecord): StoredValue[] {
  return [
    run.id,
    run.threadId,
    run.agentId,
    run.status,
    run.startedAt,
    run.endedAt ?? null,
    run.error ?? null,
    run.ownerId ?? null,
  ];
}

/** A pending action's columns (JSON as text), in the order of the stores' pending-action tables. */
export function actionValues(action: PendingActionRecord): StoredValue[] {
  return [
    action.id,
    action.threadId,
    action.runId,
    action.toolCallId,
    action.toolId,
    action.toolName,
    action.inputHash,
    toStoredJson(action.input, "pending action input"),
    action.kind,
    action.name ?? null,
    toStoredJson(action.payload, "pending action payload"),
    toStoredJson(action.suspendHistory, "pending action suspendHistory"),
    action.status,
    action.createdAt,
    action.settledAt ?? null,
    toStoredJson(action.answer, "pending action answer"),
    toStoredJson(action.inner, "pending action inner call"),
    toStoredJson(action.journal, "pending action journal"),
    action.appliedBy ?? null,
  ];
}
