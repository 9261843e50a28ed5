import type { ThreadStore } from "./thread-store.ts";

/**
 * The {@link ThreadStore}'s methods by concern. Each store implements each part in a module of its own (the runs
 * in `sqlite/sqlite-run-methods.ts`, `postgres/postgres-run-methods.ts` and `memory/memory-run-methods.ts`, and
 * so on) and its `create*ThreadStore` composes them.
 */
export interface ThreadStoreParts {
  /** Threads, their messages, and the commit that ends a run. */
  threads: Pick<
    ThreadStore,
    | "getThread"
    | "ensureThread"
    | "setThreadTitle"
    | "listThreads"
    | "deleteThread"
    | "loadMessages"
    | "commitRun"
  >;
  /** Run records. */
  runs: Pick<
    ThreadStore,
    "createRun" | "getRun" | "listRuns" | "updateRun" | "listRunsByStatus" | "settleRun"
  >;
  /** Stops asked for runs another process runs. */
  stopRequests: Pick<ThreadStore, "requestRunStop" | "listRunStopRequests">;
  /** The stored chunks of runs' streams, and (where the store can tell) who follows them. */
  runChunks: Pick<ThreadStore, "appendRunChunks" | "listRunChunks" | "pruneRunChunks" | "watchRun">;
  /** Tool-data writes. */
  toolData: Pick<ThreadStore, "appendToolData" | "listToolData">;
  /** Pending actions (approvals, client calls, suspensions) and their answers. */
  pendingActions: Pick<
    ThreadStore,
    | "putPendingAction"
    | "getPendingAction"
    | "listPendingActions"
    | "settlePendingAction"
    | "claimPendingAction"
  >;
  /** Checkpoints of threads' resources (the blobs live in the runtime's checkpoint store). */
  checkpoints: Pick<
    ThreadStore,
    "putCheckpoint" | "listCheckpoints" | "deleteCheckpoints" | "listCheckpointDigests"
  >;
  /** Capability leases and their handovers between owners. */
  leases: Pick<
    ThreadStore,
    "putLease" | "listLeases" | "touchLease" | "deleteLease" | "claimLease" | "requestLeaseHandover"
  >;
  /** Thread leases: one run of a thread at a time across processes. */
  threadLeases: Pick<
    ThreadStore,
    | "acquireThreadLease"
    | "renewThreadLeases"
    | "releaseThreadLease"
    | "getThreadLease"
    | "releaseOwnerThreadLeases"
  >;
  /** The runtime processes sharing the store, and their heartbeats. */
  owners: Pick<ThreadStore, "heartbeatOwner" | "listOwners" | "removeOwner">;
}
