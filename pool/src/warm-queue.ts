import type { Factory, Pool } from "generic-pool";
import genericPool from "generic-pool";
import type { ContainerCreation } from "./container-creation.ts";
import type { ContainerRemoval } from "./container-removal.ts";
import type { PoolContainer } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import type { DestroyReason } from "./pool-events.ts";

/**
 * What generic-pool creates, lends, validates and destroys: a place in its queue that holds one warm container
 * until a lease takes that container out for good. An empty slot is what a create resolves to once the pool is
 * closing; its borrower learns so.
 */
export interface WarmSlot<STATE> {
  container: PoolContainer<STATE> | undefined;
  /**
   * Why generic-pool destroys the slot's container, set by validation or by whoever destroys the slot; unset when
   * generic-pool's own evictor does it (idle past `softIdleTimeoutMs` above `min`).
   */
  destroyReason?: DestroyReason;
}

/**
 * The single-engine pool's warm containers, queued in generic-pool through its public API (`createPool`, `acquire`,
 * `release`, `destroy`): `min` kept started, validated on borrow, trimmed above `min` after `softIdleTimeoutMs`,
 * `acquireTimeoutMs` on every wait. What generic-pool cannot do is done here with that API: a lease takes a container
 * out for good (its slot is destroyed empty, and generic-pool refills), and a warm container the engine reported dead
 * is flushed out by borrowing. Internal.
 */
export interface WarmQueue<STATE> {
  /** Starts keeping `min` containers warm, and generic-pool's evictor. */
  start(): void;
  /** Borrows the next warm slot for an `acquire` (fifo, validated; rejects past `acquireTimeoutMs`). */
  borrow(): Promise<WarmSlot<STATE>>;
  /** Takes a borrowed slot's container out for good: the slot ends empty and generic-pool refills to `min`. */
  takeOut(slot: WarmSlot<STATE>): void;
  /**
   * Gives back a slot whose `acquire` was given up (or an empty one): a container never exposed goes to the next
   * borrow or stays warm while the pool is short of `min`, and is removed otherwise.
   */
  abandon(slot: WarmSlot<STATE>): void;
  /** Removes the next warm container, so its room within `max` goes to a waiting wake. */
  giveUpOne(): void;
  /** Removes the warm containers the engine reported dead (see `PoolContainer.dead`) and refills. */
  flushDead(): void;
  /** Stops refilling to `min`; resolves once every borrow settled. */
  drain(): Promise<void>;
  /** Removes every warm container, once the creates under way are done. */
  clear(): Promise<void>;
  /** Warm containers ready to borrow (dead ones not flushed yet included). */
  readonly available: number;
  /** `borrow` calls waiting for a slot. */
  readonly waiting: number;
}

/** Borrows of `acquire` go first; a flush waits behind them. */
const ACQUIRE_PRIORITY = 0;
const FLUSH_PRIORITY = 1;

