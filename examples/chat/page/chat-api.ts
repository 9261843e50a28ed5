import type { PublicPendingAction, RunRecord, RunStatus } from "@pai/core";
import { PaiResponseError } from "@pai/react";
import type { ChatMessage } from "./chat-message.ts";

/** Base path of PAI's HTTP handler. */
export const API = "/api";

/** A thread in the sidebar. */
export interface ThreadSummary {
  id: string;
  title: string | undefined;
  updatedAt: number;
  /** A tool call of the thread waits for an approval (or another answer). */
  waiting: boolean;
  /** Its newest run was stopped. */
  stopped: boolean;
  /** The last approval it asked for was denied. */
  denied: boolean;
}

/** How each run of a thread ended (or `running`), by run id. */
export type RunStatuses = Readonly<Record<string, RunStatus>>;

/** A stored thread as the page shows it. */
export interface ThreadState {
  /** Its name in the thread list (unset: untitled). */
  title: string | undefined;
  messages: ChatMessage[];
  runs: RunStatuses;
  /** The run in progress, if any. */
  activeRunId: string | null;
  /** Actions waiting for an answer. */
  pendingActions: number;
}

/**
 * The caller's threads, newest first (`GET /api/threads`), each marked when it waits for an answer, was stopped
 * or had an approval denied.
 */
export async function listThreads(signal?: AbortSignal): Promise<ThreadSummary[]> {
  const response = await fetch(`${API}/threads`, signal ? { signal } : {});
  if (!response.ok) throw new Error(`listing threads failed: ${response.status}`);
  const body = (await response.json()) as {
    threads: Array<{
      id: string;
      title?: string;
      updatedAt: number;
      pendingActionCount: number;
      lastRunStatus: RunStatus | null;
      lastAnswer: PublicPendingAction["status"] | null;
    }>;
  };
  return body.threads.map((thread) => ({
    id: thread.id,
    title: thread.title,
    updatedAt: thread.updatedAt,
    waiting: thread.pendingActionCount > 0,
    stopped: thread.lastRunStatus === "cancelled",
    denied: thread.pendingActionCount === 0 && thread.lastAnswer === "denied",
  }));
}

/** Renames a thread (`PATCH /api/threads/:id`); an empty title clears it. */
export async function renameThread(threadId: string, title: string, signal?: AbortSignal): Promise<void> {
  const response = await fetch(`${API}/threads/${encodeURIComponent(threadId)}`, {
    method: "PATCH",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ title }),
    ...(signal ? { signal } : {}),
  });
  if (!response.ok) throw new Error(`renaming the chat failed: ${response.status}`);
}

/** Deletes a thread and everything on it, its sandbox included (`DELETE /api/threads/:id`). */
export async function deleteThread(threadId: string, signal?: AbortSignal): Promise<void> {
  const response = await fetch(`${API}/threads/${encodeURIComponent(threadId)}`, {
    method: "DELETE",
    ...(signal ? { signal } : {}),
  });
  if (!response.ok) throw new Error(`deleting the chat failed: ${response.status}`);
}

/** Longest title the server takes (`PATCH /api/threads/:id`). */
const MAX_TITLE_LENGTH = 200;

/** What a fork's title adds to the original's. */
const FORK_SUFFIX = " (fork)";

/** What {@link forkThread} takes. */
export interface ForkThreadOptions {
  threadId: string;
  /** The last message the fork keeps. */
  atMessageId: string;
  signal?: AbortSignal;
}

/**
 * Forks a thread at one of its messages (`POST /api/threads/:id/fork`): a new thread with the history up to there and
 * the sandbox as it was then, the original untouched. The fork is named after the original, "(fork)" added (when
 * renaming fails it keeps the original's name). Returns the new thread's id; a refusal throws a `PaiResponseError`
 * with the server's code and message.
 */
export async function forkThread({ threadId, atMessageId, signal }: ForkThreadOptions): Promise<string> {
  const response = await fetch(`${API}/threads/${encodeURIComponent(threadId)}/fork`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ atMessageId }),
    ...(signal ? { signal } : {}),
  });
  if (!response.ok) throw await PaiResponseError.fromResponse(response);
  const { threadId: forkId } = (await response.json()) as { threadId: string };
  try {
    const { title } = await loadThread(forkId, signal);
    const name = `${(title ?? "Untitled").slice(0, MAX_TITLE_LENGTH - FORK_SUFFIX.length)}${FORK_SUFFIX}`;
    await renameThread(forkId, name, signal);
  } catch {
    // the fork is made: a failed rename leaves it the original's name
  }
  return forkId;
}

/** A stored thread (`GET /api/threads/:id`); empty for a thread not created yet. */
export async function loadThread(threadId: string, signal?: AbortSignal): Promise<ThreadState> {
  const empty: ThreadState = {
    title: undefined,
    messages: [],
    runs: {},
    activeRunId: null,
    pendingActions: 0,
  };
  if (isUnsentThread(threadId)) return empty;
  const response = await fetch(`${API}/threads/${encodeURIComponent(threadId)}`, signal ? { signal } : {});
  if (response.status === 404) return empty;
  if (!response.ok) throw new Error(`loading the thread failed: ${response.status}`);
  const body = (await response.json()) as {
    thread: { title?: string };
    messages: ChatMessage[];
    runs: RunRecord[];
    activeRunId: string | null;
    pendingActions: PublicPendingAction[];
  };
  return {
    title: body.thread.title,
    messages: body.messages,
    runs: Object.fromEntries(body.runs.map((run) => [run.id, run.status])),
    activeRunId: body.activeRunId,
    pendingActions: body.pendingActions.length,
  };
}

/** The stored thread once its run in progress has ended (after Stop the server needs a moment to store it). */
export async function loadSettledThread(threadId: string, signal?: AbortSignal): Promise<ThreadState> {
  for (let attempt = 0; ; attempt++) {
    const state = await loadThread(threadId, signal);
    if (state.activeRunId === null || attempt >= 50) return state;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** How the run that wrote `message` ended, from its `metadata.runId`. */
export function runStatusOf(message: ChatMessage, runs: RunStatuses): RunStatus | undefined {
  const runId = message.metadata?.runId;
  return runId === undefined ? undefined : runs[runId];
}

const unsent = new Set<string>();

/** A fresh thread id (the server creates the thread with the first message). */
export function newThreadId(): string {
  const id = crypto.randomUUID();
  unsent.add(id);
  return id;
}

/** Whether a thread was made on this page and has no message yet (nothing to load, no run to rejoin). */
export function isUnsentThread(threadId: string): boolean {
  return unsent.has(threadId);
}

/** The thread's first message went out: from now on it lives on the server. */
export function markThreadSent(threadId: string): void {
  unsent.delete(threadId);
}
