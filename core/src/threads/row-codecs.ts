import { fromStoredJson, toStoredJson, withoutUndefined } from "./parse-store-input.ts";
import type {
  CapabilityLifetime,
  CheckpointRecord,
  LeaseRecord,
  OwnerRecord,
  PendingActionRecord,
  PendingActionStatus,
  RunChunkRecord,
  RunRecord,
  RunStatus,
  ThreadLeaseRecord,
  ThreadRecord,
  ToolDataRecord,
} from "./thread-store.ts";

// The row ⇄ record codecs of the SQL stores (SQLite and Postgres): their tables have the same columns, in the same
// order, and their drivers hand rows back alike — JSON columns as text (the Postgres store's type parsers keep
// `json` as text, so SQL NULL and JSON `null` stay apart), integers and timestamps as numbers (`int8` parsed to a
// number), NULL as `null`. What differs between the two databases lies in their statements, not here.

/** One column value as the SQL stores write it. */
export type StoredValue = string | number | null;

/** One row as the SQL stores' drivers read it, keyed by column name. */
export type StoredRow = Readonly<Record<string, unknown>>;

/** The columns of a thread, in table order: what {@link threadToRow} gives and {@link threadFromRow} reads. */
export const threadColumns = "id, agent_id, owner_key, title, created_at, updated_at";

/** A thread's values for {@link threadColumns}. */
export function threadToRow(thread: ThreadRecord): StoredValue[] {
  return [
    thread.id,
    thread.agentId,
    thread.ownerKey,
    thread.title ?? null,
    thread.createdAt,
    thread.updatedAt,
  ];
}

/** A thread read back from its row. */
export function threadFromRow(row: StoredRow): ThreadRecord {
  return withoutUndefined({
    id: row.id as string,
    agentId: row.agent_id as string,
    ownerKey: row.owner_key as string,
    title: optional<string>(row.title),
    createdAt: row.created_at as number,
    updatedAt: row.updated_at as number,
  });
}

/** The columns of a run, in table order. */
export const runColumns = "id, thread_id, agent_id, status, started_at, ended_at, error, owner_id, rewind";

/** A run's values for {@link runColumns}. */
export function runToRow(run: RunRecord): StoredValue[] {
  return [
    run.id,
    run.threadId,
    run.agentId,
    run.status,
    run.startedAt,
    run.endedAt ?? null,
    run.error ?? null,
    run.ownerId ?? null,
    run.rewind ? toStoredJson(run.rewind, "run rewind") : null,
  ];
}

/** A run read back from its row. */
export function runFromRow(row: StoredRow): RunRecord {
  return withoutUndefined({
    id: row.id as string,
    threadId: row.thread_id as string,
    agentId: row.agent_id as string,
    status: row.status as RunStatus,
    startedAt: row.started_at as number,
    endedAt: optional<number>(row.ended_at),
    error: optional<string>(row.error),
    ownerId: optional<string>(row.owner_id),
    rewind: fromStoredJson(row.rewind as string | null) as RunRecord["rewind"],
  });
}

/** The columns of a pending action, in table order. */
export const actionColumns =
  "id, thread_id, run_id, tool_call_id, tool_id, tool_name, input_hash, input, kind, name, payload, " +
  "suspend_history, status, created_at, settled_at, answer, inner_call, journal, applied_by, trace_parent";

/** A pending action's values for {@link actionColumns}, JSON as text. */
export function actionToRow(action: PendingActionRecord): StoredValue[] {
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
    action.traceParent ?? null,
  ];
}

/** A pending action read back from its row. */
export function actionFromRow(row: StoredRow): PendingActionRecord {
  return withoutUndefined({
    id: row.id as string,
    threadId: row.thread_id as string,
    runId: row.run_id as string,
    toolCallId: row.tool_call_id as string,
    toolId: row.tool_id as string,
    toolName: row.tool_name as string,
    inputHash: row.input_hash as string,
    input: json(row.input),
    kind: row.kind as PendingActionRecord["kind"],
    name: optional<string>(row.name),
    payload: json(row.payload),
    suspendHistory: json(row.suspend_history) as unknown[],
    status: row.status as PendingActionStatus,
    createdAt: row.created_at as number,
    settledAt: optional<number>(row.settled_at),
    answer: json(row.answer),
    inner: json(row.inner_call) as PendingActionRecord["inner"],
    journal: json(row.journal) as PendingActionRecord["journal"],
    appliedBy: optional<string>(row.applied_by),
    traceParent: optional<string>(row.trace_parent),
  });
}

/** The columns a tool-data write gives, in table order (`seq` is assigned by the table). */
export const toolDataWrittenColumns = "thread_id, run_id, tool_call_id, tool_id, channel, data, created_at";

/** The columns of a stored tool-data record: its `seq`, then {@link toolDataWrittenColumns}. */
export const toolDataColumns = `seq, ${toolDataWrittenColumns}`;

/** A tool-data write's values for {@link toolDataWrittenColumns}, the data as JSON text. */
export function toolDataToRow(
  record: Omit<ToolDataRecord, "seq" | "data"> & { data?: unknown },
): StoredValue[] {
  return [
    record.threadId,
    record.runId,
    record.toolCallId,
    record.toolId,
    record.channel,
    toStoredJson(record.data, "tool data"),
    record.createdAt,
  ];
}

