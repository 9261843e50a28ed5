import type { ThreadRecord } from "../thread-store.ts";

// The orders the memory store lists records in: those of the SQL stores' queries.

/** Newest `updatedAt` first; ties by newest `createdAt`, then by id descending (as the SQLite store). */
export function newestFirst(a: ThreadRecord, b: ThreadRecord): number {
  return b.updatedAt - a.updatedAt || b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);
}

/** Oldest `startedAt` first (runs, owners). */
export function byStartedAt(a: { startedAt: number }, b: { startedAt: number }): number {
  return a.startedAt - b.startedAt;
}

/** Oldest `createdAt` first (pending actions, leases). */
export function byCreatedAt(a: { createdAt: number }, b: { createdAt: number }): number {
  return a.createdAt - b.createdAt;
}
