import { generateId, type UIMessage } from "ai";
import type { CapabilityManager } from "../capabilities/capability-manager.ts";
import { PaiError } from "../errors/pai-error.ts";
import type { LocalRuns } from "../runtime/local-runs.ts";
import type { ThreadAccess } from "../runtime/thread-access.ts";
import { countActionSettled } from "../telemetry/pai-metrics.ts";
import type { CheckpointRecord, ThreadStore } from "../threads/thread-store.ts";
import type { CheckpointBlobStore, RestoredCheckpoint, StoppedProcess } from "./checkpoint-blob-store.ts";
import { storeWorkspaceManifest } from "./stored-workspace-manifest.ts";

/** What `runtime.rewindThread` takes. */
export interface RewindThreadOptions {
  threadId: string;
  /** The message the thread ends with afterwards: every later one is dropped. */
  toMessageId: string;
  /** Who asks: only the thread's owner may rewind it. */
  identity: unknown;
}

/** What a rewind did. */
export interface RewindResult {
  threadId: string;
  /** The run recorded for the rewind (status `completed`), the thread's history of what happened. */
  runId: string;
  /** The message the thread ends with now; `null` when none is left (an edit or a regeneration of the first). */
  toMessageId: string | null;
  /** The messages dropped, in order. */
  droppedMessageIds: string[];
  /** Pending actions of dropped messages, now `cancelled`. */
  cancelledActionIds: string[];
  /**
   * Each resource restored, from which checkpoint (absent: to its state before the thread's first checkpoint), and
   * the programs that were running in it, stopped first (a sandbox's servers and background jobs).
   */
  restored: RestoredResource[];
}

/** One resource a rewind or a fork restored. */
export type RestoredResource = {
  capability: string;
  checkpointId?: string;
  stoppedProcesses: StoppedProcess[];
} & RestoredCheckpoint;

/** What `runtime.forkThread` takes. */
export interface ForkThreadOptions {
  threadId: string;
  /** The last message the fork keeps. @default the thread's last */
  atMessageId?: string;
  identity: unknown;
}

/** What a fork made. */
export interface ForkResult {
  /** The new thread (the original is untouched). */
  threadId: string;
  forkedFrom: { threadId: string; messageId: string };
  restored: RestoredResource[];
}

/** What rewinding and forking need of the runtime. */
export interface ThreadRewindsOptions {
  store: ThreadStore;
  access: ThreadAccess;
  runs: LocalRuns;
  capabilities: CapabilityManager;
  /** Where checkpoints live; without it threads rewind their messages only. */
  blobs: CheckpointBlobStore | undefined;
  ownerId: string;
  identityKeyOf: (identity: unknown) => string;
}

/**
 * Where a rewind cuts a thread: after `toMessageId` (which stays), or before `beforeMessageId` (a user message, which
 * goes too: a run replaces it).
 */
type RewindCut = { toMessageId: string } | { beforeMessageId: string };

/** A thread's resource state to restore, by capability: the newest checkpoint at or before the kept messages' end. */
function checkpointsAt(
  checkpoints: readonly CheckpointRecord[],
  kept: readonly UIMessage[],
): Map<string, CheckpointRecord | undefined> {
  const position = new Map(kept.map((message, index) => [message.id, index]));
  const chosen = new Map<string, CheckpointRecord | undefined>();
  for (const checkpoint of checkpoints) {
    if (!chosen.has(checkpoint.capability)) chosen.set(checkpoint.capability, undefined);
    const at = position.get(checkpoint.messageId);
    if (at === undefined) continue;
    const best = chosen.get(checkpoint.capability);
    if (!best || at >= (position.get(best.messageId) ?? -1)) chosen.set(checkpoint.capability, checkpoint);
  }
  return chosen;
}

/** What {@link createThreadRewinds} makes. */
export type ThreadRewinds = ReturnType<typeof createThreadRewinds>;

