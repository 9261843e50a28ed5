import type { UIMessage } from "ai";
import type { StoppedProcess } from "../checkpoints/checkpoint-blob-store.ts";

/** A conversation. `ownerKey` is the identity key that created it (HTTP ownership checks use it). */
export interface ThreadRecord {
  id: string;
  agentId: string;
  ownerKey: string;
  title?: string | undefined;
  createdAt: number;
  updatedAt: number;
}

/**
 * How a run ended, or `running` while it goes on. `interrupted`: the process running it died (its owner stopped
 * heartbeating); a live process marked it so and closed its open tool calls.
 */
export type RunStatus = "running" | "completed" | "suspended" | "cancelled" | "failed" | "interrupted";

export interface RunRecord {
  id: string;
  threadId: string;
  agentId: string;
  status: RunStatus;
  /** The runtime process (owner) that ran it; absent on runs recorded before owners existed. */
  ownerId?: string | undefined;
  startedAt: number;
  endedAt?: number | undefined;
  /** Redacted error message when `status` is `failed`. */
  error?: string | undefined;
  /** What the run did when it ran no agent but rewound the thread or started it as a fork (see {@link RunRewind}). */
  rewind?: RunRewind | undefined;
}

/**
 * A rewind as its thread's history records it (on the run of the rewind, status `completed`): `rewindThread`, and the
 * rewind an edit or a regeneration starts with; or a fork's start, on the new thread's first run.
 */
export interface RunRewind {
  kind: "rewind" | "fork";
  /** The thread's last message afterwards (`null`: none is left); of a fork, the message it was forked at. */
  toMessageId: string | null;
  /** How many messages were dropped; of a fork, how many of the original's it left out. */
  droppedCount: number;
  /** Of a fork: the thread it was forked from. */
  forkedFrom?: string | undefined;
  /** The programs stopped in the thread's resources before they were restored. */
  stoppedProcesses: StoppedProcess[];
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

/** How an inner call settled, as its top-level call's journal keeps it. */
export type JournalOutcome =
  | { type: "output"; output: unknown }
  /** `code`: why, when known (`DENIED`, `CANCELLED`, or the tool's own `ctx.fail` code). */
  | { type: "error"; message: string; code?: string | undefined };

/** A subagent run's wait that a pending action of its parent thread stands for. */
export interface SubagentWait {
  agentId: string;
  /** The subagent's own thread, suspended. */
  threadId: string;
  /** The pending action on that thread the answer is passed on to. */
  actionId: string;
}

/**
 * One call in a top-level tool call's journal: a nested tool (`ctx.tools.x`), a subagent run (`ctx.agents.run`) or
 * a code-mode program's tool call, or (`key` `""`) the top-level call itself. `key` is where the call sits: its
 * index among its caller's calls, from the top-level call down (`"0"`, `"0.2"`). When the top-level call resumes,
 * its `execute` runs again and every call that finds its entry is answered from it instead of running again.
 */
export type JournalEntry = {
  key: string;
  /** The tool id (`agent:<agentId>` for a subagent run). */
  toolId: string;
  /** Hash of the call's input: a run that calls something else at `key` has diverged. */
  inputHash: string;
} & (
  | { state: "settled"; outcome: JournalOutcome }
  | {
      /** It waits for an answer (`suspendHistory`: its earlier payloads). */
      state: "waiting";
      /** The suspension point's name. */
      name: string;
      suspendHistory: unknown[];
      /** Set when a subagent waits: its thread and action. */
      subagent?: SubagentWait | undefined;
    }
  | {
      /** It waited and was answered, and had not settled when the journal was written. */
      state: "answered";
      answer: unknown;
      name: string;
      /** Its suspend payloads, oldest first, the answered one last. */
      suspendHistory: unknown[];
      subagent?: SubagentWait | undefined;
    }
);

/** Where the call that waits sits below the top-level call of a pending action. */
export interface PendingActionInner {
  /**
   * Names from the top-level call down to the call that waits: `["quote", "approve"]` for a nested tool,
   * `["delegate", "writer", "refund"]` for a tool of subagent `writer`.
   */
  path: string[];
  /** Its journal key. */
  key: string;
  /** The tool id and input of the call that waits (the action's `toolId`/`input` are the top-level call's). */
  toolId: string;
  input?: unknown;
}

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
  /**
   * Set when the wait is below the top-level call (a nested tool, a subagent's tool, a code-mode program's tool
   * call); the binding (`toolCallId`, `toolId`, `inputHash`) stays the top-level call's.
   */
  inner?: PendingActionInner | undefined;
  /** The top-level call's journal when it suspended: replayed when it resumes. */
  journal?: JournalEntry[] | undefined;
  /**
   * The run that applied a resume answer (re-entered `execute` with it). Set once, by
   * {@link ThreadStore.claimPendingAction}: a run that dies while applying it is never followed by a second execution.
   */
  appliedBy?: string | undefined;
  /**
   * The W3C `traceparent` of the span of the run that made it (when that run was traced): the run that applies its
   * answer, in whichever process, links its span to it.
   */
  traceParent?: string | undefined;
}

