import { PaiError } from "../errors/pai-error.ts";
import type { ThreadStore } from "../threads/thread-store.ts";

/**
 * One run of a thread at a time, across every process sharing the store: the store's thread leases, taken for a
 * run, renewed by this process while it runs, released when it ends.
 */
export interface ThreadRunLeases {
  /** Takes `threadId` for `runId`. Throws `THREAD_BUSY` (`busyMessage`) when a run of any process has it. */
  acquire(threadId: string, runId: string, busyMessage: string): Promise<void>;
  /** Gives the thread up, if it is still held for `runId`. */
  release(threadId: string, runId: string): Promise<void>;
  /** Renews this process's leases; `onLost` hears of each one the store no longer holds for it. */
  renew(): Promise<void>;
}

/** Options of {@link createThreadRunLeases}. */
export interface ThreadRunLeasesOptions {
  store: ThreadStore;
  ownerId: string;
  /** How long a lease lasts unrenewed (on the store's clock): a dead holder's thread is free after it. */
  ttlMs: number;
  /** A lease this process held lapsed (it did not renew in time) and the thread may be another's now. */
  onLost(threadId: string, runId: string): void;
  /**
   * Another owner holds a thread this process asked for: frees it when that owner is known gone (ending its runs
   * first) and resolves true, so the thread is taken again at once; false leaves the refusal as it is.
   */
  freeIfGone?(holder: string): Promise<boolean>;
}

/** Creates this process's view of its thread leases (no timer: the runtime's maintenance renews them). */
export function createThreadRunLeases(options: ThreadRunLeasesOptions): ThreadRunLeases {
  const { store, ownerId, ttlMs, onLost, freeIfGone } = options;
  /** Threads this process holds (or is taking): thread id → the run and whether the store confirmed it. */
  const held = new Map<string, { runId: string; confirmed: boolean }>();

  const busy = (threadId: string, busyMessage: string, holder: string) =>
    new PaiError("THREAD_BUSY", `thread "${threadId}" ${busyMessage}`, {
      details: { threadId, ...(holder === ownerId ? {} : { heldBy: holder }) },
    });

  return {
    async acquire(threadId, runId, busyMessage) {
      // This process's own runs are known here: no round trip to refuse them.
      if (held.has(threadId)) throw busy(threadId, busyMessage, ownerId);
      const entry = { runId, confirmed: false };
      held.set(threadId, entry);
      try {
        const request = { threadId, runId, ownerId, ttlMs };
        let { acquired, lease } = await store.acquireThreadLease(request);
        // Held by a process that is gone (killed on this machine): its lease is freed, and taken now.
        if (!acquired && lease.ownerId !== ownerId && (await freeIfGone?.(lease.ownerId))) {
          ({ acquired, lease } = await store.acquireThreadLease(request));
        }
        if (!acquired) throw busy(threadId, busyMessage, lease.ownerId);
        entry.confirmed = true;
      } catch (error) {
        held.delete(threadId);
        throw error;
      }
    },

    async release(threadId, runId) {
      if (held.get(threadId)?.runId !== runId) return;
      held.delete(threadId);
      await store.releaseThreadLease(threadId, runId);
    },

    async renew() {
      // Only leases the store had confirmed before the renewal started can be missing from its answer.
      const checked = [...held].filter(([, entry]) => entry.confirmed);
      if (checked.length === 0) return;
      const kept = new Set(
        (await store.renewThreadLeases(ownerId, ttlMs)).map((lease) => `${lease.threadId}\n${lease.runId}`),
      );
      for (const [threadId, entry] of checked) {
        if (held.get(threadId) !== entry || kept.has(`${threadId}\n${entry.runId}`)) continue;
        held.delete(threadId);
        onLost(threadId, entry.runId);
      }
    },
  };
}
