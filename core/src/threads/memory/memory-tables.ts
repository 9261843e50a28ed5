import { storeClosedError } from "../parse-store-input.ts";
import type {
  CheckpointRecord,
  LeaseRecord,
  OwnerRecord,
  PendingActionRecord,
  RunRecord,
  ThreadLeaseRecord,
  ThreadRecord,
  ToolDataRecord,
} from "../thread-store.ts";

/** The memory store's state, what the SQL stores keep in tables; shared by the modules of the store's parts. */
export interface MemoryTables {
  threads: Map<string, ThreadRecord>;
  /** Each thread's messages as JSON text, as SQLite keeps them: one stringify per commit, one parse per load. */
  messages: Map<string, string>;
  runs: Map<string, RunRecord>;
  toolData: ToolDataRecord[];
  /** The `seq` the next tool-data write gets. */
  nextToolDataSeq: number;
  actions: Map<string, PendingActionRecord>;
  /** By id. */
  checkpoints: Map<string, CheckpointRecord>;
  /** By capability, lifetime and key (`leaseKey` of the lease methods). */
  leases: Map<string, LeaseRecord>;
  owners: Map<string, OwnerRecord>;
  /** By thread id. */
  threadLeases: Map<string, ThreadLeaseRecord>;
  /** Each run's stream chunks as JSON text, by seq. */
  runChunks: Map<string, Map<number, string>>;
  /** Runs a stop was asked for. */
  stopRequests: Set<string>;
  /** Who follows each run (`watchRun`). */
  watchers: Map<string, Set<() => void>>;
  /** Set by `close()`: every method then rejects with `STORE_CLOSED`. */
  closed: boolean;
}

/** Empty tables. */
export function createMemoryTables(): MemoryTables {
  return {
    threads: new Map(),
    messages: new Map(),
    runs: new Map(),
    toolData: [],
    nextToolDataSeq: 1,
    actions: new Map(),
    checkpoints: new Map(),
    leases: new Map(),
    owners: new Map(),
    threadLeases: new Map(),
    runChunks: new Map(),
    stopRequests: new Set(),
    watchers: new Map(),
    closed: false,
  };
}

/** Throws `STORE_CLOSED` once the store is closed. */
export function assertOpen(tables: MemoryTables): void {
  if (tables.closed) throw storeClosedError();
}

/** Tells the run's watchers, each in a microtask of its own. */
export function notifyRun(tables: MemoryTables, runId: string): void {
  for (const onChange of tables.watchers.get(runId) ?? []) queueMicrotask(onChange);
}

/** A deep copy: what the store hands out, so callers cannot change stored state through it. */
export function copy<VALUE>(value: VALUE): VALUE {
  return structuredClone(value);
}
