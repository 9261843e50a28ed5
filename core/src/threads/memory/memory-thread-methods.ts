import type { UIMessage } from "ai";
import {
  asStored,
  parseStoreInput,
  storeInputSchemas as schemas,
  toStoredJson,
} from "../parse-store-input.ts";
import type { LeaseRecord } from "../thread-store.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import { assertOpen, copy, type MemoryTables } from "./memory-tables.ts";
import { newestFirst } from "./record-order.ts";

/** The memory store's threads, their messages, and the commit that ends a run. */
export function memoryThreadMethods(tables: MemoryTables): ThreadStoreParts["threads"] {
  const { threads, messages, runs, toolData, actions, leases, threadLeases, runChunks, stopRequests } =
    tables;
  return {
    async getThread(threadId) {
      assertOpen(tables);
      return copy(threads.get(threadId));
    },

    async ensureThread(input) {
      assertOpen(tables);
      const thread = asStored(parseStoreInput(schemas.thread, input, "thread"), "thread");
      const existing = threads.get(thread.id);
      if (existing) return copy(existing);
      threads.set(thread.id, thread);
      return copy(thread);
    },

    async setThreadTitle(threadId, input) {
      assertOpen(tables);
      const title = parseStoreInput(schemas.threadTitle, input, "thread title");
      const existing = threads.get(threadId);
      if (!existing) return undefined;
      const renamed = { ...existing, title };
      threads.set(threadId, renamed);
      return copy(renamed);
    },

    async listThreads(input) {
      assertOpen(tables);
      const query = parseStoreInput(schemas.threadQuery, input, "thread query");
      const found = [...threads.values()]
        .filter((thread) => thread.ownerKey === query.ownerKey)
        .filter((thread) => query.agentId === undefined || thread.agentId === query.agentId)
        .sort(newestFirst);
      return copy(query.limit === undefined ? found : found.slice(0, query.limit));
    },

    async deleteThread(threadId) {
      assertOpen(tables);
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
      for (const [checkpointId, checkpoint] of tables.checkpoints) {
        if (checkpoint.threadId === threadId) tables.checkpoints.delete(checkpointId);
      }
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
      assertOpen(tables);
      const text = messages.get(threadId);
      return text === undefined ? [] : (JSON.parse(text) as UIMessage[]);
    },

    async commitRun(input) {
      assertOpen(tables);
      const parsed = parseStoreInput(schemas.runCommit, input, "run commit");
      const thread = asStored(parsed.thread, "thread");
      const run = asStored(parsed.run, "run");
      const text = toStoredJson(parsed.messages, "messages") ?? "[]";
      const existing = threads.get(thread.id);
      threads.set(
        thread.id,
        existing ? { ...thread, createdAt: existing.createdAt, title: existing.title } : thread,
      );
      messages.set(thread.id, text);
      runs.set(run.id, run);
    },
  };
}

/** The leases `deleteThread` removes: the thread's own and those of its runs. */
function ownedByThread(lease: LeaseRecord, threadId: string, runIds: ReadonlySet<string>): boolean {
  return (
    (lease.lifetime === "thread" && lease.key === threadId) ||
    (lease.lifetime === "run" && runIds.has(lease.key))
  );
}
