import { memoryCheckpointMethods } from "./memory/memory-checkpoint-methods.ts";
import { memoryLeaseMethods } from "./memory/memory-lease-methods.ts";
import { memoryOwnerMethods } from "./memory/memory-owner-methods.ts";
import { memoryPendingActionMethods } from "./memory/memory-pending-action-methods.ts";
import { memoryRunChunkMethods } from "./memory/memory-run-chunk-methods.ts";
import { memoryRunMethods } from "./memory/memory-run-methods.ts";
import { memoryStopRequestMethods } from "./memory/memory-stop-request-methods.ts";
import { createMemoryTables } from "./memory/memory-tables.ts";
import { memoryThreadLeaseMethods } from "./memory/memory-thread-lease-methods.ts";
import { memoryThreadMethods } from "./memory/memory-thread-methods.ts";
import { memoryToolDataMethods } from "./memory/memory-tool-data-methods.ts";
import type { ThreadStore } from "./thread-store.ts";

/**
 * Creates a {@link ThreadStore} that keeps everything in process memory, for tests and throwaway
 * runtimes. It behaves like the SQLite store: the same input checks, the same ordering, and values
 * come back as they would from storage (JSON semantics). Every value handed out is a deep copy
 * (`structuredClone`), so callers cannot change stored state by mutating what they got.
 *
 * @example
 * ```ts
 * const store = createMemoryThreadStore();
 * await store.ensureThread({ id: "t1", agentId: "coder", ownerKey: "user:1", createdAt: Date.now(), updatedAt: Date.now() });
 * ```
 */
export function createMemoryThreadStore(): ThreadStore & AsyncDisposable {
  const tables = createMemoryTables();
  const store: ThreadStore & AsyncDisposable = {
    ...memoryThreadMethods(tables),
    ...memoryRunMethods(tables),
    ...memoryStopRequestMethods(tables),
    ...memoryRunChunkMethods(tables),
    ...memoryToolDataMethods(tables),
    ...memoryPendingActionMethods(tables),
    ...memoryCheckpointMethods(tables),
    ...memoryLeaseMethods(tables),
    ...memoryThreadLeaseMethods(tables),
    ...memoryOwnerMethods(tables),
    async close() {
      tables.closed = true;
    },
    [Symbol.asyncDispose]: () => store.close(),
  };
  return store;
}
