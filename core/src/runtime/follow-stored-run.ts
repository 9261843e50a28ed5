import type { UIMessageChunk } from "ai";
import type { ThreadStore } from "../threads/thread-store.ts";

/** How often a follower reads again when the store wakes it (a fallback) or cannot (SQLite). */
const POLL_WITH_WATCH_MS = 1000;
const POLL_WITHOUT_WATCH_MS = 100;

/**
 * The stream of a run another process is running, read from the store: every chunk stored so far, then the
 * rest as they are stored, until the run's thread lease is no longer the run's (it ended, or its process died and
 * the lease lapsed). Woken by the store's `watchRun` where it has one, else by polling.
 */
export function followStoredRun(options: {
  store: ThreadStore;
  threadId: string;
  runId: string;
}): ReadableStream<UIMessageChunk> {
  const { store, threadId, runId } = options;
  const pollMs = store.watchRun ? POLL_WITH_WATCH_MS : POLL_WITHOUT_WATCH_MS;
  let afterSeq = -1;
  let over = false;
  let cancelled = false;
  let changed = false;
  let wake: (() => void) | undefined;
  let unwatch: (() => void) | undefined;

  /** Resolves on the next change the store tells of, or after `pollMs`. */
  const nextChange = () =>
    new Promise<void>((resolve) => {
      if (changed) return resolve();
      const timer = setTimeout(resolve, pollMs);
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    }).finally(() => {
      wake = undefined;
    });

  return new ReadableStream<UIMessageChunk>({
    start() {
      unwatch = store.watchRun?.(runId, () => {
        changed = true;
        wake?.();
      });
    },
    async pull(controller) {
      try {
        for (;;) {
          changed = false;
          const chunks = await store.listRunChunks(runId, { afterSeq });
          if (cancelled) return;
          if (chunks.length > 0) {
            for (const record of chunks) controller.enqueue(record.chunk as UIMessageChunk);
            afterSeq = chunks.at(-1)!.seq;
            return;
          }
          if (over) break;
          // The run stores its last chunks before it gives its lease up: once the lease is gone, one more read
          // has everything.
          if ((await store.getThreadLease(threadId))?.runId !== runId) over = true;
          else await nextChange();
          if (cancelled) return;
        }
        unwatch?.();
        controller.close();
      } catch (error) {
        unwatch?.();
        if (!cancelled) controller.error(error);
      }
    },
    cancel() {
      cancelled = true;
      unwatch?.();
      wake?.();
    },
  });
}