export type CapabilityLifetime = "run" | "thread" | "user" | "process";

/**
 * The thread store's record of a capability lease, shared by processes: a live resource handed out by a capability
 * binding, keyed by (capability, lifetime, key).
 */
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
  /**
   * The runtime process (owner) holding the resource. Only the holder uses, releases or hands it over. Absent on
   * leases recorded before owners existed: they count as a dead owner's.
   */
  ownerId?: string | undefined;
  /** An owner that asked the holder to hand the lease over (cleared by the next {@link ThreadStore.claimLease}). */
  handoverTo?: string | undefined;
}

/**
 * A runtime process, kept alive by heartbeats in the store. An owner whose heartbeat is older than the reader's
 * `ownerTtlMs` (or that removed itself on close) is dead, on any host. One on the reader's own machine and in its pid
 * namespace (same `bootId` and `pidNamespace`) whose process is gone — no process has its `pid`, or the one that has
 * it started at another time than `processStartTicks` — is dead at once.
 */
export interface OwnerRecord {
  ownerId: string;
  /** The host name the process runs on (informational). */
  host: string;
  /** Its process id, in its pid namespace. */
  pid: number;
  startedAt: number;
  /** When the owner last said it is alive (its own clock). */
  heartbeatAt: number;
  /** The boot of the machine it runs on (Linux's `/proc/sys/kernel/random/boot_id`); absent where unknown. */
  bootId?: string | undefined;
  /** Its pid namespace (`readlink /proc/self/ns/pid`, e.g. `pid:[4026531836]`); absent where unknown. */
  pidNamespace?: string | undefined;
  /**
   * When its process started, in clock ticks since the boot (field 22 of `/proc/<pid>/stat`): tells the process
   * from a later one that got the same pid. Absent where unknown.
   */
  processStartTicks?: number | undefined;
}

/**
 * The thread store's run lock, not a capability lease. Which runtime process runs a thread now: one run at a time
 * across every process sharing the store. Taken before
 * a run starts (or an answer is stored), renewed by its holder while the run goes on, released when it ends; a
 * holder that dies stops renewing, and the lease lapses at `expiresAt`.
 */
export interface ThreadLeaseRecord {
  threadId: string;
  /** The run it was taken for (not started yet while an answer is being stored). */
  runId: string;
  /** The runtime process holding it. */
  ownerId: string;
  /** When it lapses unless renewed: milliseconds since the epoch on the store's clock, not the caller's. */
  expiresAt: number;
}

/**
 * A checkpoint of one of a thread's resources (a sandbox's `/workspace`), taken when a run ended: what a rewind to
 * `messageId`, or a fork at it, restores. Its content lives in the runtime's checkpoint blob store, under
 * `manifestDigest`.
 */
export interface CheckpointRecord {
  id: string;
  threadId: string;
  /** The thread's last message when it was taken. */
  messageId: string;
  /** The capability whose resource it holds (`sandbox`). */
  capability: string;
  manifestDigest: string;
  files: number;
  totalBytes: number;
  /** Bytes it added to the blob store: what changed since the checkpoints before it. */
  bytesAdded: number;
  createdAt: number;
}

