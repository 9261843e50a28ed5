import type { UIMessage, UIMessageChunk } from "ai";
import { type PublicPendingAction, publicAction } from "../actions/public-action.ts";
import type { RunRecord, ThreadRecord, ToolDataRecord } from "../threads/thread-store.ts";
import { followStoredRun } from "./follow-stored-run.ts";
import type { RuntimeParts } from "./runtime-parts.ts";
import { unknownThread } from "./thread-access.ts";

// The runtime's reads of threads and of the runs on them (`runtime.getThread`, `listThreads`, `listPendingActions`,
// `activeRun`, `followRun`): with an `identity`, only what that caller owns.

/** A thread as stored: record, messages, runs, tool data and pending actions. */
export interface ThreadSnapshot {
  thread: ThreadRecord;
  messages: UIMessage[];
  runs: RunRecord[];
  toolData: ToolDataRecord[];
  pendingActions: PublicPendingAction[];
}

/** What the reads need of the runtime. */
type ReadParts = Pick<RuntimeParts, "pai" | "store" | "owners" | "access" | "identityKeyOf" | "runs">;

/** A local run as `runtime.activeRun` hands it out. */
export interface ActiveRun {
  runId: string;
  stream(): ReadableStream<UIMessageChunk>;
}

/** `runtime.getThread`: the stored thread, or, while this process runs it, the thread its run's stream builds on. */
export async function readThread(
  parts: ReadParts,
  threadId: string,
  query: { identity?: unknown },
): Promise<ThreadSnapshot | undefined> {
  const { store } = parts;
  const thread = await ownedThread(parts, threadId, query);
  if (!thread) return undefined;
  const running = parts.runs.onThread(threadId);
  const [messages, runs, toolData, pendingActions] = await Promise.all([
    running ? structuredClone(running.baseMessages()) : store.loadMessages(threadId),
    store.listRuns(threadId),
    store.listToolData({ threadId }),
    store.listPendingActions({ threadId, status: "pending" }),
  ]);
  return { thread, messages, runs, toolData, pendingActions: pendingActions.map(publicAction) };
}

/** `runtime.listPendingActions`: the thread's actions waiting for an answer; `NOT_FOUND` for another's thread. */
export async function listThreadActions(
  parts: ReadParts,
  query: { threadId: string; identity?: unknown },
): Promise<PublicPendingAction[]> {
  const thread = await ownedThread(parts, query.threadId, query);
  if (!thread) throw unknownThread(query.threadId);
  return (await parts.store.listPendingActions({ threadId: thread.id, status: "pending" })).map(publicAction);
}

/**
 * `runtime.listThreads`: a caller's threads, newest first. A thread is the caller's when the caller's key *for that
 * thread's agent* owns it. An agent whose identity schema rejects the caller has no threads of theirs; naming that
 * agent is an `INVALID_IDENTITY`.
 */
export async function listOwnedThreads(
  parts: ReadParts,
  query: { identity?: unknown; agentId?: string; limit?: number },
): Promise<ThreadRecord[]> {
  const { pai, access } = parts;
  const owned = query.agentId
    ? [
        {
          agentId: query.agentId,
          ownerKey: parts.identityKeyOf(await access.parseIdentity(pai.agent(query.agentId), query.identity)),
        },
      ]
    : await Promise.all(
        Object.keys(pai.agents).map(async (agentId) => ({
          agentId,
          ownerKey: await access.identityKeyFor(pai.agent(agentId), query.identity),
        })),
      );
  const lists = await Promise.all(
    owned.flatMap(({ agentId, ownerKey }) =>
      ownerKey === undefined
        ? []
        : [parts.store.listThreads({ ownerKey, agentId, ...(query.limit ? { limit: query.limit } : {}) })],
    ),
  );
  const threads = lists.flat().sort((a, b) => b.updatedAt - a.updatedAt);
  return query.limit ? threads.slice(0, query.limit) : threads;
}

/** `runtime.activeRun`: the run in progress on a thread in this process, if any. */
export function activeRunOf(parts: ReadParts, threadId: string): ActiveRun | undefined {
  const run = parts.runs.onThread(threadId);
  return run && { runId: run.runId, stream: () => run.subscribe() };
}

/**
 * `runtime.followRun`: the run in progress on a thread in any process sharing the store — this process's own, or
 * another's read from the chunks that process stores.
 */
export async function followThreadRun(
  parts: ReadParts,
  threadId: string,
): Promise<(ActiveRun & { ownerId: string }) | undefined> {
  const local = activeRunOf(parts, threadId);
  if (local) return { ...local, ownerId: parts.owners.ownerId };
  const { store } = parts;
  const lease = await store.getThreadLease(threadId);
  if (!lease) return undefined;
  return {
    runId: lease.runId,
    ownerId: lease.ownerId,
    stream: () => followStoredRun({ store, threadId, runId: lease.runId }),
  };
}

/** The thread if `identity` (when given) owns it. */
function ownedThread(
  parts: ReadParts,
  threadId: string,
  query: { identity?: unknown },
): Promise<ThreadRecord | undefined> {
  return "identity" in query
    ? parts.access.ownedThread(threadId, query.identity)
    : parts.store.getThread(threadId);
}
