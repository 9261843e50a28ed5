import type { ContainerLease, LeaseAcquisition } from "./container-lease.ts";
import { poolClosedError } from "./container-pool-errors.ts";
import { createLatencyWindow } from "./latency-window.ts";
import type { PoolContainer } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import { PoolError } from "./pool-error.ts";
import type { PoolRoom } from "./pool-room.ts";
import type { WarmQueue, WarmSlot } from "./warm-queue.ts";

/** Options of `acquire`. */
export interface AcquireOptions {
  /** Who the container is for (e.g. `sandbox:thread:<id>`); recorded by the pool and on the lease. */
  leaseKey: string;
  /**
   * Gives up waiting. Rejects with the signal's reason; a container that arrives for the abandoned call is
   * handed to the next waiter or kept warm if the pool is short of `min`, and removed otherwise — it never
   * leaks and was never exposed.
   */
  signal?: AbortSignal;
}

/** The single-engine pool's `acquire`, and what it knows of the calls. Internal. */
export interface ContainerAcquirer<STATE> {
  /** See `ContainerPool.acquire`. */
  acquire(options: AcquireOptions): Promise<ContainerLease<STATE>>;
  /** `acquire` calls waiting. */
  readonly pending: number;
  /** Fails every waiting `acquire` with `error` (the pool closes). */
  rejectWaiting(error: unknown): void;
  /** Percentiles of the acquire latency over the last 512 acquires (zeros before the first). */
  latency(): { p50: number; p95: number };
}

/** What acquiring needs of the rest of the pool. */
export interface AcquirerParts<STATE> {
  core: PoolCore<STATE>;
  queue: WarmQueue<STATE>;
  room: PoolRoom;
  /** Starts the pool (once). */
  start(): Promise<void>;
  /** Leases a container the pool now holds. */
  lease(
    container: PoolContainer<STATE>,
    leaseKey: string,
    adopted: boolean,
    acquisition?: LeaseAcquisition,
  ): ContainerLease<STATE>;
  /** The error of an `acquire` past `acquireTimeoutMs`. */
  exhaustedError(): PoolError;
}

/** Makes the `acquire` of a single-engine pool: a warm container from the queue, handed out as a lease. */
export function createContainerAcquirer<STATE>({
  core,
  queue,
  room,
  start,
  lease,
  exhaustedError,
}: AcquirerParts<STATE>): ContainerAcquirer<STATE> {
  const { poolId } = core.settings;
  const waiters = new Set<{ reject: (error: unknown) => void }>();
  const latency = createLatencyWindow();

  async function acquire({ leaseKey, signal }: AcquireOptions): Promise<ContainerLease<STATE>> {
    if (typeof leaseKey !== "string" || leaseKey === "") {
      throw new TypeError("acquire: leaseKey must be a non-empty string");
    }
    if (core.closed) throw poolClosedError(poolId);
    signal?.throwIfAborted();
    const startedAt = performance.now();
    await start();
    if (core.closed) throw poolClosedError(poolId);
    signal?.throwIfAborted();

    return new Promise<ContainerLease<STATE>>((resolve, reject) => {
      let settled = false;
      const waiter = { reject: (error: unknown) => settle(() => reject(error)) };
      const onAbort = () => settle(() => reject(signal?.reason));
      function settle(action: () => void) {
        if (settled) return;
        settled = true;
        waiters.delete(waiter);
        signal?.removeEventListener("abort", onAbort);
        action();
      }
      waiters.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });

      const served = queue.borrow();
      room.makeRoom();
      served.then(
        (slot) => {
          if (slot.container === undefined || settled || core.closed) {
            // Never exposed: it may stay warm (see `AcquireOptions.signal`).
            queue.abandon(slot);
            settle(() => reject(poolClosedError(poolId)));
            return;
          }
          const leased = handOut(slot, slot.container, leaseKey, startedAt);
          settle(() => resolve(leased));
        },
        (error: unknown) => settle(() => reject(borrowError(error))),
      );
    });
  }

  /** Leases the slot's container and takes it out of the queue for good: the lease alone decides when it goes. */
  function handOut(
    slot: WarmSlot<STATE>,
    container: PoolContainer<STATE>,
    leaseKey: string,
    startedAt: number,
  ): ContainerLease<STATE> {
    const latencyMs = performance.now() - startedAt;
    const acquisition: LeaseAcquisition = {
      warm: container.made !== undefined && container.made.readyAt <= startedAt,
      waitMs: Math.round(latencyMs * 100) / 100,
      createMs: container.made?.createMs,
    };
    const leased = lease(container, leaseKey, false, acquisition);
    queue.takeOut(slot); // generic-pool refills to `min` idle containers right away
    latency.add(latencyMs);
    core.events.emit("acquire", {
      containerId: container.id,
      leaseKey,
      latencyMs: Math.round(latencyMs * 100) / 100,
      adopted: false,
    });
    return leased;
  }

  /** What a failed borrow means to the caller: the pool closed, no container in time, or generic-pool's failure. */
  function borrowError(error: unknown): unknown {
    if (core.closed) return poolClosedError(poolId);
    if ((error as { name?: unknown })?.name === "TimeoutError") return exhaustedError();
    return new PoolError("CONTAINER_FAILED", `acquire failed: ${String(error)}`, { cause: error });
  }

  return {
    acquire,
    get pending() {
      return waiters.size;
    },
    rejectWaiting(error) {
      for (const waiter of [...waiters]) waiter.reject(error);
    },
    latency() {
      const { p50, p95 } = latency.summary();
      return { p50, p95 };
    },
  };
}
