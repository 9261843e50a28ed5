import { randomBytes } from "node:crypto";
import type { ContainerDriver } from "./container-driver.ts";
import { type ContainerSpec, type ResolvedContainerSpec, resolveContainerSpec } from "./container-spec.ts";
import type { CreateBackoffOptions } from "./create-backoff.ts";
import { specHash } from "./spec-hash.ts";

/** What the pool's hooks receive. */
export interface ContainerHookContext {
  containerId: string;
  driver: ContainerDriver;
  /** Aborts when the pool closes. */
  signal: AbortSignal;
}

/** Options of {@link createContainerPool}. */
export interface ContainerPoolOptions<STATE = undefined> {
  /** The engine: `createDockerDriver()`, or `createFakeDriver()` from `@pai/pool/testing` in unit tests. */
  driver: ContainerDriver;
  /** What every container of the pool runs; its `specHash` labels the containers. */
  spec: ContainerSpec;
  /**
   * Started containers kept ready for `acquire` (idle ones; leased containers do not count), as long as the
   * total stays within `max`.
   * @default 1
   */
  min?: number;
  /**
   * Containers in total: idle, leased and being created.
   * @default 10
   */
  max?: number;
  /**
   * Deadline of `acquire` (generic-pool's `acquireTimeoutMillis`, always set): past it `acquire` rejects with
   * `POOL_EXHAUSTED`, or `DOCKER_UNAVAILABLE` when creates are failing because the engine is unreachable.
   * @default 30000
   */
  acquireTimeoutMs?: number;
  /**
   * The `pai.pool` label. Use a stable id per deployment and spec when you `adopt` or `reapStrays` across
   * restarts; the default is random, so two processes never reap each other's containers.
   * @default `pool-<8 random hex digits>`
   */
  poolId?: string;
  /**
   * The `pai.owner` label: the runtime process these containers belong to (its heartbeat in a shared store tells
   * other processes whether it is alive). Other owners' `reapStrays({ deadOwners })` remove them once it is
   * known dead. Without it containers carry no owner label and only this pool id's `reapStrays` removes them.
   */
  ownerId?: string;
  /**
   * Creates running at once (each costs ~265 ms of engine CPU here).
   * @default 2
   */
  maxConcurrentCreates?: number;
  /** Backoff between failing creates; see {@link CreateBackoffOptions}. */
  createBackoff?: CreateBackoffOptions;
  /**
   * Idle containers above `min` are removed after this long (generic-pool's `softIdleTimeoutMillis`; a finite
   * `idleTimeoutMillis` is never used, as it would evict below `min` and churn). `0` disables trimming.
   * @default 60000
   */
  softIdleTimeoutMs?: number;
  /**
   * How often idle containers are checked for trimming and for engine `die`/`oom` events.
   * @default 1000
   */
  evictionIntervalMs?: number;
  /**
   * A lease marked idle (`lease.idle()`) this long is hibernated: its container is stopped (files and volumes
   * kept, processes gone) and no longer counts toward `max`; `lease.wake()` starts it again. When an `acquire`
   * or a wake waits for room, the least recently used idle lease is hibernated at once. `Infinity` only
   * hibernates to make room.
   * @default 120000
   */
  hibernateAfterMs?: number;
  /**
   * Hibernated leases kept; beyond it the longest hibernated are removed (their `wake` then rejects with
   * `NOT_FOUND`).
   * @default 100
   */
  maxHibernated?: number;
  /**
   * Calls `reapStrays()` (keeping nothing) before the first container is created. Leave it off when you
   * `adopt` containers after a restart: call `reapStrays({ keep })` yourself instead.
   * @default false
   */
  reapOnStart?: boolean;
  /**
   * Environment for one container only, made at each create (`create`) and never part of the spec (nor of its
   * hash): e.g. a secret that container's agent presents. `setup` gets it back as `createEnv` after the create,
   * and after each wake of a container this pool created, right before which `renew` runs (e.g. to admit that
   * secret once more: nothing runs in a stopped container).
   */
  containerEnv?: {
    create(): Readonly<Record<string, string>>;
    renew?(env: Readonly<Record<string, string>>): void;
  };
  /** Runs after create, before start: e.g. copy an agent binary in with `driver.putArchive`. */
  beforeStart?: (context: ContainerHookContext) => Promise<void>;
  /**
   * Runs after start (and on `adopt`), before the container counts as warm; its result is the lease's `state`
   * (e.g. a connection to an in-container agent). A throw fails the create, which is retried with backoff.
   * `createEnv` is what `containerEnv` gave the container, when this pool created it (a create or a wake).
   */
  setup?: (
    context: ContainerHookContext & { adopted: boolean; createEnv?: Readonly<Record<string, string>> },
  ) => Promise<STATE> | STATE;
  /**
   * Checks a warm container on borrow without a Docker round trip (e.g. "its in-container agent is still
   * connected"). Without it the pool asks the engine (`inspect`). Containers that die or hit OOM are
   * evicted from Docker's events either way.
   */
  healthCheck?: (context: { containerId: string; state: STATE | undefined }) => boolean | Promise<boolean>;
  /** Runs before a container is removed, with the state `setup` returned. Errors are reported, not thrown. */
  teardown?: (context: {
    containerId: string;
    driver: ContainerDriver;
    state: STATE;
  }) => Promise<void> | void;
}

