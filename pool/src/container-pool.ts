import { createContainerCreation } from "./container-creation.ts";
import type { ContainerDriver, ContainerEvent } from "./container-driver.ts";
import {
  type ContainerLease,
  type ContainerLeaseInfo,
  type ContainerLeaseOperations,
  createContainerLease,
  describeLeases,
} from "./container-lease.ts";
import { containerGoneError, poolClosedError, poolExhaustedError } from "./container-pool-errors.ts";
import type { ContainerPoolOptions } from "./container-pool-options.ts";
import { createContainerRemoval } from "./container-removal.ts";
import type { ResolvedContainerSpec } from "./container-spec.ts";
import { poolLabels } from "./labels.ts";
import { createLatencyWindow } from "./latency-window.ts";
import type { PoolContainer } from "./pool-container.ts";
import { createPoolCore } from "./pool-core.ts";
import { PoolError } from "./pool-error.ts";
import type { ContainerPoolEventMap, PoolEvents } from "./pool-events.ts";
import { sleep } from "./sleep.ts";
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
  const { healthCheck } = options;
  const { spec, specHash: hash, poolId, instanceId, min, max, acquireTimeoutMs } = settings;
  const { evictionIntervalMs, hibernateAfterMs, maxHibernated } = settings;
  const removal = createContainerRemoval(core);
  const creation = createContainerCreation(core, removal);
  const latency = createLatencyWindow();

  const waiters = new Set<{ reject: (error: unknown) => void }>();
  /** Wakes waiting for room. */
  let pendingWakes = 0;
  /** Hibernations under way to make room: each frees a permit when done. */
  let roomHibernations = 0;
  let sweepTimer: ReturnType<typeof setInterval> | undefined;
  let closePromise: Promise<void> | undefined;
  let unsubscribeEvents: (() => void) | undefined;

  const closedError = () => poolClosedError(poolId);

  const queue = createWarmQueue(core, creation, removal);

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
      sweepTimer = setInterval(sweepHibernation, evictionIntervalMs);
      sweepTimer.unref();
      queue.start();
    })();
    return startPromise;
  }

  const leaseOperations: ContainerLeaseOperations<STATE> = {
    remove: (entry) => removal.remove(entry, core.closed ? "close" : "release"),
    forget: (entry) => removal.forget(entry),
    wake: (entry, signal) => wakeEntry(entry, signal),
    hibernate: (entry) => hibernateEntry(entry, "asked"),
    makeRoom: () => makeRoom(),
    stopped: (entry, signal) => stoppedReason(entry, signal),
    restart: (entry, signal) => restartEntry(entry, signal),
  };
  const makeLease = (entry: PoolContainer<STATE>, leaseKey: string, adopted: boolean) =>
    createContainerLease(entry, { leaseKey, adopted }, leaseOperations);

  /** Stops an idle lease's container (after its teardown) and frees its permit. */
  function hibernateEntry(entry: PoolContainer<STATE>, reason: "idle" | "room" | "asked"): Promise<void> {
    if (entry.hibernated || entry.phase !== "leased" || core.closed) return Promise.resolve();
    if (entry.transition) return entry.transition.then(() => hibernateEntry(entry, reason));
    const leaseKey = entry.lease?.leaseKey ?? entry.id;
    const transition = (async () => {
      try {
        // One that stopped on its own meanwhile is still one to restart, not to wake, whenever it is used again.
        if (entry.dead) entry.stopReason ??= await inspectStop(entry).catch(() => undefined);
        await settleStopped(entry, { stop: true });
        events.emit("hibernate", { containerId: entry.id, leaseKey, reason });
      } catch (error) {
        // Its agent is gone either way: the next wake starts and sets it up again (keeping its permit).
        entry.hibernated = true;
        entry.hibernatedAt = Date.now();
        events.emit("error", { operation: "hibernate", error, containerId: entry.id });
      }
    })();
    entry.transition = transition;
    void transition.finally(() => {
      if (entry.transition === transition) entry.transition = undefined;
      enforceHibernatedBudget();
    });
    return transition;
  }

  /**
   * Counts a lease's container as stopped — hibernated, holding no room — once what `setup` made for it is torn
   * down (and, with `stop`, the container stopped).
   */
  async function settleStopped(entry: PoolContainer<STATE>, options: { stop: boolean }): Promise<void> {
    await removal.teardown(entry.id, entry.state);
    entry.tornDown = true;
    entry.state = undefined as STATE;
    if (options.stop) await driver.stop(entry.id, { signal: core.closeSignal });
    entry.hibernated = true;
    entry.hibernatedAt = Date.now();
    if (entry.permit) {
      entry.permit = false;
      capacity.release();
    }
  }

  /** The error for a lease whose container is gone (removed by the pool while hibernated, or from outside). */
  const goneError = (entry: PoolContainer<STATE>, how?: string) => containerGoneError(entry.id, poolId, how);

  /** What the engine says of a container that stopped: its exit, told for a person (and a model). */
  async function inspectStop(entry: PoolContainer<STATE>, signal?: AbortSignal): Promise<string | undefined> {
    const inspection = await driver.inspect(entry.id, signal ? { signal } : {});
    if (inspection.running) return undefined;
    if (inspection.oomKilled) return "its container ran out of memory";
    const code = inspection.exitCode;
    if (code === 137) return "its container was killed (exit code 137)";
    if (code === 143) return "its container was stopped (exit code 143)";
    return code === null ? "its container stopped" : `its container stopped (exit code ${code})`;
  }

  async function stoppedReason(
    entry: PoolContainer<STATE>,
    signal: AbortSignal | undefined,
  ): Promise<string | undefined> {
    while (entry.transition) await entry.transition.catch(() => undefined);
    if (entry.phase !== "leased") return undefined; // released or detached: its calls say so
    if (entry.stopReason !== undefined || entry.hibernated) return entry.stopReason;
    if (!entry.dead) {
      const healthy = healthCheck ? await healthCheck({ containerId: entry.id, state: entry.state }) : true;
      if (healthy) return undefined;
    }
    let reason: string | undefined;
    try {
      reason = await inspectStop(entry, signal);
    } catch (error) {
      if (PoolError.hasCode(error, "NOT_FOUND")) throw goneError(entry, "was removed");
      throw error;
    }
    if (reason === undefined) {
      entry.dead = false; // running: what failed the health check recovers on its own (an agent restarting)
      return undefined;
    }
    entry.stopReason = reason;
    return reason;
  }

  /** Starts a lease's container that stopped outside the pool's wish again, through the wake path. */
  async function restartEntry(entry: PoolContainer<STATE>, signal: AbortSignal | undefined): Promise<void> {
    while (entry.transition) await entry.transition.catch(() => undefined);
    if (core.closed) throw closedError();
    if (entry.phase !== "leased") throw goneError(entry, "was let go of");
    const reason = entry.stopReason ?? (await stoppedReason(entry, signal));
    if (reason === undefined) return;
    if (!entry.hibernated) {
      // Stopped already: it counts as hibernated until the wake path starts it.
      const transition = settleStopped(entry, { stop: false });
      entry.transition = transition;
      try {
        await transition;
      } finally {
        if (entry.transition === transition) entry.transition = undefined;
      }
    }
    await wakeEntry(entry, signal, reason);
  }

  /** Starts a hibernated lease's container (a wake, or with `restartReason` a restart); false when it runs. */
  async function wakeEntry(
    entry: PoolContainer<STATE>,
    signal: AbortSignal | undefined,
    restartReason?: string,
  ): Promise<boolean> {
    entry.busy = true;
    entry.lastUsedAt = Date.now();
    while (entry.transition) await entry.transition.catch(() => undefined);
    const gone = () => goneError(entry);
    if (core.closed) throw closedError();
    if (entry.phase !== "leased") throw gone();
    if (!entry.hibernated) return false;
    const startedAt = performance.now();
    const transition = (async () => {
      if (!entry.permit) {
        await waitForRoom(signal);
        if (entry.phase !== "leased") {
          capacity.release();
          throw gone();
        }
        entry.permit = true;
      }
      const wakeSignal = signal ? AbortSignal.any([signal, core.closeSignal]) : core.closeSignal;
      try {
        const { createEnv } = entry;
        if (createEnv) options.containerEnv?.renew?.(createEnv);
        await driver.start(entry.id, { signal: wakeSignal });
        entry.state = options.setup
          ? await options.setup({
              containerId: entry.id,
              driver,
              signal: wakeSignal,
              adopted: true,
              ...(createEnv ? { createEnv } : {}),
            })
          : (undefined as STATE);
      } catch (error) {
        // Back to sleep: a later wake tries again.
        await driver.stop(entry.id).catch(() => undefined);
        entry.permit = false;
        capacity.release();
        if (PoolError.hasCode(error, "NOT_FOUND")) throw gone();
        throw error;
      }
      entry.hibernated = false;
      entry.tornDown = false;
      entry.hibernatedAt = undefined;
      entry.dead = false;
      entry.stopReason = undefined;
      const woke = {
        containerId: entry.id,
        leaseKey: entry.lease?.leaseKey ?? entry.id,
        durationMs: Math.round(performance.now() - startedAt),
      };
      if (restartReason === undefined) events.emit("wake", woke);
      else events.emit("restart", { ...woke, reason: restartReason });
    })();
    entry.transition = transition;
    try {
      await transition;
    } finally {
      if (entry.transition === transition) entry.transition = undefined;
    }
    return true;
  }

  /** Waits for a permit for a wake (ahead of refills), making room; `POOL_EXHAUSTED` past `acquireTimeoutMs`. */
  async function waitForRoom(signal: AbortSignal | undefined): Promise<void> {
    const deadline = AbortSignal.timeout(acquireTimeoutMs);
    const waitSignal = AbortSignal.any([deadline, core.closeSignal, ...(signal ? [signal] : [])]);
    pendingWakes++;
    try {
      const granted = capacity.acquire(waitSignal, { first: true });
      makeRoom();
      await granted;
    } catch (error) {
      if (core.closed) throw closedError();
      signal?.throwIfAborted();
      if (deadline.aborted) throw exhaustedError();
      throw error;
    } finally {
      pendingWakes--;
    }
  }

  /**
   * Frees permits for whoever waits: an `acquire` that no idle or coming container serves, and every waiting
   * wake. Hibernates the least recently used idle leases; for a wake with none left, removes an idle warm
   * container (the pool refills it later).
   */
  function makeRoom(): void {
    if (core.closed) return;
    const unservedAcquires = Math.max(0, queue.waiting - queue.available - creation.permitted);
    let needed = unservedAcquires + pendingWakes - roomHibernations;
    if (needed <= 0 || capacity.inUse < max) return;
    const candidates = [...containers.values()]
      .filter((e) => e.phase === "leased" && !e.busy && !e.hibernated && !e.transition && e.permit)
      .sort((a, b) => a.lastUsedAt - b.lastUsedAt);
    for (const entry of candidates) {
      if (needed <= 0) return;
      needed--;
      roomHibernations++;
      void hibernateEntry(entry, "room").finally(() => roomHibernations--);
    }
    if (pendingWakes > 0 && needed > 0 && queue.available > queue.waiting) {
      // A warm container gives its permit to the wake (first in the queue).
      queue.giveUpOne();
    }
  }

  /** Every `evictionIntervalMs`: dead warm containers, hibernation by idle time, and the `maxHibernated` budget. */
  function sweepHibernation(): void {
    if (core.closed) return;
    const now = Date.now();
    for (const entry of containers.values()) {
      if (
        entry.phase === "leased" &&
        !entry.busy &&
        !entry.hibernated &&
        !entry.transition &&
        now - entry.lastUsedAt >= hibernateAfterMs
      ) {
        void hibernateEntry(entry, "idle");
      }
    }
    enforceHibernatedBudget();
    makeRoom();
    queue.flushDead();
  }

  function enforceHibernatedBudget(): void {
    if (core.closed) return;
    const hibernated = [...containers.values()]
      .filter((e) => e.phase === "leased" && e.hibernated && !e.transition)
      .sort((a, b) => (a.hibernatedAt ?? 0) - (b.hibernatedAt ?? 0));
    for (const entry of hibernated.slice(0, Math.max(0, hibernated.length - maxHibernated))) {
      void removal.remove(entry, "hibernated-budget");
    }
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
      makeRoom();
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
