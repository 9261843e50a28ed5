import type { ContainerDriver } from "./container-driver.ts";
import type { ContainerPoolOptions } from "./container-pool.ts";
import { guardLostFacade } from "./guard-lost-facade.ts";
import {
  createMultiEnginePool,
  type EngineCheckOptions,
  type EngineLease,
  type MultiEnginePool,
  type MultiEnginePoolEventMap,
  type MultiEnginePoolMetrics,
  type PoolEngine,
} from "./multi-engine-pool.ts";
import { PoolError, type PoolErrorCode } from "./pool-error.ts";
import { createPoolEvents, type PoolEvents } from "./pool-events.ts";
import { specHash } from "./spec-hash.ts";

/**
 * How a capability binding sizes and tunes its pool (the user-facing part of `createMultiEnginePool`'s options).
 * With several engines, `min` and `max` are per engine (an engine's own `min`/`max` override them).
 */
export interface PooledBindingPoolOptions {
  /** Started containers kept ready on each reachable engine. @default 1 */
  min?: number;
  /** Containers on each engine, leased ones included. @default 10 */
  max?: number;
  /** How long provisioning (or a wake) waits for a container before failing with `POOL_EXHAUSTED`. @default 30000 */
  acquireTimeoutMs?: number;
  /**
   * A lease no run has used for this long is hibernated: its container is stopped (files kept, processes gone)
   * and stops counting toward `max`; the next call wakes it. A lease waiting for room hibernates the least
   * recently used idle one at once. `Infinity` only hibernates to make room.
   * @default 120000
   */
  hibernateAfterMs?: number;
  /** Hibernated containers kept on each engine; beyond it the longest hibernated are removed. @default 100 */
  maxHibernated?: number;
  /**
   * How often a lease's container that stops outside PAI's wish (its main process killed, `docker kill` or
   * `docker stop`, an engine restart) is started again on its next use: at most `restarts` times within `withinMs`;
   * past it the call fails with `CONTAINER_LOST` (and the next one, once the oldest restart is `withinMs` old, tries
   * again), so a container that dies at once is not restarted in a loop.
   * @default { restarts: 3, withinMs: 60000 }
   */
  restartLimit?: { restarts?: number; withinMs?: number };
}

/** The pool's tuning under load: creates at once, backoff on failing creates, trimming idle containers above `min`. */
export interface PooledBindingTuning {
  /** @default 2 */
  maxConcurrentCreates?: number;
  /** @default 60000 */
  softIdleTimeoutMs?: number;
  /** @default 250 ms doubling to 10 s */
  createBackoff?: { initialMs?: number; maxMs?: number };
  /** Health checks of the engines and refreshes of their `docker info`; see `EngineCheckOptions`. */
  engineChecks?: EngineCheckOptions;
}

/** What {@link createPooledBinding} needs to know about one kind of pooled resource. */
export interface PooledBindingOptions<STATE, FACADE, SCOPE> {
  /** The capability's name: prefixes lease keys and names the binding in errors. */
  name: string;
  /** The engines the pool spans, at least one (see `dockerPoolEngines`). */
  engines: readonly PoolEngine[];
  pool?: PooledBindingPoolOptions;
  tuning?: PooledBindingTuning;
  /** The pool id; by default `pai-<name>-<spec hash>`, so a restarted process finds its own containers. */
  poolId?: string;
  /**
   * Folders (absolute paths) whose contents a recorded container's successor inherits when the container cannot
   * be reattached as it is because another spec made it (an upgrade changed the image, limits or PAI's own
   * settings): `reattach` then gives the lease a fresh container with their contents copied from the old one, and
   * removes the old one. Without it such a lease gets no container back (the runtime provisions a new, empty one).
   */
  carryOver?: readonly string[];
  /**
   * Called once, on the first start: the image and the pool's container options (spec, hooks; the hooks get the
   * driver of the container's engine). Image resolution belongs here. `signal` aborts when the binding closes.
   */
  preparePool(context: {
    signal: AbortSignal;
  }): Promise<
    { image: string } & Pick<ContainerPoolOptions<STATE>, "spec"> &
      Partial<
        Pick<
          ContainerPoolOptions<STATE>,
          "setup" | "teardown" | "beforeStart" | "healthCheck" | "containerEnv"
        >
      >
  >;
  /**
   * Makes sure each engine has the image (after `preparePool`, before the engine's image is checked): see
   * `MultiEnginePoolOptions.ensureImage`.
   */
  ensureImage?(context: {
    engineId: string;
    driver: ContainerDriver;
    image: string;
    signal: AbortSignal;
  }): Promise<void>;
  /** One-time set-up of each engine (after `preparePool` and `ensureImage`, before the engine's first container). */
  prepareEngine?(context: {
    engineId: string;
    driver: ContainerDriver;
    image: string;
    signal: AbortSignal;
  }): Promise<void>;
  /**
   * The facade over a running lease (its `state` set up); build it on `lease.driver` (the lease's engine). Made
   * again after each wake, as the wake sets the container up anew. The binding guards the facade and its
   * per-run views: once the lease is lost (its engine stopped answering), calls fail with `CONTAINER_LOST`.
   */
  facadeOf(
    lease: EngineLease<STATE>,
    pool: { image: string; poolId: string },
  ): { facade: FACADE; bind?(scope: SCOPE): FACADE };
  /** The error for calls on a closed binding. */
  closedError(): Error;
}

