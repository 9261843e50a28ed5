import { PaiError } from "../errors/pai-error.ts";
import type { ThreadStore } from "../threads/thread-store.ts";

/** Options of {@link createRunStopPoller}. */
export interface RunStopPollerOptions {
  store: ThreadStore;
  /** How often the store is read while a run is watched. */
  intervalMs: number;
  /** A stop was asked for `runId` (called once per run). */
  onStopRequested(runId: string): void;
  /** A failed read (the next tick reads again). */
  onError(error: unknown): void;
}

/**
 * Watches the store for stops other processes record ({@link ThreadStore.requestRunStop}) for the runs this
 * process runs. Cheap when idle: its timer runs only while a run is watched, and each tick is one read about those
 * runs only, never overlapping the previous one. The timer holds the process open while it runs (a run waiting for
 * nothing but a Stop is work in progress); it is cleared once no run is watched and on `close()`.
 */
export interface RunStopPoller {
  /** Watches `runId` (a run this process has started) until it is stopped or {@link delete}d. */
  add(runId: string): void;
  /** Stops watching `runId` (it ended). */
  delete(runId: string): void;
  /** Stops the timer and waits for a read under way. */
  close(): Promise<void>;
}

/** Creates the poller; it holds no timer until a run is added. */
export function createRunStopPoller(options: RunStopPollerOptions): RunStopPoller {
  const { store, intervalMs, onStopRequested, onError } = options;
  if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
    throw new PaiError(
      "INVALID_ARGUMENT",
      `stopPollIntervalMs must be a positive number of milliseconds, not ${intervalMs}`,
    );
  }
  const watched = new Set<string>();
  let timer: ReturnType<typeof setInterval> | undefined;
  let reading: Promise<void> | undefined;
  let closed = false;

  const disarmWhenIdle = () => {
    if (watched.size > 0 || !timer) return;
    clearInterval(timer);
    timer = undefined;
  };

  const read = async () => {
    for (const runId of await store.listRunStopRequests([...watched])) {
      if (!watched.delete(runId)) continue;
      onStopRequested(runId);
    }
    disarmWhenIdle();
  };

  const tick = () => {
    if (reading || watched.size === 0) return;
    reading = read()
      .catch(onError)
      .finally(() => {
        reading = undefined;
      });
  };

  return {
    add(runId) {
      if (closed) return;
      watched.add(runId);
      if (timer) return;
      timer = setInterval(tick, intervalMs);
    },
    delete(runId) {
      watched.delete(runId);
      disarmWhenIdle();
    },
    async close() {
      closed = true;
      watched.clear();
      disarmWhenIdle();
      await reading;
    },
  };
}
