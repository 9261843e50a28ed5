import { containerGoneError, poolClosedError } from "./container-pool-errors.ts";
import type { ContainerRemoval } from "./container-removal.ts";
import { containerStopReason } from "./container-stop-reason.ts";
import { type PoolContainer, runTransition, settleTransitions } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import { PoolError } from "./pool-error.ts";

/**
 * Hibernation of the single-engine pool's leases: an idle lease's container is stopped (files kept, room within `max`
 * freed) and started and set up again on its next use. Internal.
 */
export interface Hibernation<STATE> {
  /** Stops an idle lease's container (after its teardown) and frees its room. A no-op once hibernated or closed. */
  hibernate(container: PoolContainer<STATE>, reason: "idle" | "room" | "asked"): Promise<void>;
  /**
   * Starts a hibernated lease's container again, once there is room (a `wake` event; with `restartReason`, a
   * `restart` event). Resolves `false` when it was running.
   */
  wake(
    container: PoolContainer<STATE>,
    signal: AbortSignal | undefined,
    restartReason?: string,
  ): Promise<boolean>;
  /**
   * Counts a lease's container as stopped (hibernated, holding no room) once what `setup` made for it is torn down;
   * with `stop` it stops the container first.
   */
  settleStopped(container: PoolContainer<STATE>, options: { stop: boolean }): Promise<void>;
  /** Hibernates the leases idle for `hibernateAfterMs`. */
  hibernateIdle(): void;
  /** Removes the longest hibernated leases' containers beyond `maxHibernated`. */
  enforceBudget(): void;
}

/** What hibernation needs of the rest of the pool. */
export interface HibernationParts<STATE> {
  core: PoolCore<STATE>;
  removal: ContainerRemoval<STATE>;
  /** Waits for room within `max` for a wake (see `PoolRoom.waitForRoom`). */
  waitForRoom(signal: AbortSignal | undefined): Promise<void>;
}

/** Makes the hibernation part of a single-engine pool. */
export function createHibernation<STATE>({
  core,
  removal,
  waitForRoom,
}: HibernationParts<STATE>): Hibernation<STATE> {
  const { driver, events, capacity, containers, options } = core;
  const { poolId, hibernateAfterMs, maxHibernated } = core.settings;

  function hibernate(container: PoolContainer<STATE>, reason: "idle" | "room" | "asked"): Promise<void> {
    if (container.hibernated || container.phase !== "leased" || core.closed) return Promise.resolve();
    if (container.transition) return container.transition.then(() => hibernate(container, reason));
    const leaseKey = container.lease?.leaseKey ?? container.id;
    const hibernated = runTransition(container, async () => {
      try {
        // One that stopped on its own meanwhile is still one to restart, not to wake, whenever it is used again.
        if (container.dead) {
          container.stopReason ??= await containerStopReason(driver, container.id).catch(() => undefined);
        }
        await settleStopped(container, { stop: true });
        events.emit("hibernate", { containerId: container.id, leaseKey, reason });
      } catch (error) {
        // Its agent is gone either way: the next wake starts and sets it up again (keeping its permit).
        container.hibernated = true;
        container.hibernatedAt = Date.now();
        events.emit("error", { operation: "hibernate", error, containerId: container.id });
      }
    });
    void hibernated.finally(enforceBudget);
    return hibernated;
  }

  async function settleStopped(container: PoolContainer<STATE>, { stop }: { stop: boolean }): Promise<void> {
    await removal.teardown(container.id, container.state);
    container.tornDown = true;
    container.state = undefined as STATE;
    if (stop) await driver.stop(container.id, { signal: core.closeSignal });
    container.hibernated = true;
    container.hibernatedAt = Date.now();
    if (container.permit) {
      container.permit = false;
      capacity.release();
    }
  }

  async function wake(
    container: PoolContainer<STATE>,
    signal: AbortSignal | undefined,
    restartReason?: string,
  ): Promise<boolean> {
    container.busy = true;
    container.lastUsedAt = Date.now();
    await settleTransitions(container);
    if (core.closed) throw poolClosedError(poolId);
    if (container.phase !== "leased") throw containerGoneError(container.id, poolId);
    if (!container.hibernated) return false;
    const startedAt = performance.now();
    await runTransition(container, async () => {
      await takeRoom(container, signal);
      await startAgain(container, signal);
      const woke = {
        containerId: container.id,
        leaseKey: container.lease?.leaseKey ?? container.id,
        durationMs: Math.round(performance.now() - startedAt),
      };
      if (restartReason === undefined) events.emit("wake", woke);
      else events.emit("restart", { ...woke, reason: restartReason });
    });
    return true;
  }

  /** Gives a hibernated container room within `max` again, waiting for it ahead of the pool's refills. */
  async function takeRoom(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<void> {
    if (container.permit) return;
    await waitForRoom(signal);
    if (container.phase !== "leased") {
      capacity.release();
      throw containerGoneError(container.id, poolId);
    }
    container.permit = true;
  }

  /** Starts the container and sets it up again; on failure it goes back to sleep, and a later wake tries again. */
  async function startAgain(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<void> {
    const wakeSignal = signal ? AbortSignal.any([signal, core.closeSignal]) : core.closeSignal;
    try {
      const { createEnv } = container;
      if (createEnv) options.containerEnv?.renew?.(createEnv);
      await driver.start(container.id, { signal: wakeSignal });
      container.state = options.setup
        ? await options.setup({
            containerId: container.id,
            driver,
            signal: wakeSignal,
            adopted: true,
            ...(createEnv ? { createEnv } : {}),
          })
        : (undefined as STATE);
    } catch (error) {
      await driver.stop(container.id).catch(() => undefined);
      container.permit = false;
      capacity.release();
      if (PoolError.hasCode(error, "NOT_FOUND")) throw containerGoneError(container.id, poolId);
      throw error;
    }
    container.hibernated = false;
    container.tornDown = false;
    container.hibernatedAt = undefined;
    container.dead = false;
    container.stopReason = undefined;
  }

  function hibernateIdle(): void {
    const now = Date.now();
    for (const container of containers.values()) {
      if (
        container.phase === "leased" &&
        !container.busy &&
        !container.hibernated &&
        !container.transition &&
        now - container.lastUsedAt >= hibernateAfterMs
      ) {
        void hibernate(container, "idle");
      }
    }
  }

  function enforceBudget(): void {
    if (core.closed) return;
    const hibernated = [...containers.values()]
      .filter((c) => c.phase === "leased" && c.hibernated && !c.transition)
      .sort((a, b) => (a.hibernatedAt ?? 0) - (b.hibernatedAt ?? 0));
    for (const container of hibernated.slice(0, Math.max(0, hibernated.length - maxHibernated))) {
      void removal.remove(container, "hibernated-budget");
    }
  }

  return { hibernate, wake, settleStopped, hibernateIdle, enforceBudget };
}