/** A resource whose container stopped outside PAI's wish and was started again (structurally PAI's `ResourceRestart`). */
export interface PooledRestart {
  status: "restarted";
  /**
   * Why it stopped, and how it came back when it was not started again as it was (a new container then inherited
   * its `carryOver` folders), in words for a person or a model.
   */
  reason: string;
}

/**
 * How a runtime drives a pooled resource's hibernation (structurally PAI's `ResourceHibernation`): `wake` before
 * every facade call, `idle` once no run uses it.
 */
export interface PooledHibernation {
  /**
   * Marks the resource in use and makes sure its container runs (starting a hibernated one: the call waits).
   * `"woken"` when it was hibernated; `"gone"` when the pool removed it while hibernated (`maxHibernated`) or it was
   * removed from outside; a {@link PooledRestart} when it had stopped outside PAI's wish and was started again
   * (through the wake path: files kept, processes gone), or, when it could not be, replaced by a new container that
   * inherits its `carryOver` folders (the resource's `resourceId` then names the new one).
   * @throws PoolError `CONTAINER_LOST` when it stopped again more often than `restartLimit` allows
   */
  wake(signal: AbortSignal): Promise<"running" | "woken" | "gone" | PooledRestart>;
  /** No run uses it now: it may be hibernated. */
  idle(): void;
}

/** What a pooled binding hands out (structurally PAI's `ProvisionedResource`). */
export interface PooledResource<FACADE, SCOPE> {
  /**
   * The facade of the running container.
   * @throws PoolError `CONTAINER_FAILED` while hibernated (wake first), `CONTAINER_LOST` once it is lost.
   */
  readonly facade: FACADE;
  /** The container id (a new one's once a restart replaced the container). */
  readonly resourceId: string;
  /** What the lease records: the pool, the image, and the engine the container is on (to reattach it there). */
  readonly meta: { poolId: string; image: string; engine: string };
  /** Removes the container (running or hibernated). */
  release(): Promise<void>;
  /**
   * Lets go of the container without removing it (a lease handed over to another process, which reattaches it):
   * left running, or stopped when hibernated (the other process wakes it on first use); see `Lease.detach`.
   */
  detach(): Promise<void>;
  /** The facade bound to one run (see `facade`). */
  bind(scope: SCOPE): FACADE;
  readonly hibernation: PooledHibernation;
}

/** A lease as recorded by whoever provisioned it (structurally PAI's `LeaseRecord`). */
export interface RecordedLease {
  resourceId: string;
  lifetime: string;
  key: string;
  meta: Record<string, unknown>;
}

/** What a runtime tells a binding when it starts it (structurally PAI's `BindingStartContext`). */
export interface BindingStartContext {
  /** The runtime process's owner id: the `pai.owner` label of every container the binding creates. */
  ownerId: string;
}

/** What a runtime knows when it asks a binding to reap (structurally PAI's `ReapContext`). */
export interface ReapContext {
  /** Resource ids named by leases of live owners (any process): never removed. */
  keepResourceIds: readonly string[];
  /** Owners the runtime's store knows to be dead: their containers are removed. */
  deadOwnerIds: ReadonlySet<string>;
  /**
   * Containers of leases the runtime ended without reattaching them: each managed one still there is removed,
   * whatever its owner label (an adopted container keeps its creator's, and the creator may be gone).
   */
  orphanResourceIds?: readonly string[];
}

