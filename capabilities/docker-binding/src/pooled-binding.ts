import type {
  BindingStartContext,
  CapabilityBinding,
  CapabilityLifetime,
  LeaseRecord,
  ProvisionRequest,
  ReapContext,
} from "@pai/core";
import {
  type ContainerPoolOptions,
  createMultiEnginePool,
  createPoolEvents,
  type MultiEnginePool,
  type MultiEnginePoolEventMap,
  type MultiEnginePoolMetrics,
  type MultiEnginePoolOptions,
  type PoolEngine,
  PoolError,
  type PoolEvents,
  specHash,
} from "@pai/pool";
import type { FacadeCalls } from "./bind-facade.ts";
import {
  multiEnginePoolSettings,
  type PooledBindingPoolOptions,
  type PooledBindingTuning,
} from "./multi-engine-pool-settings.ts";
import { reportPoolTelemetry } from "./pool-telemetry.ts";
import {
  type CheckpointsOf,
  createPooledResource,
  type FacadeOf,
  type PooledResource,
  type PortOpener,
} from "./pooled-resource.ts";

/**
 * What a pooled binding's `prepare` answers, once: the image, the pool's container options (spec and hooks, which
 * get the driver of the container's engine), each engine's one-time preparation, and the facade over a lease.
 */
export interface PreparedPool<STATE, FACADE>
  extends Pick<ContainerPoolOptions<STATE>, "spec">,
    Partial<
      Pick<ContainerPoolOptions<STATE>, "setup" | "teardown" | "beforeStart" | "healthCheck" | "containerEnv">
    >,
    Partial<Pick<MultiEnginePoolOptions<STATE>, "ensureImage" | "prepareEngine">> {
  image: string;
  /**
   * The facade over a running lease (its `state` set up); build it on `lease.driver` (the lease's engine). Made
   * again after each wake, as the wake sets the container up anew. The binding shows it, and each run's view of it,
   * through `bindFacade`: once the lease is lost (its engine stopped answering), calls fail with `CONTAINER_LOST`.
   */
  facadeOf: FacadeOf<STATE, FACADE>;
  /** Connections to a lease's container's ports (see `ProvisionedResource.openPort`); without it resources have none. */
  openPort?: PortOpener<STATE> | undefined;
  /** Checkpoints of a lease's container (see `ProvisionedResource.checkpoints`); without it resources have none. */
  checkpoints?: CheckpointsOf<STATE> | undefined;
}

/** What {@link createPooledBinding} needs to know about one kind of pooled resource. */
export interface PooledBindingOptions<STATE, FACADE> {
  /** The capability's name: prefixes lease keys and names the binding in errors. */
  capability: string;
  /** Overrides the capability's default lifetime. */
  lifetime?: CapabilityLifetime | undefined;
  /** Idle time after which `thread`/`user` resources are removed. @default the runtime's (30 minutes) */
  idleTtlMs?: number | undefined;
  /** The engines the pool spans, at least one (see `dockerPoolEngines`). */
  engines: readonly PoolEngine[];
  pool?: PooledBindingPoolOptions | undefined;
  tuning?: PooledBindingTuning | undefined;
  /** The pool id; by default `pai-<capability>-<spec hash>`, so a restarted process finds its own containers. */
  poolId?: string | undefined;
  /**
   * Folders (absolute paths) whose contents a recorded container's successor inherits when the container cannot
   * be reattached as it is because another spec made it (an upgrade changed the image, limits or PAI's own
   * settings): `reattach` then gives the lease a fresh container with their contents copied from the old one, and
   * removes the old one. Without it such a lease gets no container back (the runtime provisions a new, empty one).
   */
  carryOver?: readonly string[] | undefined;
  /**
   * A successor is stopped while `carryOver` is copied in, and started again with its set-up: for folders a program
   * of the container holds open from its start (a browser's profile). @default false
   */
  carryOverStopped?: boolean | undefined;
  /** The facade's members (see `bindFacade`). */
  calls: FacadeCalls<FACADE>;
  /**
   * The one hook, called once, on the first start (image resolution belongs here): what the pool is made of.
   * `signal` aborts when the binding closes.
   */
  prepare(context: { signal: AbortSignal }): Promise<PreparedPool<STATE, FACADE>>;
  /** The error for calls on a closed binding. */
  closedError(): Error;
}