/** A tool-data record read back from its row. */
export function toolDataFromRow(row: StoredRow): ToolDataRecord {
  return withoutUndefined({
    threadId: row.thread_id as string,
    runId: row.run_id as string,
    toolCallId: row.tool_call_id as string,
    toolId: row.tool_id as string,
    channel: row.channel as string,
    seq: row.seq as number,
    data: json(row.data),
    createdAt: row.created_at as number,
  });
}

/** The columns of a checkpoint record, in table order. */
export const checkpointColumns =
  "id, thread_id, message_id, capability, manifest_digest, files, total_bytes, bytes_added, created_at";

/** A checkpoint record's values for {@link checkpointColumns}. */
export function checkpointToRow(checkpoint: CheckpointRecord): StoredValue[] {
  return [
    checkpoint.id,
    checkpoint.threadId,
    checkpoint.messageId,
    checkpoint.capability,
    checkpoint.manifestDigest,
    checkpoint.files,
    checkpoint.totalBytes,
    checkpoint.bytesAdded,
    checkpoint.createdAt,
  ];
}

/** A checkpoint record read back from its row. */
export function checkpointFromRow(row: StoredRow): CheckpointRecord {
  return {
    id: row.id as string,
    threadId: row.thread_id as string,
    messageId: row.message_id as string,
    capability: row.capability as string,
    manifestDigest: row.manifest_digest as string,
    files: row.files as number,
    totalBytes: row.total_bytes as number,
    bytesAdded: row.bytes_added as number,
    createdAt: row.created_at as number,
  };
}

/** The columns of a capability lease, in table order. */
export const leaseColumns =
  "capability, lifetime, key, resource_id, meta, created_at, last_used_at, owner_id, handover_to";

/** A lease's values for {@link leaseColumns}, its meta as JSON text. */
export function leaseToRow(lease: LeaseRecord): StoredValue[] {
  return [
    lease.capability,
    lease.lifetime,
    lease.key,
    lease.resourceId,
    toStoredJson(lease.meta, "lease meta"),
    lease.createdAt,
    lease.lastUsedAt,
    lease.ownerId ?? null,
    lease.handoverTo ?? null,
  ];
}

/** A capability lease read back from its row. */
export function leaseFromRow(row: StoredRow): LeaseRecord {
  return withoutUndefined({
    capability: row.capability as string,
    lifetime: row.lifetime as CapabilityLifetime,
    key: row.key as string,
    resourceId: row.resource_id as string,
    meta: json(row.meta) as Record<string, unknown>,
    createdAt: row.created_at as number,
    lastUsedAt: row.last_used_at as number,
    ownerId: optional<string>(row.owner_id),
    handoverTo: optional<string>(row.handover_to),
  });
}

/** The columns of an owner, in table order. */
export const ownerColumns =
  "owner_id, host, pid, started_at, heartbeat_at, boot_id, pid_namespace, process_start_ticks";

/** An owner's values for {@link ownerColumns}. */
export function ownerToRow(owner: OwnerRecord): StoredValue[] {
  return [
    owner.ownerId,
    owner.host,
    owner.pid,
    owner.startedAt,
    owner.heartbeatAt,
    owner.bootId ?? null,
    owner.pidNamespace ?? null,
    owner.processStartTicks ?? null,
  ];
}

/** An owner read back from its row. */
export function ownerFromRow(row: StoredRow): OwnerRecord {
  return withoutUndefined({
    ownerId: row.owner_id as string,
    host: row.host as string,
    pid: row.pid as number,
    startedAt: row.started_at as number,
    heartbeatAt: row.heartbeat_at as number,
    bootId: optional<string>(row.boot_id),
    pidNamespace: optional<string>(row.pid_namespace),
    processStartTicks: optional<number>(row.process_start_ticks),
  });
}

/** The columns of a thread lease, in table order (the stores compute `expires_at` on their own clock). */
export const threadLeaseColumns = "thread_id, run_id, owner_id, expires_at";

/** A thread lease read back from its row. */
export function threadLeaseFromRow(row: StoredRow): ThreadLeaseRecord {
  return {
    threadId: row.thread_id as string,
    runId: row.run_id as string,
    ownerId: row.owner_id as string,
    expiresAt: row.expires_at as number,
  };
}

/** The columns of a stored chunk of a run's stream. */
export const runChunkColumns = "run_id, seq, chunk";

/** A chunk of a run's stream read back from its row. */
export function runChunkFromRow(row: StoredRow): RunChunkRecord {
  return { runId: row.run_id as string, seq: row.seq as number, chunk: json(row.chunk) };
}

/** The record `fromRow` reads from `row`, or `undefined` when there is no row. */
export function optionalRecord<RECORD>(
  row: StoredRow | undefined,
  fromRow: (row: StoredRow) => RECORD,
): RECORD | undefined {
  return row === undefined ? undefined : fromRow(row);
}

/** A nullable column: SQL NULL is a missing key. */
function optional<VALUE>(value: unknown): VALUE | undefined {
  return value === null ? undefined : (value as VALUE);
}

/** A JSON column: text, or NULL for no value. */
function json(value: unknown): unknown {
  return fromStoredJson(value as string | null);
}
