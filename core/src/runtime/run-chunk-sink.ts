import type { ThreadStore } from "../threads/thread-store.ts";

/**
 * Stores a run's stream chunks as they are sent, so that a process other than the one running it can follow the
 * run (`runtime.followRun`). Writes go one at a time; chunks sent meanwhile go together in the next write, so a
 * fast stream costs a few writes, not one per chunk.
 */
export interface RunChunkSink {
  /** Queues one chunk (stored once the sink has started). */
  push(chunk: unknown): void;
  /** Starts storing (the run is recorded): queued chunks go now. */
  start(): void;
  /** Stores what is queued and resolves once nothing is being written: call it before the run's final commit. */
  close(): Promise<void>;
}

/** Creates the sink of one run. A write that fails is reported once; the run's later chunks are not stored. */
export function createRunChunkSink(options: {
  store: ThreadStore;
  runId: string;
  onError: (error: unknown) => void;
}): RunChunkSink {
  const { store, runId, onError } = options;
  let queued: unknown[] = [];
  let nextSeq = 0;
  let writing: Promise<void> | undefined;
  let started = false;
  let failed = false;

  const flush = () => {
    if (!started || failed || writing || queued.length === 0) return;
    const chunks = queued;
    queued = [];
    const seq = nextSeq;
    nextSeq += chunks.length;
    writing = store
      .appendRunChunks({ runId, seq, chunks })
      .catch((error: unknown) => {
        // A gap would show followers a broken stream: stop storing; they end when the run does.
        failed = true;
        onError(error);
      })
      .finally(() => {
        writing = undefined;
        flush();
      });
  };

  return {
    push(chunk) {
      if (failed) return;
      queued.push(chunk);
      flush();
    },
    start() {
      started = true;
      flush();
    },
    async close() {
      started = true;
      flush();
      while (writing) await writing;
      queued = [];
    },
  };
}
