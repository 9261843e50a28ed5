import type { UIMessage } from "ai";
import {
  fromStoredJson,
  parseStoreInput,
  storeInputSchemas as schemas,
  toStoredJson,
} from "../parse-store-input.ts";
import {
  optionalRecord,
  runColumns,
  runToRow,
  threadColumns,
  threadFromRow,
  threadToRow,
} from "../row-codecs.ts";
import type { ThreadStoreParts } from "../thread-store-parts.ts";
import type { PostgresConnection } from "./postgres-connection.ts";

/** The Postgres store's threads, their messages, and the commit that ends a run. */
export function postgresThreadMethods(connection: PostgresConnection): ThreadStoreParts["threads"] {
  const { use } = connection;
  const query = connection.statements(threadStatements);
  return {
    getThread: (threadId) =>
      use("read", async () => optionalRecord((await query("getThread", [threadId]))[0], threadFromRow)),

    ensureThread: (input) =>
      use("write", async () => {
        const thread = parseStoreInput(schemas.thread, input, "thread");
        const [inserted] = await query("insertThreadIfMissing", threadToRow(thread));
        // Read in a second statement when it existed: it sees a row another connection committed meanwhile.
        return threadFromRow(inserted ?? (await query("getThread", [thread.id]))[0]!);
      }),

    setThreadTitle: (threadId, input) =>
      use("write", async () => {
        const title = parseStoreInput(schemas.threadTitle, input, "thread title");
        return optionalRecord((await query("setThreadTitle", [title ?? null, threadId]))[0], threadFromRow);
      }),

    listThreads: (input) =>
      use("read", async () => {
        const filter = parseStoreInput(schemas.threadQuery, input, "thread query");
        const rows = await query("listThreads", [
          filter.ownerKey,
          filter.agentId ?? null,
          filter.limit ?? null,
        ]);
        return rows.map(threadFromRow);
      }),

    deleteThread: (threadId) =>
      use("write", async () => {
        await query("deleteThread", [threadId]);
      }),

    loadMessages: (threadId) =>
      use("read", async () => {
        const [row] = await query("loadMessages", [threadId]);
        return fromStoredJson(row?.messages as string) as UIMessage[];
      }),

    commitRun: (input) =>
      use("commit", async () => {
        const { thread, messages, run } = parseStoreInput(schemas.runCommit, input, "run commit");
        // Serialized before the statement: a message JSON cannot hold must not get as far as the server.
        const text = toStoredJson(messages, "messages") ?? "[]";
        await query("commitRun", [...threadToRow(thread), ...runToRow(run), text]);
      }),
  };
}

/** The statements of {@link postgresThreadMethods}, for the quoted schema `s`. */
function threadStatements(s: string) {
  const runUpdate = `thread_id = excluded.thread_id, agent_id = excluded.agent_id, status = excluded.status,
    started_at = excluded.started_at, ended_at = excluded.ended_at, error = excluded.error,
    owner_id = excluded.owner_id, rewind = excluded.rewind`;
  return {
    getThread: `SELECT ${threadColumns} FROM ${s}.threads WHERE id = $1`,
    insertThreadIfMissing: `INSERT INTO ${s}.threads (${threadColumns}) VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (id) DO NOTHING RETURNING ${threadColumns}`,
    setThreadTitle: `UPDATE ${s}.threads SET title = $1 WHERE id = $2 RETURNING ${threadColumns}`,
    listThreads: `SELECT ${threadColumns} FROM ${s}.threads
      WHERE owner_key = $1 AND ($2::text IS NULL OR agent_id = $2)
      ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT $3`,
    /** One statement: the thread and everything recorded on it go together or not at all. */
    deleteThread: `WITH
        leases AS (DELETE FROM ${s}.leases WHERE (lifetime = 'thread' AND key = $1)
          OR (lifetime = 'run' AND key IN (SELECT id FROM ${s}.runs WHERE thread_id = $1))),
        runs AS (DELETE FROM ${s}.runs WHERE thread_id = $1),
        actions AS (DELETE FROM ${s}.pending_actions WHERE thread_id = $1),
        tool_data AS (DELETE FROM ${s}.tool_data WHERE thread_id = $1),
        messages AS (DELETE FROM ${s}.messages WHERE thread_id = $1),
        chunks AS (DELETE FROM ${s}.run_chunks
          WHERE run_id IN (SELECT id FROM ${s}.runs WHERE thread_id = $1)),
        stop_requests AS (DELETE FROM ${s}.run_stop_requests
          WHERE run_id IN (SELECT id FROM ${s}.runs WHERE thread_id = $1)),
        thread_lease AS (DELETE FROM ${s}.thread_leases WHERE thread_id = $1),
        checkpoints AS (DELETE FROM ${s}.checkpoints WHERE thread_id = $1)
      DELETE FROM ${s}.threads WHERE id = $1`,
    loadMessages: `SELECT coalesce(json_agg(message ORDER BY position), '[]') AS messages
      FROM ${s}.messages WHERE thread_id = $1`,
    /**
     * One statement: the thread, the run, and the messages are stored together or not at all. Messages are
     * rewritten in place where they changed (a run's commit leaves the thread's earlier messages as they
     * were) and the surplus deleted; the two touch different rows.
     */
    commitRun: `WITH
        thread AS (INSERT INTO ${s}.threads (${threadColumns}) VALUES ($1, $2, $3, $4, $5, $6)
          ON CONFLICT (id) DO UPDATE SET agent_id = excluded.agent_id, owner_key = excluded.owner_key,
            updated_at = excluded.updated_at),
        run AS (INSERT INTO ${s}.runs (${runColumns}) VALUES ($7, $8, $9, $10, $11, $12, $13, $14, $15)
          ON CONFLICT (id) DO UPDATE SET ${runUpdate}),
        written AS (INSERT INTO ${s}.messages (thread_id, position, message)
          SELECT $1, (ordinality - 1)::integer, value FROM json_array_elements($16::json) WITH ORDINALITY
          ON CONFLICT (thread_id, position) DO UPDATE SET message = excluded.message
            WHERE messages.message::text <> excluded.message::text)
      DELETE FROM ${s}.messages WHERE thread_id = $1 AND position >= json_array_length($16::json)`,
  };
}
