/** A counting semaphore whose waits can be aborted. Internal. */
export interface Semaphore {
  /**
   * Waits for a permit. Rejects with the signal's reason when `signal` aborts first. `first` queues the wait
   * ahead of the others (a woken lease goes before the pool's own refills).
   */
  acquire(signal?: AbortSignal, options?: { first?: boolean }): Promise<void>;
  /** Takes a permit even when none is free (the count may go above the limit). */
  forceAcquire(): void;
  release(): void;
  readonly inUse: number;
  readonly waiting: number;
}

/** Creates a {@link Semaphore} with `permits` permits. */
export function createSemaphore(permits: number): Semaphore {
  let inUse = 0;
  const waiters: Array<{ grant: () => void }> = [];
  const pump = () => {
    while (inUse < permits && waiters.length > 0) {
      const waiter = waiters.shift()!;
      inUse++;
      waiter.grant();
    }
  };
  return {
    get inUse() {
      return inUse;
    },
    get waiting() {
      return waiters.length;
    },
    acquire(signal, options) {
      if (signal?.aborted) return Promise.reject(signal.reason);
      if (inUse < permits && waiters.length === 0) {
        inUse++;
        return Promise.resolve();
      }
      return new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          const index = waiters.indexOf(waiter);
          if (index >= 0) waiters.splice(index, 1);
          reject(signal?.reason);
        };
        const waiter = {
          grant: () => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
          },
        };
        if (options?.first) waiters.unshift(waiter);
        else waiters.push(waiter);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
    forceAcquire() {
      inUse++;
    },
    release() {
      if (inUse > 0) inUse--;
      pump();
    },
  };
}
