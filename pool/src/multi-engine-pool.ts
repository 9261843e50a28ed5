import { randomBytes } from "node:crypto";
import { createAcquireOnEngines } from "./acquire-on-engines.ts";
import type { ContainerLeaseInfo } from "./container-lease.ts";
import type {
  AcquireOptions,
  AdoptOptions,
  CloseOptions,
  ContainerPoolOptions,
  ReapStraysOptions,
  WarmOptions,
} from "./container-pool.ts";
import { type ResolvedContainerSpec, resolveContainerSpec } from "./container-spec.ts";
import { poolClosedError, unreachableError } from "./engine-errors.ts";
import { createEngineHealth, type EngineCheckOptions } from "./engine-health.ts";
import {
  createEngineLease,
  type EngineLease,
  type EngineLeaseContext,
  loseEngineLeases,
  removeLostContainers,
} from "./engine-lease.ts";
import { createEnginePreparation, type EnginePreparationContext } from "./engine-preparation.ts";
import { createEngineRecords, type EngineRecord, type PoolEngine } from "./engine-record.ts";
import { type CarryOptions, createEngineSuccession, type ReplaceOptions } from "./engine-succession.ts";
import { guardEngineDriver } from "./guard-engine-driver.ts";
import { createLatencyWindow } from "./latency-window.ts";
import { type MultiEnginePoolMetrics, multiEngineMetrics } from "./multi-engine-metrics.ts";
import type { MultiEnginePoolEventMap } from "./multi-engine-pool-events.ts";
import { PoolError } from "./pool-error.ts";
import { createPoolEvents, type PoolEvents } from "./pool-events.ts";
import { reapEngines } from "./reap-engines.ts";
import { specHash } from "./spec-hash.ts";
import { warmEngines } from "./warm-engines.ts";

// The multi-engine pool's types, each defined beside the part of it that it describes.
export type { EngineCheckOptions } from "./engine-health.ts";
export type { EngineLease } from "./engine-lease.ts";
export type { EngineStatus, PoolEngine } from "./engine-record.ts";
export type { CarryOptions, ReplaceOptions } from "./engine-succession.ts";
export type { EngineMetrics, MultiEnginePoolMetrics } from "./multi-engine-metrics.ts";
export type { MultiEnginePoolEventMap } from "./multi-engine-pool-events.ts";

/** Options of {@link createMultiEnginePool}: those of `createContainerPool` for every engine, plus the engines. */
export interface MultiEnginePoolOptions<STATE = undefined>
  extends Omit<ContainerPoolOptions<STATE>, "driver" | "reapOnStart" | "min" | "max"> {
  /** The engines, at least one; their ids must differ. */
  engines: readonly PoolEngine[];
  /** Started containers kept ready **on each reachable engine** (an engine's own `min` overrides it). @default 1 */
  min?: number;
  /** Containers **on each engine** at most, leased ones included (an engine's own `max` overrides it). @default 10 */
  max?: number;
  /**
   * Makes sure an engine has the spec's image before the driver's `checkEngine` looks for it (e.g. builds it
   * there: see `provideImage`). Once per engine, like `prepareEngine`, and retried alike after a failure.
   */
  ensureImage?: (context: EnginePreparationContext) => Promise<void>;
  /**
   * One-time set-up of an engine before its first container (e.g. filling a shared volume), after `ensureImage`
   * and the driver's `checkEngine` (the image is there, the disk plugin answers); a failure of any is retried on
   * the next use, and placement tries the other engines meanwhile. `driver` is the engine's guarded driver.
   */
  prepareEngine?: (context: EnginePreparationContext) => Promise<void>;
  /** Health checks and `docker info` refreshes; see {@link EngineCheckOptions}. */
  engineChecks?: EngineCheckOptions;
}