/** A pool's spec, names and numbers, resolved from {@link ContainerPoolOptions} and checked. Internal. */
export interface ContainerPoolSettings {
  readonly spec: ResolvedContainerSpec;
  readonly specHash: string;
  readonly poolId: string;
  /** The `pai.instance` label: this pool object's creations, whatever their pool id. */
  readonly instanceId: string;
  readonly min: number;
  readonly max: number;
  readonly acquireTimeoutMs: number;
  readonly maxConcurrentCreates: number;
  readonly softIdleTimeoutMs: number;
  readonly evictionIntervalMs: number;
  readonly hibernateAfterMs: number;
  readonly maxHibernated: number;
}

function nonNegativeInteger(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new RangeError(`createContainerPool: ${name} must be a non-negative integer, got ${value}`);
  }
  return value;
}

/**
 * Applies the defaults of {@link ContainerPoolOptions} and checks them.
 * @throws TypeError or RangeError naming the option.
 */
export function resolveContainerPoolSettings<STATE>(
  options: ContainerPoolOptions<STATE>,
): ContainerPoolSettings {
  const spec = resolveContainerSpec(options.spec);
  const poolId = options.poolId ?? `pool-${randomBytes(4).toString("hex")}`;
  const { ownerId } = options;
  if (ownerId !== undefined && (typeof ownerId !== "string" || ownerId === "")) {
    throw new TypeError("createContainerPool: ownerId must be a non-empty string");
  }
  const max = nonNegativeInteger("max", options.max ?? 10);
  if (max < 1) throw new RangeError("createContainerPool: max must be at least 1");
  const min = nonNegativeInteger("min", options.min ?? 1);
  if (min > max) throw new RangeError(`createContainerPool: min (${min}) must not exceed max (${max})`);
  const acquireTimeoutMs = options.acquireTimeoutMs ?? 30_000;
  if (!(acquireTimeoutMs > 0) || !Number.isFinite(acquireTimeoutMs)) {
    throw new RangeError("createContainerPool: acquireTimeoutMs must be a positive, finite number");
  }
  const maxConcurrentCreates = nonNegativeInteger("maxConcurrentCreates", options.maxConcurrentCreates ?? 2);
  if (maxConcurrentCreates < 1) {
    throw new RangeError("createContainerPool: maxConcurrentCreates must be at least 1");
  }
  const hibernateAfterMs = options.hibernateAfterMs ?? 120_000;
  if (!(hibernateAfterMs >= 0)) {
    throw new RangeError("createContainerPool: hibernateAfterMs must be a non-negative number or Infinity");
  }
  return {
    spec,
    specHash: specHash(spec),
    poolId,
    instanceId: randomBytes(8).toString("hex"),
    min,
    max,
    acquireTimeoutMs,
    maxConcurrentCreates,
    softIdleTimeoutMs: options.softIdleTimeoutMs ?? 60_000,
    evictionIntervalMs: Math.max(10, options.evictionIntervalMs ?? 1000),
    hibernateAfterMs,
    maxHibernated: nonNegativeInteger("maxHibernated", options.maxHibernated ?? 100),
  };
}