/** Makes the warm queue of a single-engine pool over generic-pool. */
export function createWarmQueue<STATE>(
  core: PoolCore<STATE>,
  creation: ContainerCreation<STATE>,
  removal: ContainerRemoval<STATE>,
): WarmQueue<STATE> {
  const { driver, events, settings } = core;
  const { healthCheck } = core.options;
  let waiting = 0;
  let flushing = false;

  const factory: Factory<WarmSlot<STATE>> = {
    // Never rejects: failures are retried inside with backoff (a rejecting factory makes generic-pool retry
    // at once, in a loop), and a closing pool gets empty slots.
    create: async () => ({ container: await creation.create() }),
    async destroy(slot) {
      if (slot.container === undefined) return;
      await removal.remove(slot.container, slot.destroyReason ?? (core.closed ? "close" : "idle"));
    },
    validate: (slot) => validate(slot),
  };

  const generic: Pool<WarmSlot<STATE>> = genericPool.createPool(factory, {
    min: settings.min,
    max: settings.max,
    acquireTimeoutMillis: settings.acquireTimeoutMs,
    testOnBorrow: true,
    autostart: false,
    fifo: true,
    priorityRange: 2,
    evictionRunIntervalMillis: settings.evictionIntervalMs,
    numTestsPerEvictionRun: settings.max,
    softIdleTimeoutMillis: settings.softIdleTimeoutMs > 0 ? settings.softIdleTimeoutMs : -1,
    // A finite idleTimeoutMillis would evict below `min` and churn.
    idleTimeoutMillis: Number.POSITIVE_INFINITY,
  });

  /** Validation on borrow: no Docker round trip for one reported dead, else the `healthCheck` or `inspect`. */
  async function validate(slot: WarmSlot<STATE>): Promise<boolean> {
    const { container } = slot;
    if (container === undefined) return true; // the pool is closing: the borrower learns it
    if (container.dead) {
      slot.destroyReason = "died";
      return false;
    }
    try {
      if (healthCheck) {
        if (await healthCheck({ containerId: container.id, state: container.state })) return true;
      } else {
        const inspection = await driver.inspect(container.id, { signal: core.closeSignal });
        if (inspection.running) return true;
      }
    } catch (error) {
      events.emit("error", { operation: "validate", error, containerId: container.id });
    }
    slot.destroyReason = "invalid";
    return false;
  }

  function borrow(): Promise<WarmSlot<STATE>> {
    waiting++;
    const served = generic.acquire(ACQUIRE_PRIORITY);
    void served.then(
      () => waiting--,
      () => waiting--,
    );
    return served;
  }

  function takeOut(slot: WarmSlot<STATE>): void {
    slot.container = undefined;
    void generic.destroy(slot).catch(() => {});
  }

  function abandon(slot: WarmSlot<STATE>): void {
    if (
      slot.container !== undefined &&
      !core.closed &&
      (generic.pending > 0 || generic.available < settings.min)
    ) {
      void generic.release(slot).catch(() => {});
      return;
    }
    slot.destroyReason = core.closed ? "close" : "abandoned";
    void generic.destroy(slot).catch(() => {});
  }

  function giveUpOne(): void {
    void generic.acquire(ACQUIRE_PRIORITY).then(
      (slot) => {
        slot.destroyReason = "idle";
        return generic.destroy(slot);
      },
      () => undefined,
    );
  }

  /** Dead warm containers (the engine's `die` event) not yet removed. */
  function deadCount(): number {
    let dead = 0;
    for (const container of core.containers.values())
      if (container.phase === "idle" && container.dead) dead++;
    return dead;
  }

  /**
   * A flush borrows only while no `acquire` waits (their borrows validate the same queue), and only when its borrow
   * ends on a container that is there or coming anyway (a live one, a create under way, or a refill to `min`): a
   * flush never creates a container of its own.
   */
  function flushNeeded(): boolean {
    if (core.closed || waiting > 0) return false;
    const dead = deadCount();
    return dead > 0 && (generic.size > dead || settings.min > 0);
  }

  /**
   * generic-pool's evictor goes by idle time only, so dead warm containers are reached by borrowing: validation on
   * borrow destroys each dead one the borrow meets (and generic-pool refills to `min`), and the live one it ends on
   * goes straight back to the end of the queue. As many borrows as there are warm slots reach every dead one.
   */
  async function flush(): Promise<void> {
    for (let rounds = generic.available; rounds > 0 && flushNeeded(); rounds--) {
      const slot = await generic.acquire(FLUSH_PRIORITY);
      if (slot.container === undefined) {
        abandon(slot); // closing
        return;
      }
      await generic.release(slot);
    }
  }

  function flushDead(): void {
    if (flushing || !flushNeeded()) return;
    flushing = true;
    // A borrow that timed out or met the closing pool ends this flush; the next sweep tries again.
    void flush()
      .catch(() => undefined)
      .finally(() => {
        flushing = false;
      });
  }

  return {
    start: () => generic.start(),
    borrow,
    takeOut,
    abandon,
    giveUpOne,
    flushDead,
    drain: () => generic.drain(),
    clear: () => generic.clear(),
    get available() {
      return generic.available;
    },
    get waiting() {
      return waiting;
    },
  };
}
