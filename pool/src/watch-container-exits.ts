import type { ContainerEvent } from "./container-driver.ts";
import { poolLabels } from "./labels.ts";
import type { PoolCore } from "./pool-core.ts";

/**
 * Follows the engine's `die` and `oom` events of a single-engine pool's containers: each becomes an `exit` event,
 * and a `die` marks the container dead (a warm one is flushed out, a leased one looked at on its next use). A
 * container being removed, hibernated or in a hibernate or wake is the pool's own doing and is left alone.
 * @returns a function that stops following.
 */
export function watchContainerExits<STATE>(core: PoolCore<STATE>): () => void {
  function onEvent(event: ContainerEvent): void {
    const container = core.containers.get(event.containerId);
    if (!container || container.phase === "removing" || container.hibernated || container.transition) return;
    // An `oom` event tells of a process of the container killed; only `die` tells the container ended.
    if (event.type === "die") container.dead = true;
    const leaseKey = container.lease?.leaseKey;
    core.events.emit("exit", {
      containerId: container.id,
      reason: event.type,
      exitCode: event.exitCode,
      ...(leaseKey !== undefined ? { leaseKey } : {}),
    });
  }
  return core.driver.events({ labels: { [poolLabels.pool]: core.settings.poolId } }, onEvent);
}
