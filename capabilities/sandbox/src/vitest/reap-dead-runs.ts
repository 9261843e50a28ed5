import { type ContainerDriver, poolLabels } from "@pai/pool";
import {
  isRunnerOwnerLive,
  parseRunnerOwnerId,
  type RunnerLivenessProbe,
  type RunnerOwnerId,
} from "./runner-owner.ts";

/**
 * The pool id of a run's sandboxes for one set of options: `<owner id>/<options key>`. Until `@pai/pool` labels
 * containers with their owner (`pai.owner`), the `pai.pool` label is where a run's ownership is recorded.
 */
export function runnerPoolId(ownerId: string, optionsKey: string): string {
  return `${ownerId}/${optionsKey}`;
}

/** The run that owns a pool id made by {@link runnerPoolId}; `undefined` for any other pool. */
export function runnerOwnerOfPool(poolId: string | undefined): RunnerOwnerId | undefined {
  const slash = poolId?.indexOf("/") ?? -1;
  return poolId && slash > 0 ? parseRunnerOwnerId(poolId.slice(0, slash)) : undefined;
}

/** Options of {@link reapDeadRuns}. */
export interface ReapDeadRunsOptions {
  driver: ContainerDriver;
  probe: RunnerLivenessProbe;
  signal?: AbortSignal;
}

/**
 * Removes the containers that test runs which are no longer alive left on the engine (a runner killed with -9
 * never closed its pool). Containers of live runs, of runtime processes and of anything else are never touched.
 * Returns the ids it removed.
 */
export async function reapDeadRuns(options: ReapDeadRunsOptions): Promise<string[]> {
  const { driver, probe, signal } = options;
  const rows = await driver.list({ labels: { [poolLabels.managed]: "true" } }, signal ? { signal } : {});
  const verdicts = new Map<string, boolean>();
  const dead = rows.filter((row) => {
    const owner = runnerOwnerOfPool(row.labels[poolLabels.pool]);
    if (!owner) return false;
    let live = verdicts.get(owner.id);
    if (live === undefined) {
      live = isRunnerOwnerLive(owner, probe);
      verdicts.set(owner.id, live);
    }
    return !live;
  });
  const removed: string[] = [];
  for (const row of dead) {
    signal?.throwIfAborted();
    try {
      await driver.remove(row.id, signal ? { signal } : {});
      removed.push(row.id);
    } catch {
      // Removed meanwhile, or the engine refused: the next sweep tries again.
    }
  }
  return removed;
}
