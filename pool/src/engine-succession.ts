import { type ContainerOnEngine, carryPaths } from "./carry-paths.ts";
import type { AcquireOptions } from "./container-pool.ts";
import type { EngineLease } from "./engine-lease.ts";
import type { EngineRecord } from "./engine-record.ts";
import { poolLabels } from "./labels.ts";
import type { MultiEnginePoolEventMap } from "./multi-engine-pool-events.ts";
import { PoolError } from "./pool-error.ts";
import type { PoolEventEmitter } from "./pool-events.ts";

/** How a successor inherits folders. */
export interface CarryOptions {
  /** Folders (absolute paths) whose contents the successor inherits (e.g. `["/workspace"]`). */
  carry: readonly string[];
  /**
   * Stop the successor while the folders are copied in, and start it again with its set-up (`adopted: true`, as a
   * wake does): for folders a program of the container holds open from its start (a browser's profile), which would
   * otherwise keep and write back its own files. @default false
   */
  carryStopped?: boolean;
  signal?: AbortSignal;
}

/** Options of `MultiEnginePool.replace`. */
export interface ReplaceOptions extends CarryOptions {
  /** The old container's engine. @default the first engine */
  engineId?: string;
  /** The new lease's key. */
  leaseKey: string;
  /**
   * The container is one this pool could adopt, and adopting it failed (its set-up did not pass): replace it all
   * the same. Without it, such a container is refused (adopt it). @default false
   */
  adoptFailed?: boolean;
}

/** What {@link createEngineSuccession} needs of the multi-engine pool. */
export interface EngineSuccessionContext<STATE> {
  poolId: string;
  specHash: string;
  events: PoolEventEmitter<MultiEnginePoolEventMap>;
  acquire(options: AcquireOptions): Promise<EngineLease<STATE>>;
  /** The engine a recorded container is on, once it answers (see `MultiEnginePool.adopt`). */
  reachableEngineOf(containerId: string, engineId: string | undefined): Promise<EngineRecord<STATE>>;
}

/** `MultiEnginePool.replace` and `succeed`: see there. */
export interface EngineSuccession<STATE> {
  replace(containerId: string, options: ReplaceOptions): Promise<EngineLease<STATE>>;
  succeed(lease: EngineLease<STATE>, options: CarryOptions): Promise<EngineLease<STATE>>;
}

/**
 * Gives a container a successor: a fresh lease (on the engine placement picks) that inherits what the `carry`
 * folders of the old container hold (see `carryPaths`), after which the old one is removed or released.
 */
export function createEngineSuccession<STATE>(
  context: EngineSuccessionContext<STATE>,
): EngineSuccession<STATE> {
  const { poolId, events } = context;

  /** A fresh lease for `leaseKey` holding what `carry` holds in `from`; released again when the copy fails. */
  async function inheritingLease(
    from: ContainerOnEngine,
    leaseKey: string,
    { carry, carryStopped, signal }: CarryOptions,
  ): Promise<EngineLease<STATE>> {
    const lease = await context.acquire({ leaseKey, ...(signal ? { signal } : {}) });
    try {
      if (carryStopped) await lease.hibernate();
      await carryPaths(from, { driver: lease.driver, containerId: lease.containerId }, carry, signal);
      if (carryStopped) await lease.wake(signal ? { signal } : {});
    } catch (error) {
      await lease.release().catch(() => undefined);
      throw error;
    }
    return lease;
  }

  async function replace(containerId: string, options: ReplaceOptions): Promise<EngineLease<STATE>> {
    const { engineId, leaseKey, signal } = options;
    const record = await context.reachableEngineOf(containerId, engineId);
    const { labels } = await record.driver.inspect(containerId, signal ? { signal } : {});
    const adoptable =
      !options.adoptFailed &&
      labels[poolLabels.pool] === poolId &&
      labels[poolLabels.spec] === context.specHash;
    if (labels[poolLabels.managed] !== "true" || adoptable) {
      throw new PoolError(
        "CONTAINER_FAILED",
        `Container ${containerId} is ${adoptable ? "this pool's: adopt it" : "not a managed container"}`,
        { details: { containerId, poolId, labels } },
      );
    }
    const lease = await inheritingLease({ driver: record.driver, containerId }, leaseKey, options);
    await record.driver.remove(containerId).catch((error: unknown) => {
      events.emit("error", { operation: "destroy", error, containerId, engineId: record.id });
    });
    return lease;
  }

  async function succeed(old: EngineLease<STATE>, options: CarryOptions): Promise<EngineLease<STATE>> {
    const lease = await inheritingLease(old, old.leaseKey, options);
    await old.release().catch((error: unknown) => {
      events.emit("error", {
        operation: "destroy",
        error,
        containerId: old.containerId,
        engineId: old.engineId,
      });
    });
    return lease;
  }

  return { replace, succeed };
}