/** The capability binding over a warm pool: start, provision, reattach, reap, close, and a view of the pool. */
export interface PooledBinding<FACADE> extends CapabilityBinding<FACADE> {
  readonly capability: string;
  /**
   * The pool's events, from the first start on: among them `engine` (an engine became reachable or unreachable),
   * `lost` (a lease was lost with its engine), `hibernate`, `wake` and `error`.
   */
  readonly events: PoolEvents<MultiEnginePoolEventMap>;
  /**
   * Makes and warms the pool once; its containers carry `context.ownerId` as `pai.owner`. Later calls share the
   * first one (provisioning calls it without a context). A binding warmed by hand without a context takes the
   * owner of the first start that names one, for the containers it creates from then on.
   * @throws Error when called again with another owner id.
   */
  start(context?: BindingStartContext): Promise<void>;
  /** A fresh container for `leaseKey` (it reads `leaseKey` and `signal` only); an abort leaves none behind. */
  provision(
    request: Pick<ProvisionRequest, "leaseKey" | "signal"> & Partial<ProvisionRequest>,
  ): Promise<PooledResource<FACADE>>;
  /**
   * Adopts the container recorded on `lease` (after a restart) on the engine its `meta.engine` names (the first
   * engine without one), running or hibernated (stopped: woken on its first use). One made from another spec or
   * pool id, or one whose set-up fails (twice), is replaced, with `carryOver`, by a fresh container that inherits
   * those folders. `undefined` when it is gone, its engine does not answer, or it is another pool id's and there is
   * nothing to carry over.
   * @throws PoolError `CONTAINER_FAILED` (or what the replacement threw) when it is there but could be neither
   * adopted (its set-up failed, or this pool id's other spec made it) nor replaced: the runtime reports it and
   * gives the lease a new container.
   */
  reattach(
    lease: Pick<LeaseRecord, "resourceId" | "lifetime" | "key" | "meta"> & Partial<LeaseRecord>,
    signal: AbortSignal,
  ): Promise<PooledResource<FACADE> | undefined>;
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
  /** The pool id, once started. */
  readonly poolId: string | undefined;
  /** The image, once started. */
  readonly image: string | undefined;
  /** The pool's metrics (summed, and per engine: status, free capacity, lost leases), once started. */
  metrics(): MultiEnginePoolMetrics | undefined;
}

/** The pool once started, with what the resources over its leases are made of. */
interface OpenPool<STATE, FACADE> {
  pool: MultiEnginePool<STATE>;
  /** Stops reporting the pool's metrics. */
  stopTelemetry: () => void;
  image: string;
  poolId: string;
  facadeOf: FacadeOf<STATE, FACADE>;
  openPort: PortOpener<STATE> | undefined;
  checkpoints: CheckpointsOf<STATE> | undefined;
}

/** The errors a reap leaves: containers it could not remove, engines it could not reach. */
function reapError(
  capability: string,
  result: { failed: string[]; unreached: string[] },
): PoolError | undefined {
  if (result.failed.length > 0) {
    return new PoolError(
      "CONTAINER_FAILED",
      `${capability} binding: could not remove ${result.failed.length} stray containers`,
      { details: { containerIds: result.failed } },
    );
  }
  if (result.unreached.length > 0) {
    return new PoolError(
      "DOCKER_UNAVAILABLE",
      `${capability} binding: could not reap strays on engines ${result.unreached.join(", ")}`,
      { details: { engineIds: result.unreached } },
    );
  }
  return undefined;
}

/**
 * A capability binding over a warm pool of containers, the shared lifecycle of `dockerSandbox` and `dockerBrowser`:
 * the pool is prepared (`prepare`), made and warmed once on first use, each provisioning takes a fresh container
 * (an abort leaves none behind), a restarted process adopts the containers its leases recorded, and closing removes
 * the rest.
 */
