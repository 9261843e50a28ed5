import { createContainerCreation } from "./container-creation.ts";
import type { ContainerDriver, ContainerEvent } from "./container-driver.ts";
import {
  type ContainerLease,
  type ContainerLeaseInfo,
  type ContainerLeaseOperations,
  createContainerLease,
  describeLeases,
} from "./container-lease.ts";
import { poolClosedError, poolExhaustedError } from "./container-pool-errors.ts";
import type { ContainerPoolOptions } from "./container-pool-options.ts";
import { createContainerRemoval } from "./container-removal.ts";
import type { ResolvedContainerSpec } from "./container-spec.ts";
import { createHibernation, type Hibernation } from "./hibernation.ts";
import { poolLabels } from "./labels.ts";
import { createLatencyWindow } from "./latency-window.ts";
import type { PoolContainer } from "./pool-container.ts";
import { createPoolCore } from "./pool-core.ts";
import { PoolError } from "./pool-error.ts";
import type { ContainerPoolEventMap, PoolEvents } from "./pool-events.ts";
import { createPoolRoom, type PoolRoom } from "./pool-room.ts";
import { sleep } from "./sleep.ts";
import { createStoppedContainers } from "./stopped-containers.ts";
import { createWarmQueue } from "./warm-queue.ts";

export type { ContainerLease, ContainerLeaseInfo, Lease, LeaseInfo } from "./container-lease.ts";
export type { ContainerHookContext, ContainerPoolOptions } from "./container-pool-options.ts";

/** Options of `acquire`. */
export interface AcquireOptions {
  /** Who the container is for (e.g. `sandbox:thread:<id>`); recorded by the pool and on the lease. */
  leaseKey: string;
  /**
   * Gives up waiting. Rejects with the signal's reason; a container that arrives for the abandoned call is
   * handed to the next waiter or kept warm if the pool is short of `min`, and removed otherwise — it never
   * leaks and was never exposed.
   */
  signal?: AbortSignal;
}

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