/** A warm pool spread over several engines. See {@link createMultiEnginePool}. */
export interface MultiEnginePool<STATE = undefined> {
  readonly poolId: string;
  readonly ownerId: string | undefined;
  /**
   * Gives a pool made without an owner one, on every engine: containers created from now on carry it (see
   * `ContainerPool.claimOwner`). Idempotent for the same id.
   * @throws Error when the pool already has another owner.
   */
  claimOwner(ownerId: string): void;
  readonly spec: ResolvedContainerSpec;
  readonly specHash: string;
  readonly events: PoolEvents<MultiEnginePoolEventMap>;
  /** A fresh container on the reachable engine with the most free capacity. */
  acquire(options: AcquireOptions): Promise<EngineLease<STATE>>;
  /**
   * Takes over a container this pool id made before a restart, on engine `engineId` (the first engine when it is
   * not given: leases recorded before engines were named).
   * @throws PoolError `NOT_FOUND` for an engine the pool does not have, `DOCKER_UNAVAILABLE` when it is
   * unreachable, and what `ContainerPool.adopt` throws.
   */
  adopt(containerId: string, options?: AdoptOptions & { engineId?: string }): Promise<EngineLease<STATE>>;
  /**
   * Takes over, by a successor, a managed container this pool cannot adopt because another spec or pool id made
   * it (an upgrade changed the spec), or whose adopt failed (`adoptFailed`): acquires a fresh container for
   * `leaseKey`, copies what the `carry` folders hold from the old container on engine `engineId` into it (see
   * `carryPaths`), then removes the old one.
   * @throws PoolError `NOT_FOUND` for an engine the pool does not have or a container that is gone,
   * `DOCKER_UNAVAILABLE` when an engine is unreachable, `CONTAINER_FAILED` for a container that is not managed
   * or that this pool could adopt (unless `adoptFailed`), and what `acquire` and the copy throw (the fresh
   * container is then released and the old one kept).
   */
  replace(containerId: string, options: ReplaceOptions): Promise<EngineLease<STATE>>;
  /**
   * Gives a lease whose container cannot be started again a successor: a fresh container for its lease key (on the
   * engine with the most free capacity) into which what the `carry` folders hold is copied from the old one (running
   * or stopped, see `carryPaths`); the old lease is then released.
   * @throws what `acquire` and the copy throw (the fresh container is then released and the old lease kept)
   */
  succeed(lease: EngineLease<STATE>, options: CarryOptions): Promise<EngineLease<STATE>>;
  /**
   * `ContainerPool.reapStrays` on every reachable engine; an engine that fails is reported as an `error` event.
   * `unreached` names the engines not reaped (unreachable, or failed): what dead owners left there is still there.
   */
  reapStrays(
    options?: ReapStraysOptions,
  ): Promise<{ removed: string[]; failed: string[]; unreached: string[] }>;
  /**
   * Resolves when every reachable engine that could be prepared has its `min` containers ready; rejects when one
   * of them cannot warm, or when no engine answers or can be prepared (with the preparation's error). Each
   * engine's `timeoutMs` runs from the end of its preparation (its image may have to be built first).
   */
  warm(options?: WarmOptions): Promise<void>;
  metrics(): MultiEnginePoolMetrics;
  leases(): Array<ContainerLeaseInfo & { engineId: string }>;
  /** Closes every engine's pool (see `ContainerPool.close`) and stops the health checks. */
  close(options?: CloseOptions): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/**
 * A warm pool spread over several Docker engines: one `ContainerPool` per engine (its own `min` warm containers,
 * its own `max`, backoff and event stream), a health check per engine, and placement by free capacity.
 *
 * - **Placement.** `acquire` takes a container from the reachable engine with the highest free capacity: the
 *   smallest of its free lease slots (`(max − leased) / max`), its host's memory and its CPUs not yet promised to
 *   running containers (from `docker info`, refreshed every `infoIntervalMs`, each running container counted at
 *   this pool's limits); ties go to more free slots, then to an engine with a container ready.
 * - **Lost engines.** A health check (every `intervalMs`, and at once when a call finds the engine gone) that
 *   fails marks the engine unreachable: placement skips it, its driver fails calls at once, and every lease on
 *   it is **lost** (a `lost` event; `lease.lostSignal` aborts with a `CONTAINER_LOST` error naming the engine).
 *   Checks go on with backoff; when it answers again it takes new containers, and the lost ones are removed.
 *
 * @example
 * const pool = createMultiEnginePool({
 *   engines: [
 *     { id: "a", driver: createDockerDriver({ socketPath: "/run/docker-a.sock" }) },
 *     { id: "b", driver: createDockerDriver({ host: "10.0.0.5", port: 2376, ca, cert, key }), max: 20 },
 *   ],
 *   spec: { image: "pai/sandbox:latest" },
 *   min: 1, // warm containers on each engine
 *   max: 8, // containers on each engine (b: 20)
 * });
 * const lease = await pool.acquire({ leaseKey: "sandbox:thread:42", signal });
 * lease.engineId; // "a" or "b"
 */
export function createMultiEnginePool<STATE = undefined>(
  options: MultiEnginePoolOptions<STATE>,
): MultiEnginePool<STATE> {
  const {
    engines,
    ensureImage,
    prepareEngine,
    engineChecks = {},
    ownerId: givenOwner,
    ...poolOptions
  } = options;
  let ownerId = givenOwner;
  if (!Array.isArray(engines) || engines.length === 0) {
    throw new TypeError("createMultiEnginePool: engines must list at least one engine");
  }
  const spec = resolveContainerSpec(options.spec);
  const hash = specHash(spec);
  const poolId = options.poolId ?? `pool-${randomBytes(4).toString("hex")}`;
  const acquireTimeoutMs = options.acquireTimeoutMs ?? 30_000;
  if (!(acquireTimeoutMs > 0) || !Number.isFinite(acquireTimeoutMs)) {
    throw new RangeError("createMultiEnginePool: acquireTimeoutMs must be a positive, finite number");
  }
  const records = createEngineRecords<STATE>(engines, { min: options.min, max: options.max });
  const byId = new Map(records.map((record) => [record.id, record]));

  const events = createPoolEvents<MultiEnginePoolEventMap>();
  const latency = createLatencyWindow();
  const closeController = new AbortController();
  const closeSignal = closeController.signal;
  let closePromise: Promise<void> | undefined;

  const ensurePool = createEnginePreparation<STATE>({
    poolId,
    spec,
    ensureImage,
    prepareEngine,
    poolOptions: (record) => ({
      ...poolOptions,
      ...(ownerId !== undefined ? { ownerId } : {}),
      driver: record.driver,
      poolId,
      min: record.min,
      max: record.max,
      acquireTimeoutMs,
    }),
    closeSignal,
    events,
  });
  const health = createEngineHealth<STATE>({
    records,
    checks: engineChecks,
    closeSignal,
    events,
    onReachable(record) {
      void removeLostContainers(record, { events, closeSignal });
      void ensurePool(record).catch(() => undefined);
    },
    onUnreachable: loseEngineLeases,
  });
  for (const record of records) record.driver = guardEngineDriver(record.raw, health.gate(record));
  // The first health check of every engine; the operations below wait for it once.
  const firstChecks = Promise.all(records.map((record) => health.check(record)));

  const leaseContext: EngineLeaseContext<STATE> = { events, check: health.check, closeSignal };
  const acquire = createAcquireOnEngines<STATE>({
    poolId,
    records,
    limits: spec.limits,
    acquireTimeoutMs,
    firstChecks,
    closeSignal,
    latency,
    ensurePool,
    check: health.check,
    engineLease: (record, lease) => createEngineLease(record, lease, leaseContext),
  });

  /**
   * The engine a recorded container is on (`engineId`; the first engine when not given), once the first health
   * checks are done.
   * @throws PoolError `POOL_CLOSED`, `NOT_FOUND` for an engine the pool does not have, `DOCKER_UNAVAILABLE` when
   * the engine is unreachable
   */
  async function reachableEngineOf(
    containerId: string,
    engineId: string | undefined,
  ): Promise<EngineRecord<STATE>> {
    if (closeSignal.aborted) throw poolClosedError(poolId);
    const record = engineId === undefined ? records[0] : byId.get(engineId);
    if (!record) {
      throw new PoolError("NOT_FOUND", `Docker engine ${engineId} is not an engine of pool ${poolId}`, {
        details: { engineId, containerId, poolId },
      });
    }
    await firstChecks;
    if (record.status === "unreachable") throw unreachableError(record);
    return record;
  }

  async function adopt(
    containerId: string,
    adoptOptions: AdoptOptions & { engineId?: string } = {},
  ): Promise<EngineLease<STATE>> {
    const { engineId, ...rest } = adoptOptions;
    const record = await reachableEngineOf(containerId, engineId);
    const pool = await ensurePool(record);
    return createEngineLease(record, await pool.adopt(containerId, rest), leaseContext);
  }

  const { replace, succeed } = createEngineSuccession<STATE>({
    poolId,
    specHash: hash,
    events,
    acquire,
    reachableEngineOf,
  });

  function leases(): Array<ContainerLeaseInfo & { engineId: string }> {
    return records.flatMap((record) =>
      (record.pool?.leases() ?? []).map((lease) => ({ ...lease, engineId: record.id })),
    );
  }

  function close(closeOptions: CloseOptions = {}): Promise<void> {
    closePromise ??= (async () => {
      closeController.abort(poolClosedError(poolId));
      health.stop();
      await Promise.all(
        records.map(async (record) => {
          const pool = record.pool ?? (await record.preparing?.catch(() => undefined));
          await pool?.close(closeOptions);
        }),
      );
    })();
    return closePromise;
  }

  function claimOwner(claimed: string): void {
    if (typeof claimed !== "string" || claimed === "") {
      throw new TypeError("claimOwner: ownerId must be a non-empty string");
    }
    if (ownerId !== undefined && ownerId !== claimed) {
      throw new Error(`Container pool ${poolId} already belongs to owner ${ownerId}, not ${claimed}`);
    }
    ownerId = claimed;
    // Engines prepared later take it from their options; the ones already prepared, now.
    for (const record of records) record.pool?.claimOwner(claimed);
  }

  return {
    poolId,
    get ownerId() {
      return ownerId;
    },
    claimOwner,
    spec,
    specHash: hash,
    events,
    acquire,
    adopt,
    replace,
    succeed,
    reapStrays: (reapOptions) => reapEngines({ records, firstChecks, events, ensurePool }, reapOptions),
    warm: (warmOptions) =>
      warmEngines(
        { poolId, records, firstChecks, closeSignal, ensurePool, check: health.check },
        warmOptions,
      ),
    metrics: () => multiEngineMetrics(records, spec.limits, latency),
    leases,
    close,
    [Symbol.asyncDispose]: () => close(),
  };
}
