import { sleep } from "./sleep.ts";

/** Options of the backoff between failing container creates. */
export interface CreateBackoffOptions {
  /**
   * Delay after the first failure; it doubles with each further consecutive failure.
   * @default 250
   */
  initialMs?: number;
  /**
   * Upper bound of the delay.
   * @default 10000
   */
  maxMs?: number;
}

/** Pool-wide pacing of create attempts. Internal. */
export interface CreateBackoff {
  /**
   * Waits until an attempt may start. While creates succeed it returns at once; after a failure the attempts of
   * the whole pool are spaced by the current delay (one probe at a time), whatever the number of callers.
   */
  turn(signal: AbortSignal): Promise<void>;
  failed(): void;
  succeeded(): void;
  readonly consecutiveFailures: number;
}

/** Creates the exponential backoff the pool applies to failing creates. */
export function createCreateBackoff(options: CreateBackoffOptions = {}): CreateBackoff {
  const initialMs = Math.max(1, options.initialMs ?? 250);
  const maxMs = Math.max(initialMs, options.maxMs ?? 10_000);
  let failures = 0;
  let nextAttemptAt = 0;
  const delay = () => Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 30));
  return {
    get consecutiveFailures() {
      return failures;
    },
    async turn(signal) {
      for (;;) {
        signal.throwIfAborted();
        if (failures === 0) return;
        const now = Date.now();
        if (now >= nextAttemptAt) {
          // Reserve this slot: the next caller waits a full delay after it.
          nextAttemptAt = now + delay();
          return;
        }
        await sleep(nextAttemptAt - now, signal);
      }
    },
    failed() {
      failures++;
      nextAttemptAt = Math.max(nextAttemptAt, Date.now() + delay());
    },
    succeeded() {
      failures = 0;
      nextAttemptAt = 0;
    },
  };
}
