import { parseStoreInput, storeInputSchemas as schemas } from "../parse-store-input.ts";
import type { ThreadLeaseRecord } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables, notifyRun } from "./memory-tables.ts";

/** The memory store's thread leases: one run of a thread at a time. */
export function memoryThreadLeaseMethods(tables: MemoryTables): ThreadStoreParts["threadLeases"] {
  const { threadLeases } = tables;
  return {
    async acquireThreadLease(input) {
      assertOpen(tables);
      const request = parseStoreInput(schemas.threadLeaseRequest, input, "thread lease request");
      const held = liveThreadLease(tables, request.threadId);
      if (held) return { acquired: false, lease: copy(held) };
      const lease: ThreadLeaseRecord = {
        threadId: request.threadId,
        runId: request.runId,
        ownerId: request.ownerId,
        expiresAt: Date.now() + request.ttlMs,
      };
      threadLeases.set(lease.threadId, lease);
      return { acquired: true, lease: copy(lease) };
    },

    async renewThreadLeases(ownerId, ttlInput) {
      assertOpen(tables);
      const ttlMs = parseStoreInput(schemas.ttlMs, ttlInput, "ttlMs");
      const now = Date.now();
      const renewed: ThreadLeaseRecord[] = [];
      for (const lease of threadLeases.values()) {
        if (lease.ownerId !== ownerId || lease.expiresAt <= now) continue;
        lease.expiresAt = now + ttlMs;
        renewed.push(copy(lease));
      }
      return renewed;
    },

    async releaseThreadLease(threadId, runId) {
      assertOpen(tables);
      if (threadLeases.get(threadId)?.runId !== runId) return;
      threadLeases.delete(threadId);
      notifyRun(tables, runId);
    },

    async getThreadLease(threadId) {
      assertOpen(tables);
      return copy(liveThreadLease(tables, threadId));
    },

    async releaseOwnerThreadLeases(ownerId) {
      assertOpen(tables);
      for (const [threadId, lease] of [...threadLeases]) {
        if (lease.ownerId !== ownerId) continue;
        threadLeases.delete(threadId);
        notifyRun(tables, lease.runId);
      }
    },
  };
}

/** The thread's lease if it has not lapsed. */
function liveThreadLease(tables: MemoryTables, threadId: string): ThreadLeaseRecord | undefined {
  const lease = tables.threadLeases.get(threadId);
  return lease && lease.expiresAt > Date.now() ? lease : undefined;
}
