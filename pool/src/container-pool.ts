import { type AdoptOptions, adoptContainer } from "./adopt-container.ts";
import { type CloseOptions, closeContainerPool } from "./close-container-pool.ts";
import { type AcquireOptions, createContainerAcquirer } from "./container-acquirer.ts";
import { createContainerCreation } from "./container-creation.ts";
import type { ContainerDriver } from "./container-driver.ts";
import {
  type ContainerLease,
  type ContainerLeaseInfo,
  type ContainerLeaseOperations,
  createContainerLease,
  describeLeases,
  type LeaseAcquisition,
} from "./container-lease.ts";
import { poolClosedError, poolExhaustedError } from "./container-pool-errors.ts";
import type { ContainerPoolOptions } from "./container-pool-options.ts";
import { createContainerRemoval } from "./container-removal.ts";
import type { ResolvedContainerSpec } from "./container-spec.ts";
import { createHibernation, type Hibernation } from "./hibernation.ts";
import type { PoolContainer } from "./pool-container.ts";
import { createPoolCore } from "./pool-core.ts";
import { PoolError } from "./pool-error.ts";
import type { ContainerPoolEventMap, PoolEvents } from "./pool-events.ts";
import { createPoolRoom, type PoolRoom } from "./pool-room.ts";
import { type ReapStraysOptions, reapStrays } from "./reap-strays.ts";
import { sleep } from "./sleep.ts";
import { createStoppedContainers } from "./stopped-containers.ts";
import { createWarmQueue } from "./warm-queue.ts";
import { watchContainerExits } from "./watch-container-exits.ts";

export type { AdoptOptions } from "./adopt-container.ts";
export type { CloseOptions } from "./close-container-pool.ts";
export type { AcquireOptions } from "./container-acquirer.ts";
export type { ContainerLease, ContainerLeaseInfo } from "./container-lease.ts";
export type { ContainerHookContext, ContainerPoolOptions } from "./container-pool-options.ts";
export type { ReapStraysOptions } from "./reap-strays.ts";

/** Options of `warm`. */
export interface WarmOptions {
  signal?: AbortSignal;
  /** @default 60000 */
  timeoutMs?: number;
}

/** A point-in-time view of the pool. */
export interface ContainerPoolMetrics {
  /** Running containers held (being created, idle, leased or being removed): at most `max`. */
  size: number;
  /** Idle, started containers ready for `acquire`. */
  available: number;
  /** Leased containers, hibernated ones included. */
  borrowed: number;
  /** Leased containers stopped while idle: they do not count toward `max` (see `size`). */
  hibernated: number;
  /** `acquire` calls waiting. */
  pending: number;
  /** Containers being created right now. */
  creating: number;
  /** Failed create attempts since the pool was made. */
  createFailures: number;
  /** Failed removals since the pool was made. */
  destroyFailures: number;
  /** Over the last 512 acquires (zeros before the first). */
  acquireLatencyMs: { p50: number; p95: number };
  min: number;
  max: number;
}

