export { createMemoryThreadStore } from "./memory-thread-store.ts";
export { createSqliteThreadStore, type SqliteThreadStoreOptions } from "./sqlite-thread-store.ts";
export type {
  CapabilityLifetime,
  LeaseRecord,
  OwnerRecord,
  PendingActionKind,
  PendingActionRecord,
  PendingActionStatus,
  RunChunkRecord,
  RunCommit,
  RunRecord,
  RunStatus,
  ThreadLeaseRecord,
  ThreadRecord,
  ThreadStore,
  ToolDataRecord,
} from "./thread-store.ts";
