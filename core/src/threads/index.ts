export { createMemoryThreadStore } from "./memory-thread-store.ts";
export { createSqliteThreadStore, type SqliteThreadStoreOptions } from "./sqlite-thread-store.ts";
export type {
  CapabilityLifetime,
  CheckpointRecord,
  JournalEntry,
  JournalOutcome,
  LeaseRecord,
  OwnerRecord,
  PendingActionInner,
  PendingActionKind,
  PendingActionRecord,
  PendingActionStatus,
  RunChunkRecord,
  RunCommit,
  RunRecord,
  RunRewind,
  RunStatus,
  SubagentWait,
  ThreadLeaseRecord,
  ThreadRecord,
  ThreadStore,
  ToolDataRecord,
} from "./thread-store.ts";