/** Options of `close`. */
export interface CloseOptions {
  /**
   * Leaves leased (not yet released) containers running and forgets them: whoever recorded them (a lease in a
   * store) takes them over or frees them later. Idle and half-created containers are removed either way.
   * @default false
   */
  keepLeased?: boolean;
}

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
  const { settings, driver, events, capacity, containers, knownIds, letGo } = core;
  const { spec, specHash: hash, poolId, instanceId, min, max, evictionIntervalMs } = settings;
  const removal = createContainerRemoval(core);
  const creation = createContainerCreation(core, removal);
  const latency = createLatencyWindow();

  const waiters = new Set<{ reject: (error: unknown) => void }>();
  let sweepTimer: ReturnType<typeof setInterval> | undefined;
  let closePromise: Promise<void> | undefined;
  let unsubscribeEvents: (() => void) | undefined;

  const closedError = () => poolClosedError(poolId);

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

  function onContainerEvent(event: ContainerEvent) {
    const entry = containers.get(event.containerId);
    if (!entry || entry.phase === "removing" || entry.hibernated || entry.transition) return;
    // An `oom` event tells of a process of the container killed; only `die` tells the container ended.
    if (event.type === "die") entry.dead = true;
    const leaseKey = entry.lease?.leaseKey;
    events.emit("exit", {
      containerId: entry.id,
      reason: event.type,
      exitCode: event.exitCode,
      ...(leaseKey !== undefined ? { leaseKey } : {}),
    });
  }

  async function reapStrays(
    reapOptions: ReapStraysOptions = {},
  ): Promise<{ removed: string[]; failed: string[] }> {
    const keep = [...(reapOptions.keep ?? [])];
    const deadOwners = new Set(reapOptions.deadOwners ?? []);
    const isKept = (id: string) => keep.some((k) => k === id || (k.length >= 12 && id.startsWith(k)));
    const isStray = (labels: Readonly<Record<string, string>>) => {
      const owner = labels[poolLabels.owner];
      if (owner === undefined || owner === core.ownerId) return labels[poolLabels.pool] === poolId;
      return deadOwners.has(owner);
    };
    const rows = await driver.list(
      { labels: { [poolLabels.managed]: "true" } },
      reapOptions.signal ? { signal: reapOptions.signal } : {},
    );
    const orphans = new Set(reapOptions.orphans ?? []);
    const strays = rows.filter(
      (row) =>
        !isKept(row.id) &&
        !containers.has(row.id) &&
        !knownIds.has(row.id) &&
        (orphans.has(row.id) ||
          (isStray(row.labels) && (row.labels[poolLabels.instance] !== instanceId || letGo.has(row.id)))),
    );
    const removed: string[] = [];
    const failed: string[] = [];
    for (const row of strays) {
      reapOptions.signal?.throwIfAborted();
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

  let startPromise: Promise<void> | undefined;
  function start(): Promise<void> {
    startPromise ??= (async () => {
      if (options.reapOnStart) {
        try {
          await reapStrays();
        } catch (error) {
          events.emit("error", { operation: "reap", error });
        }
      }
      if (core.closed) return;
      unsubscribeEvents = driver.events({ labels: { [poolLabels.pool]: poolId } }, onContainerEvent);
      sweepTimer = setInterval(sweep, evictionIntervalMs);
      sweepTimer.unref();
      queue.start();
    })();
    return startPromise;
  }

  const leaseOperations: ContainerLeaseOperations<STATE> = {
    remove: (entry) => removal.remove(entry, core.closed ? "close" : "release"),
    forget: (entry) => removal.forget(entry),
    wake: (entry, signal) => hibernation.wake(entry, signal),
    hibernate: (entry) => hibernation.hibernate(entry, "asked"),
    makeRoom: () => room.makeRoom(),
    stopped: (entry, signal) => stopped.reason(entry, signal),
    restart: (entry, signal) => stopped.restart(entry, signal),
  };
  const makeLease = (entry: PoolContainer<STATE>, leaseKey: string, adopted: boolean) =>
    createContainerLease(entry, { leaseKey, adopted }, leaseOperations);

  /** Every `evictionIntervalMs`: hibernation by idle time, the `maxHibernated` budget, dead warm containers. */
  function sweep(): void {
    if (core.closed) return;
    hibernation.hibernateIdle();
    hibernation.enforceBudget();
    room.makeRoom();
    queue.flushDead();
  }

  function exhaustedError(): PoolError {
    return poolExhaustedError(settings, {
      borrowed: [...containers.values()].filter((e) => e.phase === "leased" && e.permit).length,
      createFailures: creation.failures,
      failing: creation.failing,
    });
  }

  async function acquire(acquireOptions: AcquireOptions): Promise<ContainerLease<STATE>> {
    const { leaseKey, signal } = acquireOptions;
    if (typeof leaseKey !== "string" || leaseKey === "") {
      throw new TypeError("acquire: leaseKey must be a non-empty string");
    }
    if (core.closed) throw closedError();
    signal?.throwIfAborted();
    const startedAt = performance.now();
    await start();
    if (core.closed) throw closedError();
    signal?.throwIfAborted();

    return new Promise<ContainerLease<STATE>>((resolve, reject) => {
      let settled = false;
      const waiter = { reject: (error: unknown) => settle(() => reject(error)) };
      const onAbort = () => settle(() => reject(signal?.reason));
      function settle(action: () => void) {
        if (settled) return;
        settled = true;
        waiters.delete(waiter);
        signal?.removeEventListener("abort", onAbort);
        action();
      }
      waiters.add(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });

      const served = queue.borrow();
      room.makeRoom();
      served.then(
        (slot) => {
          const { container } = slot;
          if (container === undefined || settled || core.closed) {
            // Never exposed: it may stay warm (see `AcquireOptions.signal`).
            queue.abandon(slot);
            settle(() => reject(closedError()));
            return;
          }
          const lease = makeLease(container, leaseKey, false);
          // generic-pool refills to `min` idle containers right away; the lease alone decides when this one goes.
          queue.takeOut(slot);
          const latencyMs = performance.now() - startedAt;
          latency.add(latencyMs);
          events.emit("acquire", {
            containerId: container.id,
            leaseKey,
            latencyMs: Math.round(latencyMs * 100) / 100,
            adopted: false,
          });
          settle(() => resolve(lease));
        },
        (error: unknown) => {
          const timedOut = (error as { name?: unknown })?.name === "TimeoutError";
          settle(() =>
            reject(
              core.closed
                ? closedError()
                : timedOut
                  ? exhaustedError()
                  : new PoolError("CONTAINER_FAILED", `acquire failed: ${String(error)}`, { cause: error }),
            ),
          );
        },
      );
    });
  }

  async function adopt(containerId: string, adoptOptions: AdoptOptions = {}): Promise<ContainerLease<STATE>> {
    const { signal } = adoptOptions;
    const leaseKey = adoptOptions.leaseKey ?? containerId;
    if (core.closed) throw closedError();
    signal?.throwIfAborted();
    await start();
    if (containers.has(containerId)) {
      throw new PoolError("CONTAINER_FAILED", `Container ${containerId} already belongs to pool ${poolId}`, {
        details: { containerId, poolId },
      });
    }
    const inspection = await driver.inspect(containerId, signal ? { signal } : {});
    const details = { containerId, poolId, labels: inspection.labels };
    if (inspection.labels[poolLabels.managed] !== "true" || inspection.labels[poolLabels.pool] !== poolId) {
      throw new PoolError(
        "CONTAINER_FAILED",
        `Container ${containerId} is not a container of pool ${poolId}`,
        {
          details,
        },
      );
    }
    if (!adoptOptions.allowSpecMismatch && inspection.labels[poolLabels.spec] !== hash) {
      throw new PoolError(
        "CONTAINER_FAILED",
        `Container ${containerId} was made from spec ${inspection.labels[poolLabels.spec]}, not ${hash}`,
        { details },
      );
    }
    if (core.closed) throw closedError();
    const hibernated = !inspection.running;
    if (!hibernated) capacity.forceAcquire();
    const entry: PoolContainer<STATE> = {
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
    containers.set(containerId, entry);
    knownIds.add(containerId);
    letGo.delete(containerId);
    try {
      if (options.setup && !hibernated) {
        const setupSignal = signal ? AbortSignal.any([signal, core.closeSignal]) : core.closeSignal;
        entry.state = await options.setup({ containerId, driver, signal: setupSignal, adopted: true });
      }
    } catch (error) {
      containers.delete(containerId);
      knownIds.delete(containerId);
      if (entry.permit) capacity.release();
      throw PoolError.isInstance(error)
        ? error
        : new PoolError("CONTAINER_FAILED", `Setting up adopted container ${containerId} failed`, {
            cause: error,
            details,
          });
    }
    const lease = makeLease(entry, leaseKey, true);
    if (core.closed) {
      await removal.remove(entry, "close");
      throw closedError();
    }
    events.emit("acquire", { containerId, leaseKey, latencyMs: 0, adopted: true });
    return lease;
  }

  async function warm(warmOptions: WarmOptions = {}): Promise<void> {
    if (core.closed) throw closedError();
    await start();
    const deadline = Date.now() + (warmOptions.timeoutMs ?? 60_000);
    for (;;) {
      if (core.closed) throw closedError();
      warmOptions.signal?.throwIfAborted();
      const leased = [...containers.values()].filter((e) => e.phase === "leased" && e.permit).length;
      if (queue.available >= Math.min(min, max - leased)) return;
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
    const leased = [...containers.values()].filter((e) => e.phase === "leased");
    const { p50, p95 } = latency.summary();
    return {
      size: capacity.inUse,
      available: core.closed ? 0 : queue.available,
      borrowed: leased.length,
      hibernated: leased.filter((e) => e.hibernated).length,
      pending: waiters.size,
      creating: creation.creating,
      createFailures: creation.failures,
      destroyFailures: removal.destroyFailures,
      acquireLatencyMs: { p50, p95 },
      min,
      max,
    };
  }

  const leases = () => describeLeases(containers.values());

  function close(closeOptions: CloseOptions = {}): Promise<void> {
    closePromise ??= (async () => {
      if (sweepTimer) clearInterval(sweepTimer);
      const drained = queue.drain(); // stops min maintenance at once
      core.close();
      unsubscribeEvents?.();
      for (const waiter of [...waiters]) waiter.reject(closedError());
      await drained.catch(() => {});
      await queue.clear().catch(() => {});
      const teardowns: Promise<void>[] = [];
      for (const entry of [...containers.values()]) {
        if (closeOptions.keepLeased && entry.phase === "leased") {
          // Left running for whoever recorded it.
          letGo.add(entry.id);
          containers.delete(entry.id);
          knownIds.delete(entry.id);
          if (!entry.tornDown) teardowns.push(removal.teardown(entry.id, entry.state));
          entry.tornDown = true;
          continue;
        }
        void removal.remove(entry, "close");
      }
      await Promise.all([...teardowns, ...removal.inFlight()]);
      // Anything left: removals that failed, and containers whose create response never arrived.
      const leftovers = new Set(knownIds);
      try {
        for (const row of await driver.list({ labels: { [poolLabels.instance]: instanceId } }))
          if (!letGo.has(row.id)) leftovers.add(row.id);
      } catch (error) {
        events.emit("error", { operation: "destroy", error });
      }
      await Promise.all([...leftovers].map((id) => removal.removeUnowned(id)));
    })();
    return closePromise;
  }

  void start();

  return {
    poolId,
    get ownerId() {
      return core.ownerId;
    },
    claimOwner: core.claimOwner,
    spec,
    specHash: hash,
    driver,
    events,
    acquire,
    adopt,
    reapStrays,
    warm,
    metrics,
    leases,
    close,
    [Symbol.asyncDispose]: () => close(),
  };
}