/** The lifecycle a capability binding needs from a warm pool: start, provision, reattach, reap, close. */
export interface PooledBinding<RESOURCE> {
  /**
   * The pool's events, from the first start on: among them `engine` (an engine became reachable or unreachable),
   * `lost` (a lease was lost with its engine), `hibernate` and `wake`.
   */
  readonly events: PoolEvents<MultiEnginePoolEventMap>;
  /**
   * Makes and warms the pool once; its containers carry `context.ownerId` as `pai.owner`. Later calls share the
   * first one (provisioning calls it without a context). A binding warmed by hand without a context takes the
   * owner of the first start that names one, for the containers it creates from then on.
   * @throws Error when called again with another owner id.
   */
  start(context?: BindingStartContext): Promise<void>;
  provision(request: { leaseKey: string; signal: AbortSignal }): Promise<RESOURCE>;
  /**
   * Adopts the container recorded on `lease` (after a restart) on the engine its `meta.engine` names (the first
   * engine without one), running or hibernated (stopped: woken on its first use). One made from another spec or
   * pool id is replaced, with `carryOver`, by a fresh container that inherits those folders. `undefined` when it is
   * gone, cannot be adopted or replaced, or its engine does not answer.
   */
  reattach(lease: RecordedLease, signal: AbortSignal): Promise<RESOURCE | undefined>;
  /**
   * Removes the managed containers of this binding's engines that no kept lease names and whose owner is known
   * dead (any pool id), this pool id's containers without an owner (see `ContainerPool.reapStrays`), and the
   * managed containers `orphanResourceIds` names that this pool does not hold, on every reachable engine.
   * @throws PoolError `CONTAINER_FAILED` when some could not be removed (after trying them all), or
   * `DOCKER_UNAVAILABLE` when an engine could not be reaped (unreachable, or its reap failed)
   */
  reapUnowned(context: ReapContext): Promise<void>;
  /**
   * Removes this process's idle containers and stops the pool. Leased containers that were not released stay
   * running: the runtime decided to keep them (a lease another process may take over).
   */
  close(): Promise<void>;
  readonly poolId: string | undefined;
  readonly image: string | undefined;
  /** Summed over the engines, with each engine's status, free capacity and lost leases. */
  metrics(): MultiEnginePoolMetrics | undefined;
}

/**
 * Makes `pooled` a capability binding in place (its `poolId`/`image` getters stay live): what `dockerSandbox`
 * and `dockerBrowser` return. Structural, so the pool needs nothing from `@pai/core`.
 */
export function asCapabilityBinding<RESOURCE, NAME extends string>(
  pooled: PooledBinding<RESOURCE>,
  binding: { capability: NAME; lifetime: string | undefined; idleTtlMs: number | undefined },
): PooledBinding<RESOURCE> & {
  kind: "pai.capability-binding";
  capability: NAME;
  lifetime: string | undefined;
  idleTtlMs: number | undefined;
} {
  return Object.assign(pooled, { kind: "pai.capability-binding" as const, ...binding });
}

/**
 * The shared lifecycle of pool-backed capability bindings (`dockerSandbox`, `dockerBrowser`): the pool is made
 * and warmed once on first use, each provisioning takes a fresh container (an abort leaves none behind), a
 * restarted process adopts the containers its leases recorded, and closing removes the rest.
 */
