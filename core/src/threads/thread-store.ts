import type { UIMessage } from "ai";

/** A conversation. `ownerKey` is the identity key that created it (HTTP ownership checks use it). */
export interface ThreadRecord {
  id: string;
  agentId: string;
  ownerKey: string;
  title?: string | undefined;
  createdAt: number;
  updatedAt: number;
}

/** How a run ended, or `running` while it goes on. */
export type RunStatus = "running" | "completed" | "suspended" | "cancelled" | "failed";

export interface RunRecord {
  id: string;
  threadId: string;
  agentId: string;
  status: RunStatus;
  startedAt: number;
  endedAt?: number | undefined;
  /** Redacted error message when `status` is `failed`. */
  error?: string | undefined;
}

/** One `ctx.data.write(channel, data)`. `seq` orders the writes of a thread. */
export interface ToolDataRecord {
  threadId: string;
  runId: string;
  toolCallId: string;
  toolId: string;
  channel: string;
  seq: number;
  data: unknown;
  createdAt: number;
}

export type PendingActionKind = "suspend" | "client";
export type PendingActionStatus =
  | "pending"
  | "resumed"
  | "succeeded"
  | "denied"
  | "skipped"
  | "cancelled"
  | "failed";

/** A durable wait for a person or a client: a suspended tool call or a client-executed tool call. */
export interface PendingActionRecord {
  id: string;
  threadId: string;
  runId: string;
  toolCallId: string;
  toolId: string;
  toolName: string;
  /** Hash of the tool call's input; answers must name it. */
  inputHash: string;
  input: unknown;
  kind: PendingActionKind;
  /** The suspension point's name (`ctx.suspend(payload, { name })`). */
  name?: string | undefined;
  payload: unknown;
  /** Earlier suspend payloads of this call, oldest first. */
  suspendHistory: unknown[];
  status: PendingActionStatus;
  createdAt: number;
  settledAt?: number | undefined;
  /** The answer that settled it. */
  answer?: unknown;
}

export type CapabilityLifetime = "run" | "thread" | "user" | "process";

/** A live resource handed out by a capability binding, keyed by (capability, lifetime, key). */
export interface LeaseRecord {
  capability: string;
  lifetime: CapabilityLifetime;
  key: string;
  /** The binding's own handle, e.g. a container id. */
  resourceId: string;
  /** Binding-specific data needed to reattach after a restart. */
  meta: Record<string, unknown>;
  createdAt: number;
  lastUsedAt: number;
}

/** Everything a run writes when it ends, committed atomically (all or nothing). */
export interface RunCommit {
  thread: ThreadRecord;
  messages: UIMessage[];
  run: RunRecord;
}

/**
 * Where threads live. Implementations: {@link createMemoryThreadStore} (tests) and
 * {@link createSqliteThreadStore} (embedded default, one file via `node:sqlite`).
 * Every method may throw `PaiError` with `STORE_CORRUPT`, `STORE_UNWRITABLE` or `STORE_CLOSED`.
 */
export interface ThreadStore {
  getThread(threadId: string): Promise<ThreadRecord | undefined>;
  /** Creates the thread if it does not exist; returns the stored record. */
  ensureThread(thread: ThreadRecord): Promise<ThreadRecord>;
  /** Threads of one owner, newest first. */
  listThreads(query: { ownerKey: string; agentId?: string; limit?: number }): Promise<ThreadRecord[]>;
  /** Deletes the thread and everything recorded on it (messages, runs, tool data, actions, leases). */
  deleteThread(threadId: string): Promise<void>;

  loadMessages(threadId: string): Promise<UIMessage[]>;

  createRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  listRuns(threadId: string): Promise<RunRecord[]>;
  updateRun(runId: string, patch: Partial<Omit<RunRecord, "id" | "threadId">>): Promise<void>;
  /** Replaces the thread's messages and stores the run's final record in one transaction. */
  commitRun(commit: RunCommit): Promise<void>;

  /** Appends one tool-data write; `seq` is assigned by the store and returned. */
  appendToolData(record: Omit<ToolDataRecord, "seq">): Promise<ToolDataRecord>;
  listToolData(query: { threadId: string; toolCallId?: string; channel?: string }): Promise<ToolDataRecord[]>;

  putPendingAction(action: PendingActionRecord): Promise<void>;
  getPendingAction(actionId: string): Promise<PendingActionRecord | undefined>;
  listPendingActions(query: {
    threadId?: string;
    status?: PendingActionStatus;
  }): Promise<PendingActionRecord[]>;
  /**
   * Compare-and-set: settles the action only if its status is still `expected`.
   * Returns the record as stored afterwards and whether this call changed it.
   */
  settlePendingAction(
    actionId: string,
    expected: PendingActionStatus,
    patch: Pick<PendingActionRecord, "status"> & Partial<Pick<PendingActionRecord, "answer" | "settledAt">>,
  ): Promise<{ changed: boolean; action: PendingActionRecord | undefined }>;

  putLease(lease: LeaseRecord): Promise<void>;
  listLeases(query?: {
    capability?: string;
    lifetime?: CapabilityLifetime;
    key?: string;
  }): Promise<LeaseRecord[]>;
  touchLease(capability: string, lifetime: CapabilityLifetime, key: string, at: number): Promise<void>;
  deleteLease(capability: string, lifetime: CapabilityLifetime, key: string): Promise<void>;

  close(): Promise<void>;
}
