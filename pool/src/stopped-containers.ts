import { containerGoneError, poolClosedError } from "./container-pool-errors.ts";
import { containerStopReason } from "./container-stop-reason.ts";
import type { Hibernation } from "./hibernation.ts";
import { type PoolContainer, runTransition, settleTransitions } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import { PoolError } from "./pool-error.ts";

/**
 * Leased containers that stopped although the single-engine pool did not stop them (their main process killed,
 * `docker kill` or `docker stop` from outside, an engine restart): why, and starting them again. Internal.
 */
export interface StoppedContainers<STATE> {
  /** See `ContainerLease.stopped`. */
  reason(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<string | undefined>;
  /** See `ContainerLease.restart`. */
  restart(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<void>;
}

/** Makes the part of a single-engine pool that tells of stopped containers and restarts them through the wake path. */
export function createStoppedContainers<STATE>(
  core: PoolCore<STATE>,
  hibernation: Hibernation<STATE>,
): StoppedContainers<STATE> {
  const { driver } = core;
  const { healthCheck } = core.options;
  const { poolId } = core.settings;

  async function reason(
    container: PoolContainer<STATE>,
    signal: AbortSignal | undefined,
  ): Promise<string | undefined> {
    await settleTransitions(container);
    if (container.phase !== "leased") return undefined; // released or detached: its calls say so
    if (container.stopReason !== undefined || container.hibernated) return container.stopReason;
    if (!container.dead) {
      const healthy = healthCheck
        ? await healthCheck({ containerId: container.id, state: container.state })
        : true;
      if (healthy) return undefined;
    }
    let stopReason: string | undefined;
    try {
      stopReason = await containerStopReason(driver, container.id, signal);
    } catch (error) {
      if (PoolError.hasCode(error, "NOT_FOUND"))
        throw containerGoneError(container.id, poolId, "was removed");
      throw error;
    }
    if (stopReason === undefined) {
      container.dead = false; // running: what failed the health check recovers on its own (an agent restarting)
      return undefined;
    }
    container.stopReason = stopReason;
    return stopReason;
  }

  async function restart(container: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<void> {
    await settleTransitions(container);
    if (core.closed) throw poolClosedError(poolId);
    if (container.phase !== "leased") throw containerGoneError(container.id, poolId, "was let go of");
    const stopReason = container.stopReason ?? (await reason(container, signal));
    if (stopReason === undefined) return;
    if (!container.hibernated) {
      // Stopped already: it counts as hibernated until the wake path starts it.
      await runTransition(container, () => hibernation.settleStopped(container, { stop: false }));
    }
    await hibernation.wake(container, signal, stopReason);
  }

  return { reason, restart };
}