export function createPooledBinding<STATE, FACADE extends object>(
  options: PooledBindingOptions<STATE, FACADE>,
): PooledBinding<FACADE> {
  const { capability } = options;
  let open: OpenPool<STATE, FACADE> | undefined;
  let ownerId: string | undefined;
  let starting: Promise<void> | undefined;
  let closed = false;
  /** Aborts what the first start still does (building an image) when the binding closes. */
  const closing = new AbortController();
  const events = createPoolEvents<MultiEnginePoolEventMap>();

  /** Prepares, makes and warms the pool. */
  async function openPool(): Promise<OpenPool<STATE, FACADE>> {
    const { image, facadeOf, openPort, checkpoints, ...containers } = await options.prepare({
      signal: closing.signal,
    });
    const poolId = options.poolId ?? `pai-${capability}-${specHash(containers.spec)}`;
    const pool = createMultiEnginePool<STATE>({
      ...containers,
      ...multiEnginePoolSettings(options.pool, options.tuning),
      engines: options.engines,
      poolId,
      ...(ownerId !== undefined ? { ownerId } : {}),
    });
    for (const name of ["engine", "lost", "hibernate", "wake", "restart", "error"] as const) {
      pool.events.on(name, (event) => events.emit(name, event as never));
    }
    if (closed) {
      await pool.close();
      throw options.closedError();
    }
    const stopTelemetry = reportPoolTelemetry(pool, { capability, poolId });
    try {
      await pool.warm({ timeoutMs: options.pool?.acquireTimeoutMs ?? 30_000 });
    } catch (error) {
      stopTelemetry();
      await pool.close();
      throw error;
    }
    return { pool, stopTelemetry, image, poolId, facadeOf, openPort, checkpoints };
  }

  function start(context?: BindingStartContext): Promise<void> {
    if (closed) return Promise.reject(options.closedError());
    if (context !== undefined) {
      if (ownerId !== undefined && context.ownerId !== ownerId) {
        return Promise.reject(
          new Error(`${capability} binding: already started for owner ${ownerId}, not ${context.ownerId}`),
        );
      }
      ownerId = context.ownerId;
      // Started earlier without an owner (warmed by hand before the runtime): its pool takes this one now.
      const owner = ownerId;
      if (starting) return starting.then(() => open?.pool.claimOwner(owner));
    }
    starting ??= openPool().then((opened) => {
      open = opened;
    });
    starting.catch(() => {
      starting = undefined;
      ownerId = undefined;
    });
    return starting;
  }

  async function ready(): Promise<OpenPool<STATE, FACADE>> {
    await start();
    if (!open || closed) throw options.closedError();
    return open;
  }

  function resourceOf(
    opened: OpenPool<STATE, FACADE>,
    lease: Awaited<ReturnType<MultiEnginePool<STATE>["acquire"]>>,
  ) {
    return createPooledResource<STATE, FACADE>({
      name: capability,
      lease,
      pool: opened.pool,
      names: { image: opened.image, poolId: opened.poolId },
      calls: options.calls,
      facadeOf: opened.facadeOf,
      carryOver: options.carryOver,
      carryOverStopped: options.carryOverStopped,
      restartLimit: options.pool?.restartLimit,
      openPort: opened.openPort,
      checkpoints: opened.checkpoints,
    });
  }

  return {
    kind: "pai.capability-binding",
    capability,
    lifetime: options.lifetime,
    idleTtlMs: options.idleTtlMs,
    events,
    start,
    async provision(request) {
      const opened = await ready();
      request.signal.throwIfAborted();
      const lease = await opened.pool.acquire({
        leaseKey: `${capability}:${request.leaseKey}`,
        signal: request.signal,
      });
      if (request.signal.aborted) {
        await lease.release();
        request.signal.throwIfAborted();
      }
      return resourceOf(opened, lease);
    },
    async reattach(record, signal) {
      const opened = await ready();
      const from = {
        leaseKey: `${capability}:${record.lifetime}:${record.key}`,
        signal,
        ...(typeof record.meta.engine === "string" ? { engineId: record.meta.engine } : {}),
      };
      let adoptFailure: PoolError | undefined;
      if (typeof record.meta.poolId !== "string" || record.meta.poolId === opened.poolId) {
        try {
          return resourceOf(opened, await opened.pool.adopt(record.resourceId, from));
        } catch (error) {
          // gone, or its engine does not answer: nothing to carry over either
          if (!PoolError.hasCode(error, "CONTAINER_FAILED")) return undefined;
          adoptFailure = error;
        }
      }
      if (!options.carryOver?.length) {
        if (adoptFailure) throw adoptFailure;
        return undefined;
      }
      try {
        const carry = { carry: options.carryOver, carryStopped: options.carryOverStopped === true };
        // its set-up failed: a successor inherits its folders (a container another spec made is replaced anyway)
        const adoptFailed = adoptFailure?.details?.stage === "setup";
        return resourceOf(
          opened,
          await opened.pool.replace(record.resourceId, { ...from, ...carry, adoptFailed }),
        );
      } catch (error) {
        if (PoolError.hasCode(error, "NOT_FOUND") || PoolError.hasCode(error, "DOCKER_UNAVAILABLE"))
          return undefined;
        // no successor either: why the container could not be adopted is the first news
        throw adoptFailure ?? error;
      }
    },
    async reapUnowned(context) {
      const opened = await ready();
      const result = await opened.pool.reapStrays({
        keep: context.keepResourceIds,
        deadOwners: context.deadOwnerIds,
        orphans: context.orphanResourceIds ?? [],
      });
      // The runtime forgets dead owners only once they are reaped: a failure must reach it.
      const failure = reapError(capability, result);
      if (failure) throw failure;
    },
    async close() {
      closed = true;
      closing.abort(options.closedError());
      await starting?.catch(() => undefined);
      open?.stopTelemetry();
      await open?.pool.close({ keepLeased: true });
    },
    get poolId() {
      return open?.poolId;
    },
    get image() {
      return open?.image;
    },
    metrics: () => open?.pool.metrics(),
  };
}
