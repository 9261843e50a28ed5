import type { JournalEntry } from "../threads/thread-store.ts";

/** A top-level call's journal while it runs: what it replays, and what it records for the next suspension. */
export interface CallJournal {
  /** The entry of the call at `key`, marking it reached. */
  take(key: string): JournalEntry | undefined;
  /** Records `entry`, replacing the one at its key. */
  put(entry: JournalEntry): void;
  /** Forgets the entry at `key`. */
  drop(key: string): void;
  /** Answered entries the run never reached: their answers would be lost. */
  unreachedAnswers(): JournalEntry[];
  /** Every entry, in key order: what a suspension stores. */
  entries(): JournalEntry[];
}

/** A journal over the entries a suspension stored (none for a call's first run). */
export function createCallJournal(entries: readonly JournalEntry[] = []): CallJournal {
  const byKey = new Map(entries.map((entry) => [entry.key, entry]));
  const reached = new Set<string>();
  return {
    take(key) {
      reached.add(key);
      return byKey.get(key);
    },
    put(entry) {
      byKey.set(entry.key, entry);
    },
    drop(key) {
      byKey.delete(key);
    },
    unreachedAnswers: () =>
      [...byKey.values()].filter((entry) => entry.state === "answered" && !reached.has(entry.key)),
    entries: () => [...byKey.values()].sort((a, b) => compareKeys(a.key, b.key)),
  };
}

/** Orders keys as calls happened: `""` first, then by index at each level (`"2"` before `"10"`). */
function compareKeys(a: string, b: string): number {
  const left = a === "" ? [] : a.split(".").map(Number);
  const right = b === "" ? [] : b.split(".").map(Number);
  for (let index = 0; index < Math.min(left.length, right.length); index++) {
    const difference = left[index]! - right[index]!;
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}
