import { setTimeout as sleep } from "node:timers/promises";
import type { ContainerInspection } from "./container-driver.ts";
import type { ContainerLease } from "./container-lease.ts";
import { poolClosedError } from "./container-pool-errors.ts";
import type { ContainerRemoval } from "./container-removal.ts";
import { messageOf } from "./error-message.ts";
import { poolLabels } from "./labels.ts";
import type { PoolContainer } from "./pool-container.ts";
import type { PoolCore } from "./pool-core.ts";
import { PoolError } from "./pool-error.ts";

/**
 * How often an adopted container's setup is tried: a container just taken over may still be settling (what the
 * previous process ran in it still dying), so a failed setup is tried once more after a pause.
 */
const SETUP_TRIES = 2;
const SETUP_RETRY_PAUSE_MS = 500;

/** Options of `adopt`. */
export interface AdoptOptions {
  /** @default the container id */
  leaseKey?: string;
  signal?: AbortSignal;
  /**
   * Adopt a container whose `pai.spec` label differs from this pool's spec hash (created by an older spec).
   * @default false
   */
  allowSpecMismatch?: boolean;
}

/** What adopting needs of the rest of the pool. */
export interface AdoptParts<STATE> {
  core: PoolCore<STATE>;
  removal: ContainerRemoval<STATE>;
  /** Starts the pool (once). */
  start(): Promise<void>;
  /** Leases a container the pool now holds. */
  lease(container: PoolContainer<STATE>, leaseKey: string, adopted: boolean): ContainerLease<STATE>;
}

/** Takes over a container this pool id created before a restart (see `ContainerPool.adopt`). */
export async function adoptContainer<STATE>(
  { core, removal, start, lease }: AdoptParts<STATE>,
  containerId: string,
  options: AdoptOptions = {},
): Promise<ContainerLease<STATE>> {
  const { signal } = options;
  const { poolId } = core.settings;
  const leaseKey = options.leaseKey ?? containerId;
  if (core.closed) throw poolClosedError(poolId);
  signal?.throwIfAborted();
  await start();
  if (core.containers.has(containerId)) {
    throw new PoolError("CONTAINER_FAILED", `Container ${containerId} already belongs to pool ${poolId}`, {
      details: { containerId, poolId },
    });
  }
  const inspection = await core.driver.inspect(containerId, signal ? { signal } : {});
  checkLabels(core, containerId, inspection, options);
  if (core.closed) throw poolClosedError(poolId);
  const container = hold(core, containerId, inspection);
  await setUp(core, container, signal, inspection);
  const adopted = lease(container, leaseKey, true);
  if (core.closed) {
    await removal.remove(container, "close");
    throw poolClosedError(poolId);
  }
  core.events.emit("acquire", { containerId, leaseKey, latencyMs: 0, adopted: true });
  return adopted;
}

/** `CONTAINER_FAILED` unless the labels say this pool id made it, from this spec (unless `allowSpecMismatch`). */
function checkLabels<STATE>(
  core: PoolCore<STATE>,
  containerId: string,
  inspection: ContainerInspection,
  options: AdoptOptions,
): void {
  const { poolId, specHash } = core.settings;
  const { labels } = inspection;
  const details = { containerId, poolId, labels };
  if (labels[poolLabels.managed] !== "true" || labels[poolLabels.pool] !== poolId) {
    throw new PoolError("CONTAINER_FAILED", `Container ${containerId} is not a container of pool ${poolId}`, {
      details,
    });
  }
  if (!options.allowSpecMismatch && labels[poolLabels.spec] !== specHash) {
    throw new PoolError(
      "CONTAINER_FAILED",
      `Container ${containerId} was made from spec ${labels[poolLabels.spec]}, not ${specHash}`,
      { details },
    );
  }
}

/** Holds the container as leased: a running one takes room within `max`, a stopped one is hibernated. */
function hold<STATE>(
  core: PoolCore<STATE>,
  containerId: string,
  inspection: ContainerInspection,
): PoolContainer<STATE> {
  const hibernated = !inspection.running;
  if (!hibernated) core.capacity.forceAcquire();
  const container: PoolContainer<STATE> = {
    id: containerId,
    state: undefined as STATE,
    phase: "leased",
    dead: false,
    permit: !hibernated,
    hibernated,
    tornDown: hibernated,
    ...(hibernated ? { hibernatedAt: Date.now() } : {}),
    busy: !hibernated,
    lastUsedAt: Date.now(),
  };
  core.containers.set(containerId, container);
  core.knownIds.add(containerId);
  core.letGo.delete(containerId);
  return container;
}

/**
 * Runs `setup` for a running adopted container (a failed try reported as an `error` event and tried again once);
 * when it fails, the pool lets go of the container again and throws `CONTAINER_FAILED` with `details.stage:
 * "setup"` (or the `PoolError` the set-up threw).
 */
async function setUp<STATE>(
  core: PoolCore<STATE>,
  container: PoolContainer<STATE>,
  signal: AbortSignal | undefined,
  inspection: ContainerInspection,
): Promise<void> {
  const { setup } = core.options;
  if (!setup || container.hibernated) return;
  const containerId = container.id;
  const setupSignal = signal ? AbortSignal.any([signal, core.closeSignal]) : core.closeSignal;
  try {
    for (let tried = 1; ; tried++) {
      try {
        container.state = await setup({
          containerId,
          driver: core.driver,
          signal: setupSignal,
          adopted: true,
        });
        break;
      } catch (error) {
        if (tried >= SETUP_TRIES || setupSignal.aborted) throw error;
        core.events.emit("error", { operation: "adopt", error, containerId });
        await sleep(SETUP_RETRY_PAUSE_MS, undefined, { signal: setupSignal });
      }
    }
  } catch (error) {
    core.containers.delete(containerId);
    core.knownIds.delete(containerId);
    if (container.permit) core.capacity.release();
    throw PoolError.isInstance(error)
      ? error
      : new PoolError(
          "CONTAINER_FAILED",
          `Setting up adopted container ${containerId} failed: ${messageOf(error)}`,
          {
            cause: error,
            details: { containerId, poolId: core.settings.poolId, labels: inspection.labels, stage: "setup" },
          },
        );
  }
}