/** One chunk of a run's UI message stream, stored so that any process sharing the store can follow the run. */
export interface RunChunkRecord {
  runId: string;
  /** 0, 1, 2, … in stream order. */
  seq: number;
  chunk: unknown;
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
  /**
   * Where the checkpoints of this store's threads go when the app names no checkpoint store
   * (`createAgentRuntime({ checkpoints })`): a folder only this store's threads use, since collecting a folder removes
   * every blob this store's checkpoints do not reference. Beside a database file (`<file>-checkpoints`), or under the
   * user's cache folder named by the database for a server's. Absent for a store in memory: its runtime checkpoints
   * into a temporary folder removed when it closes.
   */
  readonly checkpointDirectory?: string;
  getThread(threadId: string): Promise<ThreadRecord | undefined>;
  /** Creates the thread if it does not exist; returns the stored record. */
  ensureThread(thread: ThreadRecord): Promise<ThreadRecord>;
  /**
   * Sets the thread's title (`undefined` clears it), leaving its `updatedAt` as it is; returns the stored record,
   * or `undefined` for a missing thread. The title is the thread's own from then on: {@link commitRun} keeps it.
   */
  setThreadTitle(threadId: string, title: string | undefined): Promise<ThreadRecord | undefined>;
  /** Threads of one owner, newest first. */
  listThreads(query: { ownerKey: string; agentId?: string; limit?: number }): Promise<ThreadRecord[]>;
  /**
   * Deletes the thread and everything recorded on it (messages, runs and their stored chunks and stop requests, tool
   * data, actions, capability leases, its thread lease).
   */
  deleteThread(threadId: string): Promise<void>;

  loadMessages(threadId: string): Promise<UIMessage[]>;

  createRun(run: RunRecord): Promise<void>;
  getRun(runId: string): Promise<RunRecord | undefined>;
  listRuns(threadId: string): Promise<RunRecord[]>;
  updateRun(runId: string, patch: Partial<Omit<RunRecord, "id" | "threadId">>): Promise<void>;
  /** Runs with `status`, oldest first (e.g. `running`, to find the runs of dead owners). */
  listRunsByStatus(status: RunStatus): Promise<RunRecord[]>;
  /**
   * Compare-and-set: applies `patch` only while the run's status is still `expected`; true when this call
   * changed it (so only one process ends a dead owner's run).
   */
  settleRun(
    runId: string,
    expected: RunStatus,
    patch: Pick<RunRecord, "status"> & Partial<Pick<RunRecord, "endedAt" | "error">>,
  ): Promise<boolean>;
  /**
   * Replaces the thread's messages and stores the run's final record in one transaction. It creates the thread
   * when missing; an existing thread keeps its creation time and title (a rename during the run stands).
   */
  commitRun(commit: RunCommit): Promise<void>;
  /**
   * Asks the process running `runId` to stop it: how a stop sent to one process reaches a run another process runs.
   * Recorded only while the run is `running`; true when it is recorded (a second request changes nothing and is true
   * too), false when the run is missing or no longer running.
   */
  requestRunStop(runId: string): Promise<boolean>;
  /** Of `runIds`, those a stop was asked for ({@link requestRunStop}): what the process running them polls. */
  listRunStopRequests(runIds: readonly string[]): Promise<string[]>;

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

  /**
   * Compare-and-set: records that run `runId` applies the action's answer, only while no run has. True when this
   * call recorded it; false when another run has (or the action is missing).
   */
  claimPendingAction(actionId: string, runId: string): Promise<boolean>;

