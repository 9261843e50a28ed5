import type { ContainerAgentError } from "./container-agent-error.ts";

/** How long to wait before starting again something of this process that stopped unexpectedly. */
export interface RestartBackoffOptions {
  /** The wait before starting it again after a stop. @default 100 */
  initialDelayMs?: number;
  /** The wait doubles with each stop, up to this. @default 10000 */
  maxDelayMs?: number;
  /** A run that was up this long before it stopped was healthy: the wait starts over from `initialDelayMs`. @default 60000 */
  resetAfterMs?: number;
}

/** Restarts of one thing, one at a time, each after a wait; see {@link createRestartSchedule}. */
export interface RestartSchedule {
  /**
   * Schedules a restart after the next wait, for a run that stopped having been up since `upSince` (a
   * `Date.now()`; `undefined` when it never came up), and tells `onError` once: `describe(wait)` says what
   * stopped and when it starts again. Replaces a restart already waiting.
   */
  schedule(upSince: number | undefined, describe: (waitMs: number) => ContainerAgentError): void;
  /** Cancels the restart that waits, if one does. */
  cancel(): void;
}

/**
 * Restarts with a growing wait: 100 ms after a stop, doubling with each stop up to 10 s, from 100 ms again after
 * a run that stayed up a minute (see {@link RestartBackoffOptions}). The wait never keeps the process alive.
 * `onError` (by default `process.emitWarning`) hears of each stop; if it throws, that becomes a warning.
 */
export function createRestartSchedule(options: {
  restart: () => void;
  backoff?: RestartBackoffOptions | undefined;
  onError?: ((error: ContainerAgentError) => void) | undefined;
}): RestartSchedule {
  const initialDelayMs = options.backoff?.initialDelayMs ?? 100;
  const maxDelayMs = options.backoff?.maxDelayMs ?? 10_000;
  const resetAfterMs = options.backoff?.resetAfterMs ?? 60_000;
  const onError = options.onError ?? ((error: ContainerAgentError) => process.emitWarning(error));
  let delayMs = initialDelayMs;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const cancel = () => {
    clearTimeout(timer);
    timer = undefined;
  };

  return {
    schedule(upSince, describe) {
      cancel();
      if (upSince !== undefined && Date.now() - upSince >= resetAfterMs) delayMs = initialDelayMs;
      const wait = delayMs;
      delayMs = Math.min(delayMs * 2, maxDelayMs);
      timer = setTimeout(() => {
        timer = undefined;
        options.restart();
      }, wait);
      timer.unref();
      try {
        onError(describe(wait));
      } catch (thrown) {
        process.emitWarning(`@pai/container-agent: onError threw: ${String(thrown)}`);
      }
    },
    cancel,
  };
}