/** Rewinds and forks threads, their resources' state included, from the checkpoints taken at runs' ends. */
export function createThreadRewinds(options: ThreadRewindsOptions) {
  const { store, access, runs, capabilities, blobs } = options;

  /** The messages the thread keeps at `cut`, and those after them. */
  async function split(threadId: string, cut: RewindCut) {
    const messages = await store.loadMessages(threadId);
    const messageId = "toMessageId" in cut ? cut.toMessageId : cut.beforeMessageId;
    const index = messages.findIndex((message) => message.id === messageId);
    if (index < 0)
      throw new PaiError("UNKNOWN_MESSAGE", `thread "${threadId}" has no message "${messageId}" (now)`, {
        details: { threadId, messageId },
      });
    if ("beforeMessageId" in cut && messages[index]?.role !== "user")
      throw new PaiError(
        "INVALID_ARGUMENT",
        `message "${messageId}" of thread "${threadId}" is not the user's: only a user message is replaced`,
        { details: { threadId, messageId } },
      );
    const end = "toMessageId" in cut ? index + 1 : index;
    return { kept: messages.slice(0, end), dropped: messages.slice(end) };
  }

  /** Restores `threadId`'s resources (in scope `runId`) to the checkpoints chosen for `kept`. */
  async function restoreResources(
    scope: { runId: string; threadId: string; identityKey: string },
    chosen: Map<string, CheckpointRecord | undefined>,
  ): Promise<RewindResult["restored"]> {
    if (!blobs) return [];
    const restored: RewindResult["restored"] = [];
    const signal = AbortSignal.timeout(120_000);
    for (const [capability, checkpoint] of chosen) {
      const resource = await capabilities.awake(capability, { ...scope, signal });
      if (!resource.checkpoints) continue;
      // Before the thread's first checkpoint its resource was new: empty.
      const digest =
        checkpoint?.manifestDigest ??
        (await storeWorkspaceManifest({ store: blobs, manifest: { version: 1, entries: [] } }))
          .manifestDigest;
      const stoppedProcesses = (await resource.checkpoints.stopProcesses?.({ signal })) ?? [];
      const outcome = await resource.checkpoints.restore(digest, { store: blobs, signal });
      restored.push({
        capability,
        ...(checkpoint ? { checkpointId: checkpoint.id } : {}),
        stoppedProcesses,
        ...outcome,
      });
    }
    return restored;
  }

  /**
   * Rewinds `threadId` to `cut`, recording the run `runId`; the caller holds the thread's reservation (for its own run
   * id, which may be another: the run that follows at once).
   */
  async function rewindReserved(request: {
    threadId: string;
    cut: RewindCut;
    identityKey: string;
    runId: string;
  }): Promise<RewindResult> {
    const { threadId, runId, identityKey } = request;
    const startedAt = Date.now();
    const thread = await store.getThread(threadId);
    if (!thread) throw new PaiError("NOT_FOUND", `no thread "${threadId}"`);
    const { kept, dropped } = await split(threadId, request.cut);
    const checkpoints = await store.listCheckpoints(threadId);
    let restored: RewindResult["restored"];
    try {
      restored = await restoreResources({ runId, threadId, identityKey }, checkpointsAt(checkpoints, kept));
    } finally {
      await capabilities.endRun(runId);
    }
    const droppedIds = new Set(dropped.map((message) => message.id));
    const cancelledActionIds = await cancelActionsOf(store, threadId, dropped);
    const later = checkpoints.filter((checkpoint) => droppedIds.has(checkpoint.messageId));
    if (later.length > 0)
      await store.deleteCheckpoints(
        threadId,
        later.map((checkpoint) => checkpoint.id),
      );
    const toMessageId = kept.at(-1)?.id ?? null;
    await store.commitRun({
      thread: { ...thread, updatedAt: Date.now() },
      messages: kept,
      run: {
        id: runId,
        threadId,
        agentId: thread.agentId,
        status: "completed",
        ownerId: options.ownerId,
        startedAt,
        endedAt: Date.now(),
        rewind: {
          kind: "rewind",
          toMessageId,
          droppedCount: dropped.length,
          stoppedProcesses: restored.flatMap((resource) => resource.stoppedProcesses),
        },
      },
    });
    return {
      threadId,
      runId,
      toMessageId,
      droppedMessageIds: [...droppedIds],
      cancelledActionIds,
      restored,
    };
  }

  async function rewind(request: RewindThreadOptions): Promise<RewindResult> {
    const { threadId, toMessageId } = request;
    await access.requireThread(threadId, request.identity);
    const runId = generateId();
    const reservation = await runs.reserve(
      threadId,
      runId,
      `thread "${threadId}" has a run in progress: stop it before rewinding`,
    );
    try {
      const identityKey = options.identityKeyOf(request.identity);
      return await rewindReserved({ threadId, cut: { toMessageId }, identityKey, runId });
    } finally {
      await reservation.releaseUnlessStarted();
    }
  }

  /**
   * Rewinds `threadId` to just before `beforeMessageId` (it is dropped too), for a run that replaces it: the caller
   * has checked the identity and holds the thread's reservation, under which that run starts next.
   */
  function rewindBefore(request: {
    threadId: string;
    beforeMessageId: string;
    identityKey: string;
  }): Promise<RewindResult> {
    const { threadId, beforeMessageId, identityKey } = request;
    return rewindReserved({ threadId, cut: { beforeMessageId }, identityKey, runId: generateId() });
  }

  async function fork(request: ForkThreadOptions): Promise<ForkResult> {
    const { threadId } = request;
    await access.requireThread(threadId, request.identity);
    const thread = await store.getThread(threadId);
    if (!thread) throw new PaiError("NOT_FOUND", `no thread "${threadId}"`);
    const messages = await store.loadMessages(threadId);
    const atMessageId = request.atMessageId ?? messages.at(-1)?.id;
    if (atMessageId === undefined)
      throw new PaiError("UNKNOWN_MESSAGE", `thread "${threadId}" has no messages to fork`);
    const { kept, dropped } = await split(threadId, { toMessageId: atMessageId });
    const chosen = checkpointsAt(await store.listCheckpoints(threadId), kept);
    const forkId = generateId();
    const runId = generateId();
    const now = Date.now();
    const reservation = await runs.reserve(forkId, runId, `thread "${forkId}" is busy`);
    try {
      const forked = { ...thread, id: forkId, createdAt: now, updatedAt: now };
      await store.ensureThread(forked);
      const identityKey = options.identityKeyOf(request.identity);
      let restored: ForkResult["restored"];
      try {
        restored = await restoreResources({ runId, threadId: forkId, identityKey }, chosen);
      } finally {
        await capabilities.endRun(runId);
      }
      for (const checkpoint of chosen.values()) {
        if (checkpoint)
          await store.putCheckpoint({ ...checkpoint, id: generateId(), threadId: forkId, createdAt: now });
      }
      await store.commitRun({
        thread: forked,
        messages: kept,
        run: {
          id: runId,
          threadId: forkId,
          agentId: thread.agentId,
          status: "completed",
          ownerId: options.ownerId,
          startedAt: now,
          endedAt: Date.now(),
          rewind: {
            kind: "fork",
            toMessageId: atMessageId,
            droppedCount: dropped.length,
            forkedFrom: threadId,
            stoppedProcesses: restored.flatMap((resource) => resource.stoppedProcesses),
          },
        },
      });
      return { threadId: forkId, forkedFrom: { threadId, messageId: atMessageId }, restored };
    } finally {
      await reservation.releaseUnlessStarted();
    }
  }

  return { rewind, rewindBefore, fork };
}

/** Cancels the pending actions whose calls are in `dropped`; their ids. */
async function cancelActionsOf(
  store: ThreadStore,
  threadId: string,
  dropped: readonly UIMessage[],
): Promise<string[]> {
  const callIds = new Set(
    dropped.flatMap((message) =>
      message.parts.flatMap((part) =>
        "toolCallId" in part && typeof part.toolCallId === "string" ? [part.toolCallId] : [],
      ),
    ),
  );
  const cancelled: string[] = [];
  for (const action of await store.listPendingActions({ threadId, status: "pending" })) {
    if (!callIds.has(action.toolCallId)) continue;
    const { changed } = await store.settlePendingAction(action.id, "pending", {
      status: "cancelled",
      settledAt: Date.now(),
    });
    if (!changed) continue;
    countActionSettled();
    cancelled.push(action.id);
  }
  return cancelled;
}
