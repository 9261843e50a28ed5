import type { ContainerRemoval } from "./container-removal.ts";
import { poolLabels } from "./labels.ts";
import type { PoolContainer } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import type { WarmQueue } from "./warm-queue.ts";

/** Options of `close`. */
export interface CloseOptions {
  /**
   * Leaves leased (not yet released) containers running and forgets them: whoever recorded them (a lease in a
   * store) takes them over or frees them later. Idle and half-created containers are removed either way.
   * @default false
   */
  keepLeased?: boolean;
}

/** What closing needs of the rest of the pool. */
export interface CloseParts<STATE> {
  core: PoolCore<STATE>;
  queue: WarmQueue<STATE>;
  removal: ContainerRemoval<STATE>;
  /** Stops the pool's timers and its watch on the engine's events. */
  stopBackground(): void;
  /** Fails the waiting `acquire`s with `POOL_CLOSED`. */
  rejectWaiting(): void;
}

/**
 * Closes a single-engine pool (see `ContainerPool.close`): stops creating, fails waiting `acquire`s, removes every
 * container it created (leased ones too unless `keepLeased`), and then whatever the engine still lists under this
 * pool object's `pai.instance` label (failed removals, creates whose answer never came).
 */
export async function closeContainerPool<STATE>(
  { core, queue, removal, stopBackground, rejectWaiting }: CloseParts<STATE>,
  options: CloseOptions = {},
): Promise<void> {
  stopBackground();
  const drained = queue.drain(); // stops min maintenance at once
  core.close();
  rejectWaiting();
  await drained.catch(() => {});
  await queue.clear().catch(() => {});
  const teardowns: Promise<void>[] = [];
  for (const container of [...core.containers.values()]) {
    if (options.keepLeased && container.phase === "leased")
      teardowns.push(leaveRunning(core, removal, container));
    else void removal.remove(container, "close");
  }
  await Promise.all([...teardowns, ...removal.inFlight()]);
  // Anything left: removals that failed, and containers whose create response never arrived.
  const leftovers = new Set(core.knownIds);
  try {
    for (const row of await core.driver.list({
      labels: { [poolLabels.instance]: core.settings.instanceId },
    })) {
      if (!core.letGo.has(row.id)) leftovers.add(row.id);
    }
  } catch (error) {
    core.events.emit("error", { operation: "destroy", error });
  }
  await Promise.all([...leftovers].map((id) => removal.removeUnowned(id)));
}

/** Forgets a leased container at close, left running for whoever recorded it; its `teardown` runs. */
function leaveRunning<STATE>(
  core: PoolCore<STATE>,
  removal: ContainerRemoval<STATE>,
  container: PoolContainer<STATE>,
): Promise<void> {
  core.letGo.add(container.id);
  core.containers.delete(container.id);
  core.knownIds.delete(container.id);
  const teardown = container.tornDown ? Promise.resolve() : removal.teardown(container.id, container.state);
  container.tornDown = true;
  return teardown;
}
