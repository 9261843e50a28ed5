import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { UIMessage } from "ai";
import {
  fromStoredJson,
  parseStoreInput,
  storeInputSchemas as schemas,
  toStoredJson,
} from "../parse-store-input.ts";
import { optionalRecord, runToRow, threadColumns, threadFromRow, threadToRow } from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { SqliteConnection } from "./sqlite-connection.ts";
import { prepareRunUpsert } from "./sqlite-run-methods.ts";

/** The SQLite store's threads, their messages, and the commit that ends a run. */
export function sqliteThreadMethods(connection: SqliteConnection): ThreadStoreParts["threads"] {
  const { use, transaction } = connection;
  const s = prepareThreadStatements(connection.db);
  return {
    getThread: (threadId) => use("read", () => optionalRecord(s.getThread.get(threadId), threadFromRow)),

    ensureThread: (input) =>
      use("write", () => {
        const thread = parseStoreInput(schemas.thread, input, "thread");
        return transaction(() => {
          s.insertThreadIfMissing.run(...threadToRow(thread));
          return threadFromRow(s.getThread.get(thread.id)!);
        });
      }),

    setThreadTitle: (threadId, input) =>
      use("write", () => {
        const title = parseStoreInput(schemas.threadTitle, input, "thread title");
        return optionalRecord(s.setThreadTitle.get(title ?? null, threadId), threadFromRow);
      }),

    listThreads: (input) =>
      use("read", () => {
        const query = parseStoreInput(schemas.threadQuery, input, "thread query");
        const rows =
          query.agentId === undefined
            ? s.listThreads.all(query.ownerKey, query.limit ?? -1)
            : s.listThreadsOfAgent.all(query.ownerKey, query.agentId, query.limit ?? -1);
        return rows.map(threadFromRow);
      }),

    deleteThread: (threadId) =>
      use("write", () =>
        transaction(() => {
          s.deleteThreadLeases.run(threadId, threadId);
          s.deleteThreadRunChunks.run(threadId);
          s.deleteThreadStopRequests.run(threadId);
          s.deleteThreadLease.run(threadId);
          s.deleteThreadCheckpoints.run(threadId);
          s.deleteThreadRuns.run(threadId);
          s.deleteThreadActions.run(threadId);
          s.deleteThreadToolData.run(threadId);
          s.deleteMessages.run(threadId);
          s.deleteThread.run(threadId);
        }),
      ),

    loadMessages: (threadId) =>
      use("read", () =>
        s.loadMessages.all(threadId).map((row) => fromStoredJson(row.message as string) as UIMessage),
      ),

    commitRun: (input) =>
      use("commit", () => {
        const { thread, messages, run } = parseStoreInput(schemas.runCommit, input, "run commit");
        // Serialize before the transaction: a message JSON cannot hold must not get as far as the file.
        const rows = messages.map((message, position) => toStoredJson(message, `message ${position}`)!);
        transaction(() => {
          s.deleteMessages.run(thread.id);
          for (const [position, message] of rows.entries()) s.insertMessage.run(thread.id, position, message);
          s.upsertThread.run(...threadToRow(thread));
          s.upsertRun.run(...runToRow(run));
        });
      }),
  };
}

function prepareThreadStatements(db: DatabaseSync) {
  const newestFirst = "ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT ?";
  return {
    getThread: db.prepare(`SELECT ${threadColumns} FROM threads WHERE id = ?`),
    insertThreadIfMissing: db.prepare(
      `INSERT INTO threads (${threadColumns}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    ),
    upsertThread: db.prepare(
      `INSERT INTO threads (${threadColumns}) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET
         agent_id = excluded.agent_id, owner_key = excluded.owner_key, updated_at = excluded.updated_at`,
    ),
    setThreadTitle: db.prepare(`UPDATE threads SET title = ? WHERE id = ? RETURNING ${threadColumns}`),
    listThreads: db.prepare(`SELECT ${threadColumns} FROM threads WHERE owner_key = ? ${newestFirst}`),
    listThreadsOfAgent: db.prepare(
      `SELECT ${threadColumns} FROM threads WHERE owner_key = ? AND agent_id = ? ${newestFirst}`,
    ),
    deleteThread: db.prepare("DELETE FROM threads WHERE id = ?"),
    deleteThreadLeases: db.prepare(
      `DELETE FROM leases WHERE (lifetime = 'thread' AND key = ?)
         OR (lifetime = 'run' AND key IN (SELECT id FROM runs WHERE thread_id = ?))`,
    ),
    deleteThreadRuns: db.prepare("DELETE FROM runs WHERE thread_id = ?"),
    deleteThreadActions: db.prepare("DELETE FROM pending_actions WHERE thread_id = ?"),
    deleteThreadToolData: db.prepare("DELETE FROM tool_data WHERE thread_id = ?"),
    deleteThreadRunChunks: db.prepare(
      "DELETE FROM run_chunks WHERE run_id IN (SELECT id FROM runs WHERE thread_id = ?)",
    ),
    deleteThreadStopRequests: db.prepare(
      "DELETE FROM run_stop_requests WHERE run_id IN (SELECT id FROM runs WHERE thread_id = ?)",
    ),
    deleteThreadLease: db.prepare("DELETE FROM thread_leases WHERE thread_id = ?"),
    deleteThreadCheckpoints: db.prepare("DELETE FROM checkpoints WHERE thread_id = ?"),

    loadMessages: db.prepare("SELECT message FROM messages WHERE thread_id = ? ORDER BY position"),
    deleteMessages: db.prepare("DELETE FROM messages WHERE thread_id = ?"),
    insertMessage: db.prepare("INSERT INTO messages (thread_id, position, message) VALUES (?, ?, ?)"),
    upsertRun: prepareRunUpsert(db),
  } satisfies Record<string, StatementSync>;
}