export function createPooledBinding<STATE, FACADE extends object, SCOPE>(
  options: PooledBindingOptions<STATE, FACADE, SCOPE>,
): PooledBinding<PooledResource<FACADE, SCOPE>> {
  let pool: MultiEnginePool<STATE> | undefined;
  let image: string | undefined;
  let poolId: string | undefined;
  let ownerId: string | undefined;
  let starting: Promise<void> | undefined;
  let closed = false;
  /** Aborts what the first start still does (building an image) when the binding closes. */
  const closing = new AbortController();
  const tuning = options.tuning ?? {};
  const events = createPoolEvents<MultiEnginePoolEventMap>();

  function start(context?: BindingStartContext): Promise<void> {
    if (closed) return Promise.reject(options.closedError());
    if (context !== undefined) {
      if (ownerId !== undefined && context.ownerId !== ownerId) {
        return Promise.reject(
          new Error(
            `${options.name} binding: already started for owner ${ownerId ?? "(none)"}, not ${context.ownerId}`,
          ),
        );
      }
      ownerId = context.ownerId;
      // Started earlier without an owner (warmed by hand before the runtime): its pool takes this one now.
      const owner = ownerId;
      if (starting) return starting.then(() => pool?.claimOwner(owner));
    }
    starting ??= (async () => {
      const { image: preparedImage, ...prepared } = await options.preparePool({ signal: closing.signal });
      const id = options.poolId ?? `pai-${options.name}-${specHash(prepared.spec)}`;
      const { ensureImage, prepareEngine } = options;
      const created = createMultiEnginePool<STATE>({
        ...prepared,
        engines: options.engines,
        ...(ensureImage
          ? { ensureImage: (context) => ensureImage({ ...context, image: preparedImage }) }
          : {}),
        ...(prepareEngine
          ? { prepareEngine: (context) => prepareEngine({ ...context, image: preparedImage }) }
          : {}),
        poolId: id,
        ...(ownerId !== undefined ? { ownerId } : {}),
        ...(options.pool?.min !== undefined ? { min: options.pool.min } : {}),
        ...(options.pool?.max !== undefined ? { max: options.pool.max } : {}),
        ...(options.pool?.acquireTimeoutMs !== undefined
          ? { acquireTimeoutMs: options.pool.acquireTimeoutMs }
          : {}),
        ...(options.pool?.hibernateAfterMs !== undefined
          ? { hibernateAfterMs: options.pool.hibernateAfterMs }
          : {}),
        ...(options.pool?.maxHibernated !== undefined ? { maxHibernated: options.pool.maxHibernated } : {}),
        ...(tuning.maxConcurrentCreates !== undefined
          ? { maxConcurrentCreates: tuning.maxConcurrentCreates }
          : {}),
        ...(tuning.softIdleTimeoutMs !== undefined ? { softIdleTimeoutMs: tuning.softIdleTimeoutMs } : {}),
        ...(tuning.createBackoff !== undefined ? { createBackoff: tuning.createBackoff } : {}),
        ...(tuning.engineChecks !== undefined ? { engineChecks: tuning.engineChecks } : {}),
      });
      for (const name of ["engine", "lost", "hibernate", "wake", "restart", "error"] as const) {
        created.events.on(name, (event) => events.emit(name, event as never));
      }
      if (closed) {
        await created.close();
        throw options.closedError();
      }
      try {
        await created.warm({ timeoutMs: options.pool?.acquireTimeoutMs ?? 30_000 });
      } catch (error) {
        await created.close();
        throw error;
      }
      pool = created;
      image = preparedImage;
      poolId = id;
    })();
    starting.catch(() => {
      starting = undefined;
      ownerId = undefined;
    });
    return starting;
  }

  async function ready(): Promise<MultiEnginePool<STATE>> {
    await start();
    if (!pool || closed) throw options.closedError();
    return pool;
  }

  /** Failures of a restart that a successor would not fix. */
  const unrecoverable: readonly PoolErrorCode[] = [
    "NOT_FOUND",
    "POOL_EXHAUSTED",
    "POOL_CLOSED",
    "CONTAINER_LOST",
    "DOCKER_UNAVAILABLE",
  ];
  const restartsAllowed = options.pool?.restartLimit?.restarts ?? 3;
  const restartWindowMs = options.pool?.restartLimit?.withinMs ?? 60_000;

  /**
   * The resource over `first`: its facade is made from the lease's current state, again after each wake, and
   * guarded (with its per-run views) so that calls on a lost lease fail with `CONTAINER_LOST`; `meta.engine`
   * records the lease's engine. A container that stopped outside PAI's wish is started again on the next wake
   * (within `restartLimit`), or replaced by a successor that inherits its `carryOver` folders: the resource then
   * stands for the successor's lease.
   */
  function resourceOf(first: EngineLease<STATE>): PooledResource<FACADE, SCOPE> {
    const names = { image: image ?? "", poolId: poolId ?? "" };
    let lease = first;
    /** When the container was started again after stopping on its own, within the last `restartWindowMs`. */
    let restarts: number[] = [];
    let made:
      | { lease: EngineLease<STATE>; state: STATE; facade: FACADE; bind?(scope: SCOPE): FACADE }
      | undefined;
    const current = () => {
      if (lease.hibernated) {
        // A running lost lease still hands out its (guarded) facade, whose calls reject; a hibernated one has none.
        if (lease.lostSignal.aborted) throw lease.lostSignal.reason;
        throw new PoolError(
          "CONTAINER_FAILED",
          `${options.name} ${lease.containerId} is hibernated: wake it first`,
          {
            details: { containerId: lease.containerId, engineId: lease.engineId },
          },
        );
      }
      if (made?.lease !== lease || made.state !== lease.state) {
        const { facade, bind } = options.facadeOf(lease, names);
        const guarded = lease;
        made = {
          lease,
          state: lease.state,
          facade: guardLostFacade(facade, guarded),
          ...(bind ? { bind: (scope: SCOPE) => guardLostFacade(bind(scope), guarded) } : {}),
        };
      }
      return made;
    };

    /** Starts the stopped container again (or gives it a successor), within the restart limit. */
    async function restart(stopped: string, signal: AbortSignal): Promise<PooledRestart> {
      const now = Date.now();
      restarts = restarts.filter((at) => now - at < restartWindowMs);
      if (restarts.length >= restartsAllowed) {
        throw new PoolError(
          "CONTAINER_LOST",
          `${options.name} ${lease.containerId.slice(0, 12)} stopped again (${stopped}) after ${restarts.length} restarts within ${Math.round(restartWindowMs / 1000)} s: it is not started again before ${new Date(restarts[0]! + restartWindowMs).toISOString()}`,
          {
            details: {
              containerId: lease.containerId,
              engineId: lease.engineId,
              reason: stopped,
              restarts: restarts.length,
              withinMs: restartWindowMs,
            },
          },
        );
      }
      restarts.push(now);
      try {
        await lease.restart({ signal });
        return { status: "restarted", reason: stopped };
      } catch (error) {
        // Only a container that will not start (or set up) again is replaced: not one that is gone or waits for room.
        if (
          signal.aborted ||
          !options.carryOver?.length ||
          unrecoverable.some((code) => PoolError.hasCode(error, code))
        )
          throw error;
        const multi = await ready();
        lease = await multi.succeed(lease, { carry: options.carryOver, signal });
        const why = error instanceof Error ? error.message : String(error);
        return {
          status: "restarted",
          reason: `${stopped}; it could not be started again (${why}), so a new container took over its ${options.carryOver.join(", ")}`,
        };
      }
    }

    return {
      get facade() {
        return current().facade;
      },
      get resourceId() {
        return lease.containerId;
      },
      get meta() {
        return { ...names, engine: lease.engineId };
      },
      release: () => lease.release(),
      detach: () => lease.detach(),
      bind(scope) {
        const made = current();
        return made.bind ? made.bind(scope) : made.facade;
      },
      hibernation: {
        async wake(signal) {
          try {
            const stopped = await lease.stopped({ signal });
            if (stopped !== undefined) return await restart(stopped, signal);
            return (await lease.wake({ signal })) ? "woken" : "running";
          } catch (error) {
            if (PoolError.hasCode(error, "NOT_FOUND")) return "gone";
            throw error;
          }
        },
        idle: () => lease.idle(),
      },
    };
  }

  return {
    events,
    start,
    async provision(request) {
      const current = await ready();
      request.signal.throwIfAborted();
      const lease = await current.acquire({
        leaseKey: `${options.name}:${request.leaseKey}`,
        signal: request.signal,
      });
      if (request.signal.aborted) {
        await lease.release();
        request.signal.throwIfAborted();
      }
      return resourceOf(lease);
    },
    async reattach(record, signal) {
      const current = await ready();
      const from = {
        leaseKey: `${options.name}:${record.lifetime}:${record.key}`,
        signal,
        ...(typeof record.meta.engine === "string" ? { engineId: record.meta.engine } : {}),
      };
      if (typeof record.meta.poolId !== "string" || record.meta.poolId === poolId) {
        try {
          return resourceOf(await current.adopt(record.resourceId, from));
        } catch (error) {
          // gone, or its engine does not answer: nothing to carry over either
          if (!PoolError.hasCode(error, "CONTAINER_FAILED")) return undefined;
        }
      }
      if (!options.carryOver?.length) return undefined;
      try {
        return resourceOf(await current.replace(record.resourceId, { ...from, carry: options.carryOver }));
      } catch {
        return undefined;
      }
    },
    async reapUnowned(context) {
      const current = await ready();
      const { failed, unreached } = await current.reapStrays({
        keep: context.keepResourceIds,
        deadOwners: context.deadOwnerIds,
        orphans: context.orphanResourceIds ?? [],
      });
      // The runtime forgets dead owners only once they are reaped: a failure must reach it.
      if (failed.length > 0) {
        throw new PoolError(
          "CONTAINER_FAILED",
          `${options.name} binding: could not remove ${failed.length} stray containers`,
          { details: { containerIds: failed } },
        );
      }
      if (unreached.length > 0) {
        throw new PoolError(
          "DOCKER_UNAVAILABLE",
          `${options.name} binding: could not reap strays on engines ${unreached.join(", ")}`,
          { details: { engineIds: unreached } },
        );
      }
    },
    async close() {
      closed = true;
      closing.abort(options.closedError());
      await starting?.catch(() => undefined);
      await pool?.close({ keepLeased: true });
    },
    get poolId() {
      return poolId;
    },
    get image() {
      return image;
    },
    metrics: () => pool?.metrics(),
  };
}
