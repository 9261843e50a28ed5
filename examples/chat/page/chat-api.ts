import type { ChatMessage } from "./chat-message.ts";

/** Base path of PAI's HTTP handler. */
export const API = "/api";

/** A thread in the sidebar. */
export interface ThreadSummary {
  id: string;
  title: string | undefined;
  updatedAt: number;
}

/** The caller's threads, newest first (`GET /api/threads`). */
export async function listThreads(signal?: AbortSignal): Promise<ThreadSummary[]> {
  const response = await fetch(`${API}/threads`, signal ? { signal } : {});
  if (!response.ok) throw new Error(`listing threads failed: ${response.status}`);
  const body = (await response.json()) as { threads: ThreadSummary[] };
  return body.threads;
}

/** A stored thread's messages (`GET /api/threads/:id`); empty for a thread not created yet. */
export async function loadThreadMessages(threadId: string, signal?: AbortSignal): Promise<ChatMessage[]> {
  if (isUnsentThread(threadId)) return [];
  const response = await fetch(`${API}/threads/${encodeURIComponent(threadId)}`, signal ? { signal } : {});
  if (response.status === 404) return [];
  if (!response.ok) throw new Error(`loading the thread failed: ${response.status}`);
  const body = (await response.json()) as { messages: ChatMessage[] };
  return body.messages;
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
