import { poolLabels } from "./labels.ts";
import type { PoolCore } from "./pool-core.ts";

/** Options of `reapStrays`. */
export interface ReapStraysOptions {
  /** Container ids (full, or prefixes of at least 12 characters) that stay. */
  keep?: Iterable<string>;
  /**
   * Owners known to be dead (a store saw their heartbeats stop). Every managed container of the engine whose
   * `pai.owner` is one of them is removed, whatever its pool id. Containers of any other owner are never touched:
   * an owner unknown to the caller may be a live process of another app or store on the same engine.
   */
  deadOwners?: Iterable<string>;
  /**
   * Full ids of managed containers removed whatever their owner label, unless this pool holds them or `keep`
   * names them: the containers of leases the caller ended without taking them over (one handed over between
   * processes keeps its creator's label, and the creator may be gone). Ids not on this engine are ignored.
   */
  orphans?: Iterable<string>;
  signal?: AbortSignal;
}

/**
 * Removes the engine's stray managed containers for a single-engine pool (see `ContainerPool.reapStrays`); a
 * failed removal is reported as a `reap` error event and listed in `failed`.
 */
export async function reapStrays<STATE>(
  core: PoolCore<STATE>,
  options: ReapStraysOptions = {},
): Promise<{ removed: string[]; failed: string[] }> {
  const { driver, events, settings } = core;
  const keep = [...(options.keep ?? [])];
  const deadOwners = new Set(options.deadOwners ?? []);
  const orphans = new Set(options.orphans ?? []);
  const isKept = (id: string) => keep.some((k) => k === id || (k.length >= 12 && id.startsWith(k)));
  const isStray = (labels: Readonly<Record<string, string>>) => {
    const owner = labels[poolLabels.owner];
    if (owner === undefined || owner === core.ownerId) return labels[poolLabels.pool] === settings.poolId;
    return deadOwners.has(owner);
  };
  /** Made by this pool object and not let go of (say, a create whose answer has not come yet): never a stray. */
  const isOwnCreation = (id: string, labels: Readonly<Record<string, string>>) =>
    labels[poolLabels.instance] === settings.instanceId && !core.letGo.has(id);
  const rows = await driver.list(
    { labels: { [poolLabels.managed]: "true" } },
    options.signal ? { signal: options.signal } : {},
  );
  const strays = rows.filter(
    (row) =>
      !isKept(row.id) &&
      !core.containers.has(row.id) &&
      !core.knownIds.has(row.id) &&
      (orphans.has(row.id) || (isStray(row.labels) && !isOwnCreation(row.id, row.labels))),
  );
  const removed: string[] = [];
  const failed: string[] = [];
  for (const row of strays) {
    options.signal?.throwIfAborted();
    try {
      await driver.remove(row.id);
      removed.push(row.id);
    } catch (error) {
      failed.push(row.id);
      events.emit("error", { operation: "reap", error, containerId: row.id });
    }
  }
  return { removed, failed };
}
