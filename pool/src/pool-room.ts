import type { ContainerCreation } from "./container-creation.ts";
import { poolClosedError } from "./container-pool-errors.ts";
import type { PoolContainer } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import type { PoolError } from "./pool-error.ts";
import type { WarmQueue } from "./warm-queue.ts";

/**
 * Room within `max` (the core's `capacity`: one permit per running container) for whoever waits for it: an
 * `acquire` that no warm or coming container serves, and a wake. Room is made by hibernating the least recently
 * used idle leases. Internal.
 */
export interface PoolRoom {
  /**
   * Waits for room for a wake, ahead of the pool's refills, making room meanwhile.
   * @throws PoolError `POOL_EXHAUSTED` past `acquireTimeoutMs`, `POOL_CLOSED`, or the signal's reason.
   */
  waitForRoom(signal: AbortSignal | undefined): Promise<void>;
  /**
   * Frees room for whoever waits: hibernates the least recently used idle leases; for a wake with none left,
   * removes a warm container (the pool refills it later).
   */
  makeRoom(): void;
}

/** What the room needs of the rest of the pool. */
export interface PoolRoomParts<STATE> {
  core: PoolCore<STATE>;
  queue: WarmQueue<STATE>;
  creation: ContainerCreation<STATE>;
  /** Hibernates a lease's container to make room (see `Hibernation.hibernate`). */
  hibernate(container: PoolContainer<STATE>): Promise<void>;
  /** The error of a wait past `acquireTimeoutMs`. */
  exhaustedError(): PoolError;
}

/** Makes the room keeper of a single-engine pool. */
export function createPoolRoom<STATE>({
  core,
  queue,
  creation,
  hibernate,
  exhaustedError,
}: PoolRoomParts<STATE>): PoolRoom {
  const { capacity, containers } = core;
  const { acquireTimeoutMs, max, poolId } = core.settings;
  /** Wakes waiting for room. */
  let pendingWakes = 0;
  /** Hibernations under way to make room: each frees a permit when done. */
  let roomHibernations = 0;

  async function waitForRoom(signal: AbortSignal | undefined): Promise<void> {
    const deadline = AbortSignal.timeout(acquireTimeoutMs);
    const waitSignal = AbortSignal.any([deadline, core.closeSignal, ...(signal ? [signal] : [])]);
    pendingWakes++;
    try {
      const granted = capacity.acquire(waitSignal, { first: true });
      makeRoom();
      await granted;
    } catch (error) {
      if (core.closed) throw poolClosedError(poolId);
      signal?.throwIfAborted();
      if (deadline.aborted) throw exhaustedError();
      throw error;
    } finally {
      pendingWakes--;
    }
  }

  function makeRoom(): void {
    if (core.closed) return;
    const unservedAcquires = Math.max(0, queue.waiting - queue.available - creation.permitted);
    let needed = unservedAcquires + pendingWakes - roomHibernations;
    if (needed <= 0 || capacity.inUse < max) return;
    const candidates = [...containers.values()]
      .filter((c) => c.phase === "leased" && !c.busy && !c.hibernated && !c.transition && c.permit)
      .sort((a, b) => a.lastUsedAt - b.lastUsedAt);
    for (const container of candidates) {
      if (needed <= 0) return;
      needed--;
      roomHibernations++;
      void hibernate(container).finally(() => roomHibernations--);
    }
    if (pendingWakes > 0 && needed > 0 && queue.available > queue.waiting) {
      // A warm container gives its permit to the wake (first in the queue).
      queue.giveUpOne();
    }
  }

  return { waitForRoom, makeRoom };
}
