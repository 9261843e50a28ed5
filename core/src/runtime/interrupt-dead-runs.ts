import { applyToolPartUpdate, endedCall, openToolCallIds } from "../actions/tool-part-updates.ts";
import type { RunRecord, ThreadStore } from "../threads/thread-store.ts";

/** Which `running` runs have no process running them any more. */
export interface DeadRunQuery {
  /** Owners alive now. */
  live: ReadonlySet<string>;
  /** This process's owner id and start: its own runs from before it started are dead too (a reused id). */
  self: { ownerId: string; startedAt: number };
}

/**
 * Ends the runs left `running` by a dead owner: each becomes `interrupted` (one process wins, by compare-and-set)
 * and, when it is its thread's latest run, the calls it left open get a final `output-error` state (reason
 * `interrupted`) in the stored thread. Calls waiting for an answer stay open: they are durable.
 * Returns the ids of the runs it interrupted.
 */
export async function interruptDeadRuns(store: ThreadStore, query: DeadRunQuery): Promise<string[]> {
  const interrupted: string[] = [];
  for (const run of await store.listRunsByStatus("running")) {
    if (isDeadRun(run, query) && (await interruptRun(store, run))) interrupted.push(run.id);
  }
  return interrupted;
}

/**
 * Frees the threads of dead owners — whose process is known gone (on this machine; see `OwnerRegistry.goneOwners`),
 * or silent past the owner TTL (`deadOwners`): ends their `running` runs as `interrupted` (their open calls closed),
 * then every thread lease they hold, so their threads take new runs now rather than once the leases lapse, and a run
 * that takes one never finds its last run still `running`.
 */
export async function freeGoneOwnersThreads(store: ThreadStore, ownerIds: Iterable<string>): Promise<void> {
  const gone = new Set(ownerIds);
  if (gone.size === 0) return;
  for (const run of await store.listRunsByStatus("running")) {
    if (run.ownerId !== undefined && gone.has(run.ownerId)) await interruptRun(store, run);
  }
  for (const ownerId of gone) await store.releaseOwnerThreadLeases(ownerId);
}

/**
 * Ends one `running` run of a dead owner as `interrupted` (compare-and-set: true when this call ended it) and closes
 * the calls it left open, as {@link interruptDeadRuns} does for each.
 */
export async function interruptRun(store: ThreadStore, run: RunRecord): Promise<boolean> {
  const endedAt = Date.now();
  const won = await store.settleRun(run.id, "running", {
    status: "interrupted",
    endedAt,
    error: "The process running it stopped before it ended.",
  });
  if (won) await closeOpenCalls(store, { ...run, status: "interrupted", endedAt });
  return won;
}

/** Whether no process runs `run` any more: its owner is dead, or it is this process's from before it started. */
export function isDeadRun(run: RunRecord, { live, self }: DeadRunQuery): boolean {
  if (run.ownerId === undefined) return true;
  if (run.ownerId === self.ownerId) return run.startedAt < self.startedAt;
  return !live.has(run.ownerId);
}

async function closeOpenCalls(store: ThreadStore, run: RunRecord): Promise<void> {
  const [thread, runs] = await Promise.all([store.getThread(run.threadId), store.listRuns(run.threadId)]);
  // A later run owns the thread's messages now; it closes what it finds open itself.
  if (!thread || runs.at(-1)?.id !== run.id) return;
  const messages = await store.loadMessages(run.threadId);
  const reply = messages.at(-1);
  if (reply?.role !== "assistant") return;
  const pending = await store.listPendingActions({ threadId: run.threadId, status: "pending" });
  const open = openToolCallIds(reply, new Set(pending.map((action) => action.toolCallId)));
  if (open.length === 0) return;
  for (const toolCallId of open)
    applyToolPartUpdate(messages, endedCall(toolCallId, { reason: "interrupted" }));
  await store.commitRun({ thread, messages, run });
}