/** A warm pool of started containers of one spec. See {@link createContainerPool}. */
export interface ContainerPool<STATE = undefined> {
  readonly poolId: string;
  /** The `pai.owner` label of its containers, when it has one. */
  readonly ownerId: string | undefined;
  /**
   * Gives a pool made without an owner one: containers created from now on carry it (earlier ones stay
   * unowned, reaped by pool id). Idempotent for the same id.
   * @throws Error when the pool already has another owner.
   */
  claimOwner(ownerId: string): void;
  readonly spec: ResolvedContainerSpec;
  readonly specHash: string;
  readonly driver: ContainerDriver;
  /** `on('create' | 'destroy' | 'acquire' | 'error' | 'exit', listener)`. */
  readonly events: PoolEvents<ContainerPoolEventMap>;
  /** Takes a fresh, validated (running) container for `leaseKey`. */
  acquire(options: AcquireOptions): Promise<ContainerLease<STATE>>;
  /**
   * Takes over a container this pool id created before a restart (checks the `pai.managed`, `pai.pool` and
   * `pai.spec` labels). Its files are untouched. A running one is set up now and in use; a stopped one (a
   * hibernated lease) becomes a hibernated, idle lease that `wake()` starts.
   * @throws PoolError `NOT_FOUND` (no such container) or `CONTAINER_FAILED` (labels, setup failed).
   */
  adopt(containerId: string, options?: AdoptOptions): Promise<ContainerLease<STATE>>;
  /**
   * Removes the engine's stray managed containers, except those in `keep` and those this pool object holds:
   * containers of this pool id that carry no owner or this pool's owner, and containers of any pool id whose
   * owner is one of `deadOwners`, and the `orphans` (whatever their owner). A container of any other owner is
   * never removed.
   */
  reapStrays(options?: ReapStraysOptions): Promise<{ removed: string[]; failed: string[] }>;
  /** Resolves when `min` containers are ready (or as many as `max` leaves room for). */
  warm(options?: WarmOptions): Promise<void>;
  metrics(): ContainerPoolMetrics;
  leases(): ContainerLeaseInfo[];
  /**
   * Stops creating, fails waiting `acquire`s with `POOL_CLOSED` and removes every container it created (leased
   * ones too, unless `keepLeased`). The first call's options win; later calls return the same promise.
   */
  close(options?: CloseOptions): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A warm pool of started containers over generic-pool. `min` containers are kept started and validated;
 * `acquire` hands one out as a {@link ContainerLease} (refilling at once), and `release()` removes it — a container is
 * never returned to the pool or shared between lease keys. Creates are capped (`maxConcurrentCreates`), paced
 * by an exponential backoff while they fail, and `acquire` always has a deadline.
 *
 * @example
 * const pool = createContainerPool({
 *   driver: createDockerDriver(),
 *   spec: { image: "pai/sandbox:latest" },
 *   min: 2,
 *   max: 8,
 *   poolId: "sandbox",
 * });
 * await pool.warm();
 * const lease = await pool.acquire({ leaseKey: "thread:42", signal });
 * try {
 *   await pool.driver.exec(lease.containerId, { cmd: ["id", "-u"] });
 * } finally {
 *   await lease.release();
 * }
 * await pool.close();
 */
export function createContainerPool<STATE = undefined>(
  options: ContainerPoolOptions<STATE>,
): ContainerPool<STATE> {
  const core = createPoolCore(options);
  const { settings, driver, events, capacity, containers } = core;
  const { poolId, min, max } = settings;
  const removal = createContainerRemoval(core);
  const creation = createContainerCreation(core, removal);
  const queue = createWarmQueue(core, creation, removal);
  // Waking needs room, and making room hibernates: each of the two reaches the other through a function.
  const hibernation: Hibernation<STATE> = createHibernation({
    core,
    removal,
    waitForRoom: (signal) => room.waitForRoom(signal),
  });
  const room: PoolRoom = createPoolRoom({
    core,
    queue,
    creation,
    hibernate: (container) => hibernation.hibernate(container, "room"),
    exhaustedError,
  });
  const stopped = createStoppedContainers(core, hibernation);
  const leaseOperations: ContainerLeaseOperations<STATE> = {
    remove: (container) => removal.remove(container, core.closed ? "close" : "release"),
    forget: (container) => removal.forget(container),
    wake: (container, signal) => hibernation.wake(container, signal),
    hibernate: (container) => hibernation.hibernate(container, "asked"),
    makeRoom: () => room.makeRoom(),
    stopped: (container, signal) => stopped.reason(container, signal),
    restart: (container, signal) => stopped.restart(container, signal),
  };
  const lease = (
    container: PoolContainer<STATE>,
    leaseKey: string,
    adopted: boolean,
    acquisition?: LeaseAcquisition,
  ) => createContainerLease(container, { leaseKey, adopted, acquisition }, leaseOperations);
  const acquirer = createContainerAcquirer({ core, queue, room, start, lease, exhaustedError });

  let startPromise: Promise<void> | undefined;
  let stopBackground: (() => void) | undefined;
  let closePromise: Promise<void> | undefined;

  /** Reaps strays when asked to, then follows the engine's events, sweeps, and warms `min` containers. Once. */
  function start(): Promise<void> {
    startPromise ??= (async () => {
      if (options.reapOnStart) {
        try {
          await reapStrays(core);
        } catch (error) {
          events.emit("error", { operation: "reap", error });
        }
      }
      if (core.closed) return;
      const unsubscribe = watchContainerExits(core);
      const sweepTimer = setInterval(sweep, settings.evictionIntervalMs);
      sweepTimer.unref();
      stopBackground = () => {
        clearInterval(sweepTimer);
        unsubscribe();
      };
      queue.start();
    })();
    return startPromise;
  }

  /** Every `evictionIntervalMs`: hibernation by idle time, the `maxHibernated` budget, dead warm containers. */
  function sweep(): void {
    if (core.closed) return;
    hibernation.hibernateIdle();
    hibernation.enforceBudget();
    room.makeRoom();
    queue.flushDead();
  }

  /** Leased containers holding room within `max`. */
  const runningLeases = () => [...containers.values()].filter((c) => c.phase === "leased" && c.permit).length;

  function exhaustedError(): PoolError {
    return poolExhaustedError(settings, {
      borrowed: runningLeases(),
      createFailures: creation.failures,
      failing: creation.failing,
    });
  }

  async function warm(warmOptions: WarmOptions = {}): Promise<void> {
    if (core.closed) throw poolClosedError(poolId);
    await start();
    const deadline = Date.now() + (warmOptions.timeoutMs ?? 60_000);
    for (;;) {
      if (core.closed) throw poolClosedError(poolId);
      warmOptions.signal?.throwIfAborted();
      if (queue.available >= Math.min(min, max - runningLeases())) return;
      if (Date.now() >= deadline) {
        const error = exhaustedError();
        throw new PoolError(
          error.code,
          `Pool ${poolId} did not warm ${min} containers in time (${queue.available} ready)`,
          { cause: error.cause ?? error, details: error.details ?? {} },
        );
      }
      await sleep(20, warmOptions.signal);
    }
  }

  function metrics(): ContainerPoolMetrics {
    const leased = [...containers.values()].filter((c) => c.phase === "leased");
    return {
      size: capacity.inUse,
      available: core.closed ? 0 : queue.available,
      borrowed: leased.length,
      hibernated: leased.filter((c) => c.hibernated).length,
      pending: acquirer.pending,
      creating: creation.creating,
      createFailures: creation.failures,
      destroyFailures: removal.destroyFailures,
      acquireLatencyMs: acquirer.latency(),
      min,
      max,
    };
  }

  function close(closeOptions: CloseOptions = {}): Promise<void> {
    closePromise ??= closeContainerPool(
      {
        core,
        queue,
        removal,
        stopBackground: () => stopBackground?.(),
        rejectWaiting: () => acquirer.rejectWaiting(poolClosedError(poolId)),
      },
      closeOptions,
    );
    return closePromise;
  }

  void start();

  return {
    poolId,
    get ownerId() {
      return core.ownerId;
    },
    claimOwner: core.claimOwner,
    spec: settings.spec,
    specHash: settings.specHash,
    driver,
    events,
    acquire: acquirer.acquire,
    adopt: (containerId, adoptOptions) =>
      adoptContainer({ core, removal, start, lease }, containerId, adoptOptions),
    reapStrays: (reapOptions) => reapStrays(core, reapOptions),
    warm,
    metrics,
    leases: () => describeLeases(containers.values()),
    close,
    [Symbol.asyncDispose]: () => close(),
  };
}
