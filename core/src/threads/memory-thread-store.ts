import type { UIMessage } from "ai";
import { PaiError } from "../errors/pai-error.ts";
import {
  applyRunPatch,
  asStored,
  parseStoreInput,
  storeInputSchemas as schemas,
  storeClosedError,
  toStoredJson,
  withoutUndefined,
} from "./parse-store-input.ts";
import type {
  CapabilityLifetime,
  LeaseRecord,
  OwnerRecord,
  PendingActionRecord,
  RunChunkRecord,
  RunRecord,
  ThreadLeaseRecord,
  ThreadRecord,
  ThreadStore,
  ToolDataRecord,
} from "./thread-store.ts";

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
  const threads = new Map<string, ThreadRecord>();
  /** Each thread's messages as JSON text, as SQLite keeps them: one stringify per commit, one parse per load. */
  const messages = new Map<string, string>();
  const runs = new Map<string, RunRecord>();
  const toolData: ToolDataRecord[] = [];
  const actions = new Map<string, PendingActionRecord>();
  const leases = new Map<string, LeaseRecord>();
  const owners = new Map<string, OwnerRecord>();
  const threadLeases = new Map<string, ThreadLeaseRecord>();
  /** Each run's stream chunks as JSON text, by seq. */
  const runChunks = new Map<string, Map<number, string>>();
  /** Runs a stop was asked for. */
  const stopRequests = new Set<string>();
  const watchers = new Map<string, Set<() => void>>();
  let nextSeq = 1;
  let closed = false;

  function assertOpen(): void {
    if (closed) throw storeClosedError();
  }

  /** The thread's lease if it has not lapsed. */
  function liveThreadLease(threadId: string): ThreadLeaseRecord | undefined {
    const lease = threadLeases.get(threadId);
    return lease && lease.expiresAt > Date.now() ? lease : undefined;
  }

  function notify(runId: string): void {
    for (const onChange of watchers.get(runId) ?? []) queueMicrotask(onChange);
  }

  const store: ThreadStore & AsyncDisposable = {
    async getThread(threadId) {
      assertOpen();
      return copy(threads.get(threadId));
    },

    async ensureThread(input) {
      assertOpen();
      const thread = asStored(parseStoreInput(schemas.thread, input, "thread"), "thread");
      const existing = threads.get(thread.id);
      if (existing) return copy(existing);
      threads.set(thread.id, thread);
      return copy(thread);
    },

    async listThreads(input) {
      assertOpen();
      const query = parseStoreInput(schemas.threadQuery, input, "thread query");
      const found = [...threads.values()]
        .filter((thread) => thread.ownerKey === query.ownerKey)
        .filter((thread) => query.agentId === undefined || thread.agentId === query.agentId)
        .sort(newestFirst);
      return copy(query.limit === undefined ? found : found.slice(0, query.limit));
    },

    async deleteThread(threadId) {
      assertOpen();
      const runIds = new Set(
        [...runs.values()].filter((run) => run.threadId === threadId).map((run) => run.id),
      );
      for (const [key, lease] of leases) {
        if (ownedByThread(lease, threadId, runIds)) leases.delete(key);
      }
      for (const runId of runIds) {
        runs.delete(runId);
        runChunks.delete(runId);
        stopRequests.delete(runId);
      }
      threadLeases.delete(threadId);
      for (const [actionId, action] of actions) {
        if (action.threadId === threadId) actions.delete(actionId);
      }
      for (let index = toolData.length - 1; index >= 0; index--) {
        if (toolData[index]!.threadId === threadId) toolData.splice(index, 1);
      }
      messages.delete(threadId);
      threads.delete(threadId);
    },

    async loadMessages(threadId) {
      assertOpen();
      const text = messages.get(threadId);
      return text === undefined ? [] : (JSON.parse(text) as UIMessage[]);
    },

    async createRun(input) {
      assertOpen();
      const run = asStored(parseStoreInput(schemas.run, input, "run"), "run");
      if (runs.has(run.id)) throw new PaiError("INVALID_ARGUMENT", `Run ${run.id} already exists`);
      runs.set(run.id, run);
    },

    async getRun(runId) {
      assertOpen();
      return copy(runs.get(runId));
    },

    async listRuns(threadId) {
      assertOpen();
      return copy([...runs.values()].filter((run) => run.threadId === threadId).sort(byStartedAt));
    },

    async updateRun(runId, input) {
      assertOpen();
      const patch = parseStoreInput(schemas.runPatch, input, "run patch");
      const run = runs.get(runId);
      if (!run) throw new PaiError("UNKNOWN_RUN", `Run ${runId} does not exist`, { details: { runId } });
      runs.set(runId, applyRunPatch(run, patch, input));
    },

    async listRunsByStatus(input) {
      assertOpen();
      const status = parseStoreInput(schemas.runStatus, input, "run status");
      return copy([...runs.values()].filter((run) => run.status === status).sort(byStartedAt));
    },

    async settleRun(runId, expectedInput, input) {
      assertOpen();
      const expected = parseStoreInput(schemas.runStatus, expectedInput, "expected status");
      const patch = parseStoreInput(schemas.settleRunPatch, input, "run settle patch");
      const run = runs.get(runId);
      if (!run || run.status !== expected) return false;
      runs.set(runId, applyRunPatch(run, patch, input));
      return true;
    },

    async requestRunStop(runId) {
      assertOpen();
      if (runs.get(runId)?.status !== "running") return false;
      stopRequests.add(runId);
      return true;
    },

    async listRunStopRequests(input) {
      assertOpen();
      const runIds = parseStoreInput(schemas.runIds, input, "run ids");
      return [...new Set(runIds)].filter((runId) => stopRequests.has(runId));
    },

    async commitRun(input) {
      assertOpen();
      const parsed = parseStoreInput(schemas.runCommit, input, "run commit");
      const thread = asStored(parsed.thread, "thread");
      const run = asStored(parsed.run, "run");
      const text = toStoredJson(parsed.messages, "messages") ?? "[]";
      const existing = threads.get(thread.id);
      threads.set(thread.id, { ...thread, createdAt: existing?.createdAt ?? thread.createdAt });
      messages.set(thread.id, text);
      runs.set(run.id, run);
    },

    async appendToolData(input) {
      assertOpen();
      const record = asStored(parseStoreInput(schemas.toolData, input, "tool data"), "tool data");
      const stored: ToolDataRecord = withoutUndefined({ ...record, data: record.data, seq: nextSeq++ });
      toolData.push(stored);
      return copy(stored);
    },

    async listToolData(input) {
      assertOpen();
      const query = parseStoreInput(schemas.toolDataQuery, input, "tool data query");
      return copy(
        toolData.filter(
          (record) =>
            record.threadId === query.threadId &&
            (query.toolCallId === undefined || record.toolCallId === query.toolCallId) &&
            (query.channel === undefined || record.channel === query.channel),
        ),
      );
    },

    async putPendingAction(input) {
      assertOpen();
      const action = asStored(
        parseStoreInput(schemas.pendingAction, input, "pending action"),
        "pending action",
      );
      actions.set(action.id, action as PendingActionRecord);
    },

    async getPendingAction(actionId) {
      assertOpen();
      return copy(actions.get(actionId));
    },

    async listPendingActions(input) {
      assertOpen();
      const query = parseStoreInput(schemas.pendingActionQuery, input, "pending action query");
      return copy(
        [...actions.values()]
          .filter(
            (action) =>
              (query.threadId === undefined || action.threadId === query.threadId) &&
              (query.status === undefined || action.status === query.status),
          )
          .sort(byCreatedAt),
      );
    },

    async settlePendingAction(actionId, expectedInput, input) {
      assertOpen();
      const expected = parseStoreInput(schemas.actionStatus, expectedInput, "expected status");
      const patch = asStored(parseStoreInput(schemas.settlePatch, input, "settle patch"), "settle patch");
      const action = actions.get(actionId);
      if (!action || action.status !== expected) return { changed: false, action: copy(action) };
      const settled = withoutUndefined({
        ...action,
        status: patch.status,
        answer: "answer" in input ? patch.answer : action.answer,
        settledAt: "settledAt" in input ? patch.settledAt : action.settledAt,
      });
      actions.set(actionId, settled);
      return { changed: true, action: copy(settled) };
    },

    async claimPendingAction(actionId, runId) {
      assertOpen();
      const applier = parseStoreInput(schemas.id, runId, "run id");
      const action = actions.get(actionId);
      if (!action || action.appliedBy !== undefined) return false;
      action.appliedBy = applier;
      return true;
    },

    async putLease(input) {
      assertOpen();
      const lease = asStored(parseStoreInput(schemas.lease, input, "lease"), "lease");
      leases.set(leaseKey(lease.capability, lease.lifetime, lease.key), lease);
    },

    async listLeases(input = {}) {
      assertOpen();
      const query = parseStoreInput(schemas.leaseQuery, input, "lease query");
      return copy(
        [...leases.values()]
          .filter(
            (lease) =>
              (query.capability === undefined || lease.capability === query.capability) &&
              (query.lifetime === undefined || lease.lifetime === query.lifetime) &&
              (query.key === undefined || lease.key === query.key),
          )
          .sort(byCreatedAt),
      );
    },

    async touchLease(capability, lifetime, key, at) {
      assertOpen();
      const lastUsedAt = parseStoreInput(schemas.timestamp, at, "lease time");
      const lease = leases.get(leaseKey(capability, lifetime, key));
      if (lease) lease.lastUsedAt = lastUsedAt;
    },

    async deleteLease(capability, lifetime, key) {
      assertOpen();
      leases.delete(leaseKey(capability, lifetime, key));
    },

    async claimLease(capability, lifetime, key, input) {
      assertOpen();
      const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
      const id = leaseKey(capability, lifetime, key);
      const lease = leases.get(id);
      if (!lease || lease.ownerId !== from) return false;
      const { handoverTo: _handoverTo, ...rest } = lease;
      leases.set(id, { ...rest, ownerId: to });
      return true;
    },

    async requestLeaseHandover(capability, lifetime, key, input) {
      assertOpen();
      const { from, to } = parseStoreInput(schemas.leaseOwners, input, "lease owners");
      const lease = leases.get(leaseKey(capability, lifetime, key));
      if (!lease || lease.ownerId !== from) return false;
      lease.handoverTo = to;
      return true;
    },

    async acquireThreadLease(input) {
      assertOpen();
      const request = parseStoreInput(schemas.threadLeaseRequest, input, "thread lease request");
      const held = liveThreadLease(request.threadId);
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
      assertOpen();
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
      assertOpen();
      if (threadLeases.get(threadId)?.runId !== runId) return;
      threadLeases.delete(threadId);
      notify(runId);
    },

    async releaseOwnerThreadLeases(ownerId) {
      assertOpen();
      for (const [threadId, lease] of [...threadLeases]) {
        if (lease.ownerId !== ownerId) continue;
        threadLeases.delete(threadId);
        notify(lease.runId);
      }
    },

    async getThreadLease(threadId) {
      assertOpen();
      return copy(liveThreadLease(threadId));
    },

    async appendRunChunks(input) {
      assertOpen();
      const batch = parseStoreInput(schemas.runChunks, input, "run chunks");
      const texts = batch.chunks.map((chunk, index) => toStoredJson(chunk, `run chunk ${batch.seq + index}`));
      let stored = runChunks.get(batch.runId);
      if (!stored) {
        stored = new Map();
        runChunks.set(batch.runId, stored);
      }
      for (const [index, text] of texts.entries()) {
        if (!stored.has(batch.seq + index)) stored.set(batch.seq + index, text ?? "null");
      }
      notify(batch.runId);
    },

    async listRunChunks(runId, input = {}) {
      assertOpen();
      const query = parseStoreInput(schemas.runChunkQuery, input, "run chunk query");
      const after = query.afterSeq ?? -1;
      const found: RunChunkRecord[] = [];
      for (const [seq, text] of runChunks.get(runId) ?? []) {
        if (seq > after) found.push({ runId, seq, chunk: JSON.parse(text) });
      }
      return found.sort((a, b) => a.seq - b.seq);
    },

    async pruneRunChunks(endedBefore) {
      assertOpen();
      const before = parseStoreInput(schemas.timestamp, endedBefore, "endedBefore");
      const ended = (runId: string) => {
        const run = runs.get(runId);
        return (
          run !== undefined && run.status !== "running" && run.endedAt !== undefined && run.endedAt < before
        );
      };
      for (const runId of runChunks.keys()) if (ended(runId)) runChunks.delete(runId);
      for (const runId of stopRequests) if (ended(runId)) stopRequests.delete(runId);
    },

    watchRun(runId, onChange) {
      let set = watchers.get(runId);
      if (!set) {
        set = new Set();
        watchers.set(runId, set);
      }
      const own = () => onChange();
      set.add(own);
      return () => {
        set.delete(own);
        if (set.size === 0 && watchers.get(runId) === set) watchers.delete(runId);
      };
    },

    async heartbeatOwner(input) {
      assertOpen();
      const owner = asStored(parseStoreInput(schemas.owner, input, "owner"), "owner");
      owners.set(owner.ownerId, owner);
    },

    async listOwners() {
      assertOpen();
      return copy([...owners.values()].sort(byStartedAt));
    },

    async removeOwner(ownerId) {
      assertOpen();
      owners.delete(ownerId);
    },

    async close() {
      closed = true;
    },

    async [Symbol.asyncDispose]() {
      await store.close();
    },
  };
  return store;
}

function copy<VALUE>(value: VALUE): VALUE {
  return structuredClone(value);
}

function leaseKey(capability: string, lifetime: CapabilityLifetime, key: string): string {
  return JSON.stringify([capability, lifetime, key]);
}

/** The leases {@link ThreadStore.deleteThread} removes: the thread's own and those of its runs. */
function ownedByThread(lease: LeaseRecord, threadId: string, runIds: ReadonlySet<string>): boolean {
  return (
    (lease.lifetime === "thread" && lease.key === threadId) ||
    (lease.lifetime === "run" && runIds.has(lease.key))
  );
}

/** Newest `updatedAt` first; ties by newest `createdAt`, then by id descending (as the SQLite store). */
function newestFirst(a: ThreadRecord, b: ThreadRecord): number {
  return b.updatedAt - a.updatedAt || b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

function byStartedAt(a: { startedAt: number }, b: { startedAt: number }): number {
  return a.startedAt - b.startedAt;
}

function byCreatedAt(a: { createdAt: number }, b: { createdAt: number }): number {
  return a.createdAt - b.createdAt;
}