  putLease(lease: LeaseRecord): Promise<void>;
  listLeases(query?: {
    capability?: string;
    lifetime?: CapabilityLifetime;
    key?: string;
  }): Promise<LeaseRecord[]>;
  touchLease(capability: string, lifetime: CapabilityLifetime, key: string, at: number): Promise<void>;
  deleteLease(capability: string, lifetime: CapabilityLifetime, key: string): Promise<void>;
  /** Records a checkpoint of a thread's resource; `deleteThread` removes them with the thread. */
  putCheckpoint(checkpoint: CheckpointRecord): Promise<void>;
  /** A thread's checkpoints, oldest first (by `createdAt`, then `id`). */
  listCheckpoints(threadId: string): Promise<CheckpointRecord[]>;
  /** Deletes the thread's checkpoints named (retention, a rewind that dropped the messages after them). */
  deleteCheckpoints(threadId: string, ids: readonly string[]): Promise<void>;
  /**
   * The manifest digest of every thread's checkpoints, each once (in no particular order): what the checkpoint blob
   * store must keep when it collects.
   */
  listCheckpointDigests(): Promise<string[]>;
  /**
   * Compare-and-set of a lease's owner: sets `ownerId` to `to` (and clears `handoverTo`) only while it is `from`
   * (`undefined`: a lease recorded without an owner). True when this call changed it; false for a missing lease.
   */
  claimLease(
    capability: string,
    lifetime: CapabilityLifetime,
    key: string,
    owners: { from: string | undefined; to: string },
  ): Promise<boolean>;
  /**
   * Asks the holder of a lease to hand it over: sets `handoverTo` to `to` only while the lease's owner is `from`.
   * True when recorded. The holder acts on it (see `claimLease`) when it no longer uses the resource.
   */
  requestLeaseHandover(
    capability: string,
    lifetime: CapabilityLifetime,
    key: string,
    owners: { from: string | undefined; to: string },
  ): Promise<boolean>;

  /**
   * Takes the thread's lease for `runId` by `ownerId` for `ttlMs` (on the store's clock) unless an unexpired lease
   * holds it — this owner's included: a process runs a thread once at a time too. Returns whether this call took
   * it and the lease as it stands.
   */
  acquireThreadLease(request: {
    threadId: string;
    runId: string;
    ownerId: string;
    ttlMs: number;
  }): Promise<{ acquired: boolean; lease: ThreadLeaseRecord }>;
  /** Extends every unexpired thread lease of `ownerId` to `ttlMs` from now; returns the leases it still holds. */
  renewThreadLeases(ownerId: string, ttlMs: number): Promise<ThreadLeaseRecord[]>;
  /** Ends the thread's lease if it is still the one taken for `runId` (otherwise does nothing). */
  releaseThreadLease(threadId: string, runId: string): Promise<void>;
  /** The thread's unexpired lease, if any. */
  getThreadLease(threadId: string): Promise<ThreadLeaseRecord | undefined>;

  /**
   * Stores chunks of a run's stream: `chunks[i]` gets `seq + i`. A chunk already stored under its `seq` is kept
   * (a retried write changes nothing).
   */
  appendRunChunks(batch: { runId: string; seq: number; chunks: unknown[] }): Promise<void>;
  /** A run's stored chunks in stream order, those after `afterSeq` when given. */
  listRunChunks(runId: string, query?: { afterSeq?: number }): Promise<RunChunkRecord[]>;
  /** Deletes the chunks and stop requests of runs that ended (any status but `running`) before `endedBefore`. */
  pruneRunChunks(endedBefore: number): Promise<void>;
  /**
   * Calls `onChange` soon after chunks of `runId` are appended, or a thread lease taken for it is released, by
   * any process — a hint to read again, never the data. Returns the function that stops it. Stores that cannot
   * tell (SQLite) leave it out: readers poll.
   */
  watchRun?(runId: string, onChange: () => void): () => void;

  /** Records that `owner` is alive (insert or update). */
  heartbeatOwner(owner: OwnerRecord): Promise<void>;
  /** Every owner recorded, live or not (liveness is the reader's call: compare `heartbeatAt` with a TTL). */
  listOwners(): Promise<OwnerRecord[]>;
  /**
   * Ends every thread lease `ownerId` holds, whatever its expiry: its process is known to be gone, so its threads
   * take new runs at once instead of when their leases lapse.
   */
  releaseOwnerThreadLeases(ownerId: string): Promise<void>;
  /** Removes an owner (a clean close; also how dead owners are forgotten). */
  removeOwner(ownerId: string): Promise<void>;

  close(): Promise<void>;
}
