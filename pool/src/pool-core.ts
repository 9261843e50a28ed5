import type { ContainerDriver } from "./container-driver.ts";
import { poolClosedError } from "./container-pool-errors.ts";
import {
  type ContainerPoolOptions,
  type ContainerPoolSettings,
  resolveContainerPoolSettings,
} from "./container-pool-options.ts";
import { poolLabels } from "./labels.ts";
import type { PoolContainer } from "./pool-container.ts";
import { type ContainerPoolEventMap, createPoolEvents, type PoolEventEmitter } from "./pool-events.ts";
import { createSemaphore, type Semaphore } from "./semaphore.ts";

/**
 * What the parts of one single-engine pool share: its settings and hooks, its engine and events, the containers it
 * holds, its room within `max`, its owner and whether it is closed. Internal.
 */
export interface PoolCore<STATE> {
  readonly settings: ContainerPoolSettings;
  /** What the pool was made with; its parts read the hooks (`beforeStart`, `setup`, `healthCheck`...). */
  readonly options: ContainerPoolOptions<STATE>;
  readonly driver: ContainerDriver;
  readonly events: PoolEventEmitter<ContainerPoolEventMap>;
  /** One permit per container held (creating, idle, leased, removing): enforces `max` in total. */
  readonly capacity: Semaphore;
  /** Every container this pool holds, by id. */
  readonly containers: Map<string, PoolContainer<STATE>>;
  /** Ids created by this pool and not yet removed (including ones whose removal failed). */
  readonly knownIds: Set<string>;
  /** Containers this pool let go of running (detached, or kept leased at close): no longer its own creations. */
  readonly letGo: Set<string>;
  /** The `pai.*` labels of the containers it creates from now on. */
  readonly labels: Readonly<Record<string, string>>;
  /** The `pai.owner` label, once the pool has an owner. */
  readonly ownerId: string | undefined;
  /** Gives the pool its owner (see `ContainerPool.claimOwner`). */
  claimOwner(ownerId: string): void;
  /** Aborts (with `POOL_CLOSED`) when the pool closes. */
  readonly closeSignal: AbortSignal;
  readonly closed: boolean;
  /** Marks the pool closed and aborts `closeSignal`. */
  close(): void;
}

/** Makes the shared part of a single-engine pool from its options (checked here). */
export function createPoolCore<STATE>(options: ContainerPoolOptions<STATE>): PoolCore<STATE> {
  const settings = resolveContainerPoolSettings(options);
  const { poolId } = settings;
  let { ownerId } = options;
  const labels: Record<string, string> = {
    [poolLabels.managed]: "true",
    [poolLabels.pool]: poolId,
    [poolLabels.spec]: settings.specHash,
    [poolLabels.instance]: settings.instanceId,
    ...(ownerId !== undefined ? { [poolLabels.owner]: ownerId } : {}),
  };
  const closeController = new AbortController();
  let closed = false;
  return {
    settings,
    options,
    driver: options.driver,
    events: createPoolEvents<ContainerPoolEventMap>(),
    capacity: createSemaphore(settings.max),
    containers: new Map(),
    knownIds: new Set(),
    letGo: new Set(),
    labels,
    get ownerId() {
      return ownerId;
    },
    claimOwner(claimed) {
      if (typeof claimed !== "string" || claimed === "") {
        throw new TypeError("claimOwner: ownerId must be a non-empty string");
      }
      if (ownerId !== undefined && ownerId !== claimed) {
        throw new Error(`Container pool ${poolId} already belongs to owner ${ownerId}, not ${claimed}`);
      }
      ownerId = claimed;
      labels[poolLabels.owner] = claimed;
    },
    closeSignal: closeController.signal,
    get closed() {
      return closed;
    },
    close() {
      closed = true;
      closeController.abort(poolClosedError(poolId));
    },
  };
}
