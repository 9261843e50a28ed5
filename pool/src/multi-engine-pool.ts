import { randomBytes } from "node:crypto";
import { carryPaths } from "./carry-paths.ts";
import type { ContainerDriver, EngineInfo } from "./container-driver.ts";
import {
  type AcquireOptions,
  type AdoptOptions,
  type CloseOptions,
  type ContainerPool,
  type ContainerPoolMetrics,
  type ContainerPoolOptions,
  createContainerPool,
  type Lease,
  type LeaseInfo,
  type ReapStraysOptions,
  type WarmOptions,
} from "./container-pool.ts";
import { type ResolvedContainerSpec, resolveContainerSpec } from "./container-spec.ts";
import { type FreeCapacity, freeCapacity, pickEngine } from "./engine-capacity.ts";
import { guardEngineDriver } from "./guard-engine-driver.ts";
import { poolLabels } from "./labels.ts";
import { createLatencyWindow } from "./latency-window.ts";
import { PoolError } from "./pool-error.ts";
import { type ContainerPoolEventMap, createPoolEvents, type PoolEvents } from "./pool-events.ts";
import { specHash } from "./spec-hash.ts";

/** One engine of a pool that spans several: a driver and the engine's share of the pool. */
export interface PoolEngine {
  /** Names the engine on leases, in events, metrics and errors; stable across restarts. */
  id: string;
  driver: ContainerDriver;
  /** Started containers kept ready on this engine. @default the pool's `min` */
  min?: number;
  /** Containers on this engine at most. @default the pool's `max` */
  max?: number;
  /**
   * The engine is on another machine by the way it is reached (SSH): its containers never see this machine's
   * files, so capabilities mount none of them and do not probe for it. `false`: unknown (they may probe).
   * @default false
   */
  remote?: boolean;
}

/** How a multi-engine pool watches its engines. */
export interface EngineCheckOptions {
  /** Time between two health checks (a ping) of an engine that answers. @default 5000 */
  intervalMs?: number;
  /**
   * Deadline of one health check. An engine that refuses the connection (or has no socket) is unreachable at
   * once; one that does not answer in time is unreachable after two such checks in a row (a busy engine is slow,
   * not gone).
   * @default 10000
   */
  timeoutMs?: number;
  /**
   * Time between health checks of an unreachable engine: `initialMs` after the first failure, doubling up to
   * `maxMs`. The first check that answers brings the engine back.
   * @default { initialMs: 500, maxMs: 30000 }
   */
  backoff?: { initialMs?: number; maxMs?: number };
  /** How often an engine's `docker info` (host memory, CPUs, running containers) is asked again. @default 15000 */
  infoIntervalMs?: number;
}

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
  ensureImage?: (context: {
    engineId: string;
    driver: ContainerDriver;
    signal: AbortSignal;
  }) => Promise<void>;
  /**
   * One-time set-up of an engine before its first container (e.g. filling a shared volume), after `ensureImage`
   * and the driver's `checkEngine` (the image is there, the disk plugin answers); a failure of any is retried on
   * the next use, and placement tries the other engines meanwhile. `driver` is the engine's guarded driver.
   */
  prepareEngine?: (context: {
    engineId: string;
    driver: ContainerDriver;
    signal: AbortSignal;
  }) => Promise<void>;
  /** Health checks and `docker info` refreshes; see {@link EngineCheckOptions}. */
  engineChecks?: EngineCheckOptions;
}

/** Whether an engine answers: `starting` until a health check answers or fails. */
export type EngineStatus = "starting" | "reachable" | "unreachable";

/** A lease of a multi-engine pool: a container on one engine. */
export interface EngineLease<STATE = undefined> extends Lease<STATE> {
  /** The engine the container runs on (record it, e.g. on the lease's `meta`, to `adopt` it after a restart). */
  readonly engineId: string;
  /** The engine's driver: container calls fail at once (`DOCKER_UNAVAILABLE`) while it is unreachable. */
  readonly driver: ContainerDriver;
  /**
   * Aborted when the lease is lost — its engine stopped answering — with a `CONTAINER_LOST` error naming the
   * engine as its reason. Lost is final: the container's files and processes cannot be counted on even if the
   * engine comes back (it is then removed). Release the lease and take a new one.
   */
  readonly lostSignal: AbortSignal;
  /**
   * After a call on the container failed with `error`: resolves with the lost error when the lease is lost, once
   * a health check of the engine has answered — one made now when `error` says the engine did not answer
   * (`DOCKER_UNAVAILABLE` in its cause chain), or one under way because another call found it so. Other failures
   * wait for nothing.
   */
  confirmLost(error: unknown): Promise<PoolError | undefined>;
}

/** One engine in `metrics()`. */
export interface EngineMetrics {
  id: string;
  status: EngineStatus;
  /** When the engine entered `status`. */
  since: Date;
  /** Why the last health check failed, while `unreachable`. */
  error: string | undefined;
  /** The engine's own pool, once it was prepared. */
  pool: ContainerPoolMetrics | undefined;
  /** The OCI runtime its containers run on (`crun` when the engine has it), once it was prepared. */
  runtime: string | undefined;
  /** The engine's last `docker info`, with the time it was asked. */
  info: (EngineInfo & { at: Date }) | undefined;
  /** Its free capacity as placement sees it now. */
  capacity: FreeCapacity;
  /** Leases lost on this engine since the pool was made. */
  lost: number;
  min: number;
  max: number;
}

/** The pool's metrics summed over its engines (`min`, `max` included), and each engine's. */
export interface MultiEnginePoolMetrics extends ContainerPoolMetrics {
  engines: EngineMetrics[];
}

type WithEngine<EVENT> = EVENT & { engineId: string };

/** The events of a {@link MultiEnginePool}: its engines' pool events with the engine's id, and two of its own. */
export type MultiEnginePoolEventMap = {
  [NAME in Exclude<keyof ContainerPoolEventMap, "error">]: WithEngine<ContainerPoolEventMap[NAME]>;
} & {
  /** A failure handled inside: an engine pool's, a failed `prepareEngine` or `docker info`. */
  error: WithEngine<{
    operation: ContainerPoolEventMap["error"]["operation"] | "prepare" | "info";
    error: unknown;
    containerId?: string;
  }>;
  /** An engine became reachable or unreachable. */
  engine: { engineId: string; status: Exclude<EngineStatus, "starting">; error?: unknown };
  /** A lease was lost: its engine stopped answering. */
  lost: { engineId: string; containerId: string; leaseKey: string; error: PoolError };
};

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
   * it (an upgrade changed the spec): acquires a fresh container for `leaseKey`, copies what the `carry` folders
   * hold from the old container on engine `engineId` into it (see `carryPaths`), then removes the old one.
   * @throws PoolError `NOT_FOUND` for an engine the pool does not have or a container that is gone,
   * `DOCKER_UNAVAILABLE` when an engine is unreachable, `CONTAINER_FAILED` for a container that is not managed
   * or that this pool could adopt, and what `acquire` and the copy throw (the fresh container is then released
   * and the old one kept).
   */
  replace(containerId: string, options: ReplaceOptions): Promise<EngineLease<STATE>>;
  /**
   * Gives a lease whose container cannot be started again a successor: a fresh container for its lease key (on the
   * engine with the most free capacity) into which what the `carry` folders hold is copied from the old one (running
   * or stopped, see `carryPaths`); the old lease is then released.
   * @throws what `acquire` and the copy throw (the fresh container is then released and the old lease kept)
   */
  succeed(
    lease: EngineLease<STATE>,
    options: { carry: readonly string[]; signal?: AbortSignal },
  ): Promise<EngineLease<STATE>>;
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
  leases(): Array<LeaseInfo & { engineId: string }>;
  /** Closes every engine's pool (see `ContainerPool.close`) and stops the health checks. */
  close(options?: CloseOptions): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Options of `MultiEnginePool.replace`. */
export interface ReplaceOptions {
  /** The old container's engine. @default the first engine */
  engineId?: string;
  /** The new lease's key. */
  leaseKey: string;
  /** Folders (absolute paths) whose contents the successor inherits (e.g. `["/workspace"]`). */
  carry: readonly string[];
  signal?: AbortSignal;
}

interface LiveLease {
  leaseKey: string;
  lose(reason: PoolError): void;
}

interface EngineRecord<STATE> {
  id: string;
  raw: ContainerDriver;
  driver: ContainerDriver;
  min: number;
  max: number;
  status: EngineStatus;
  since: number;
  error: unknown;
  failures: number;
  /** Health checks in a row that timed out (two make the engine unreachable). */
  slowChecks: number;
  timer: NodeJS.Timeout | undefined;
  checking: Promise<void> | undefined;
  /** A check started because a call on the engine failed with `DOCKER_UNAVAILABLE`, while it runs. */
  suspected: Promise<void> | undefined;
  report: { info: EngineInfo; at: number; heldThen: number } | undefined;
  pool: ContainerPool<STATE> | undefined;
  preparing: Promise<ContainerPool<STATE>> | undefined;
  /** What `checkEngine` said, once the engine was prepared. */
  runtime: string | undefined;
  /** Acquires choosing this engine right now (counted as leased by placement). */
  placing: number;
  /** Live leases on this engine, by container id: lost together when it stops answering. */
  leases: Map<string, LiveLease>;
  /** Containers of lost leases, removed once the engine answers again. */
  lostIds: Set<string>;
  lostCount: number;
  /** Aborted (with the engine's unreachable error) when it stops answering; renewed when it comes back. */
  down: AbortController;
}

function count(name: string, value: number, least: number): number {
  if (!Number.isSafeInteger(value) || value < least) {
    throw new RangeError(
      `createMultiEnginePool: ${name} must be an integer of at least ${least}, got ${value}`,
    );
  }
  return value;
}

/** Read through a call, so a status checked before an `await` is not taken as still known after it. */
function isUnreachable(record: { status: EngineStatus }): boolean {
  return record.status === "unreachable";
}

/** True when `error`, or an error in its cause chain, is a `DOCKER_UNAVAILABLE` pool error. */
function saysUnavailable(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && current !== null && depth < 8; depth++) {
    if (PoolError.hasCode(current, "DOCKER_UNAVAILABLE")) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
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
  const intervalMs = engineChecks.intervalMs ?? 5000;
  const checkTimeoutMs = engineChecks.timeoutMs ?? 10_000;
  const backoffInitialMs = Math.max(1, engineChecks.backoff?.initialMs ?? 500);
  const backoffMaxMs = Math.max(backoffInitialMs, engineChecks.backoff?.maxMs ?? 30_000);
  const infoIntervalMs = engineChecks.infoIntervalMs ?? 15_000;

  const events = createPoolEvents<MultiEnginePoolEventMap>();
  const latency = createLatencyWindow();
  const closeController = new AbortController();
  let closed = false;
  let closePromise: Promise<void> | undefined;

  const closedError = () =>
    new PoolError("POOL_CLOSED", `Container pool ${poolId} is closed`, { details: { poolId } });

  function unreachableError(record: EngineRecord<STATE>): PoolError {
    return new PoolError(
      "DOCKER_UNAVAILABLE",
      `Docker engine ${record.id} is unreachable (${messageOf(record.error)})`,
      { cause: record.error, details: { engineId: record.id, since: new Date(record.since).toISOString() } },
    );
  }

  const records: EngineRecord<STATE>[] = [];
  const byId = new Map<string, EngineRecord<STATE>>();
  for (const engine of engines) {
    if (typeof engine.id !== "string" || engine.id === "") {
      throw new TypeError("createMultiEnginePool: every engine needs a non-empty id");
    }
    if (byId.has(engine.id))
      throw new TypeError(`createMultiEnginePool: engine id ${engine.id} is given twice`);
    const max = count(`max of engine ${engine.id}`, engine.max ?? options.max ?? 10, 1);
    const min = count(`min of engine ${engine.id}`, engine.min ?? options.min ?? 1, 0);
    if (min > max) {
      throw new RangeError(
        `createMultiEnginePool: min (${min}) of engine ${engine.id} exceeds its max (${max})`,
      );
    }
    const record: EngineRecord<STATE> = {
      id: engine.id,
      raw: engine.driver,
      driver: engine.driver,
      min,
      max,
      status: "starting",
      since: Date.now(),
      error: undefined,
      failures: 0,
      slowChecks: 0,
      timer: undefined,
      checking: undefined,
      suspected: undefined,
      report: undefined,
      pool: undefined,
      preparing: undefined,
      runtime: undefined,
      placing: 0,
      leases: new Map(),
      lostIds: new Set(),
      lostCount: 0,
      down: new AbortController(),
    };
    record.driver = guardEngineDriver(engine.driver, {
      unreachable: () => (record.status === "unreachable" ? unreachableError(record) : undefined),
      suspect: () => {
        if (record.suspected) return;
        const suspected = check(record).finally(() => {
          if (record.suspected === suspected) record.suspected = undefined;
        });
        record.suspected = suspected;
      },
    });
    records.push(record);
    byId.set(record.id, record);
  }

  // ------------------------------------------------------------------ health
  function check(record: EngineRecord<STATE>): Promise<void> {
    record.checking ??= (async () => {
      clearTimeout(record.timer);
      try {
        await record.raw.ping({
          signal: AbortSignal.any([AbortSignal.timeout(checkTimeoutMs), closeController.signal]),
        });
        if (closed) return;
        becameReachable(record);
        // Outside the check: whoever waits on it (a failed call) learns "reachable" without waiting for this.
        if (!record.report || Date.now() - record.report.at >= infoIntervalMs) void refreshInfo(record);
      } catch (error) {
        if (closed) return;
        const timedOut = (error as { name?: unknown } | null)?.name === "TimeoutError";
        record.slowChecks = timedOut ? record.slowChecks + 1 : 0;
        if (!timedOut || record.slowChecks >= 2) becameUnreachable(record, error);
      } finally {
        record.checking = undefined;
        schedule(record);
      }
    })();
    return record.checking;
  }

  function schedule(record: EngineRecord<STATE>) {
    if (closed) return;
    clearTimeout(record.timer);
    const delay =
      record.status === "unreachable"
        ? Math.min(backoffMaxMs, backoffInitialMs * 2 ** Math.min(record.failures - 1, 30))
        : record.slowChecks > 0
          ? backoffInitialMs
          : intervalMs;
    record.timer = setTimeout(() => void check(record), delay);
    record.timer.unref();
  }

  async function refreshInfo(record: EngineRecord<STATE>) {
    try {
      const info = await record.raw.info({
        signal: AbortSignal.any([AbortSignal.timeout(checkTimeoutMs), closeController.signal]),
      });
      record.report = { info, at: Date.now(), heldThen: record.pool?.metrics().size ?? 0 };
    } catch (error) {
      if (!closed) events.emit("error", { operation: "info", error, engineId: record.id });
    }
  }

  function becameReachable(record: EngineRecord<STATE>) {
    record.failures = 0;
    record.slowChecks = 0;
    if (record.status === "reachable") return;
    const wasUnreachable = record.status === "unreachable";
    record.status = "reachable";
    record.since = Date.now();
    record.error = undefined;
    if (record.down.signal.aborted) record.down = new AbortController();
    if (wasUnreachable) events.emit("engine", { engineId: record.id, status: "reachable" });
    void removeLost(record);
    void ensurePool(record).catch(() => undefined);
  }

  function becameUnreachable(record: EngineRecord<STATE>, error: unknown) {
    record.failures++;
    record.error = error;
    if (record.status === "unreachable") return;
    record.status = "unreachable";
    record.since = Date.now();
    const reason = unreachableError(record);
    record.down.abort(reason);
    for (const lease of [...record.leases.values()]) lease.lose(reason);
    events.emit("engine", { engineId: record.id, status: "unreachable", error });
  }

  /** Removes the containers of lost leases (the engine answers again); a failure leaves them for next time. */
  async function removeLost(record: EngineRecord<STATE>) {
    for (const id of [...record.lostIds]) {
      try {
        await record.raw.remove(id, { signal: closeController.signal });
        record.lostIds.delete(id);
      } catch (error) {
        if (!closed)
          events.emit("error", { operation: "destroy", error, containerId: id, engineId: record.id });
        return;
      }
    }
  }

  // ------------------------------------------------------------------ engine pools
  function ensurePool(record: EngineRecord<STATE>): Promise<ContainerPool<STATE>> {
    if (record.pool) return Promise.resolve(record.pool);
    if (closed) return Promise.reject(closedError());
    if (!record.preparing) {
      const preparing = (async () => {
        const signal = closeController.signal;
        await ensureImage?.({ engineId: record.id, driver: record.driver, signal });
        const { runtime } = await record.driver.checkEngine(spec, { signal });
        await prepareEngine?.({ engineId: record.id, driver: record.driver, signal });
        if (closed) throw closedError();
        const pool = createContainerPool<STATE>({
          ...poolOptions,
          ...(ownerId !== undefined ? { ownerId } : {}),
          driver: record.driver,
          poolId,
          min: record.min,
          max: record.max,
          acquireTimeoutMs,
        });
        forwardEvents(record, pool);
        record.runtime = runtime;
        record.pool = pool;
        return pool;
      })();
      record.preparing = preparing;
      preparing.catch((error: unknown) => {
        if (record.preparing === preparing) record.preparing = undefined;
        if (!closed) events.emit("error", { operation: "prepare", error, engineId: record.id });
      });
    }
    return record.preparing;
  }

  function forwardEvents(record: EngineRecord<STATE>, pool: ContainerPool<STATE>) {
    const engineId = record.id;
    pool.events.on("create", (event) => events.emit("create", { ...event, engineId }));
    pool.events.on("destroy", (event) => events.emit("destroy", { ...event, engineId }));
    pool.events.on("acquire", (event) => events.emit("acquire", { ...event, engineId }));
    pool.events.on("exit", (event) => events.emit("exit", { ...event, engineId }));
    pool.events.on("hibernate", (event) => events.emit("hibernate", { ...event, engineId }));
    pool.events.on("wake", (event) => events.emit("wake", { ...event, engineId }));
    pool.events.on("restart", (event) => events.emit("restart", { ...event, engineId }));
    pool.events.on("error", (event) => events.emit("error", { ...event, engineId }));
  }

  // The first health check of every engine; the operations below wait for it once.
  const firstChecks = Promise.all(records.map((record) => check(record)));

  function capacityOf(record: EngineRecord<STATE>): FreeCapacity {
    const metrics = record.pool?.metrics();
    return freeCapacity(
      {
        max: record.max,
        // Hibernated leases are stopped: they hold no slot of `max` and use no memory or CPU.
        leased: (metrics?.borrowed ?? 0) - (metrics?.hibernated ?? 0) + record.placing,
        heldNow: metrics?.size ?? 0,
        report: record.report,
      },
      spec.limits,
    );
  }

  function place(excluded: ReadonlySet<EngineRecord<STATE>>): EngineRecord<STATE> | undefined {
    return pickEngine(
      records
        // An engine still `starting` answered its first check slowly: it is tried, not skipped.
        .filter((record) => record.status !== "unreachable" && !excluded.has(record))
        .map((record) => ({
          engine: record,
          capacity: capacityOf(record),
          available: record.pool?.metrics().available ?? 0,
        })),
    );
  }

  function noEngineError(cause?: unknown): PoolError {
    const down = records.map((record) => `${record.id} (${messageOf(record.error ?? "not checked yet")})`);
    return new PoolError("DOCKER_UNAVAILABLE", `No engine of pool ${poolId} answers: ${down.join(", ")}`, {
      cause,
      details: { poolId, engines: records.map((record) => ({ id: record.id, status: record.status })) },
    });
  }

  /** Each engine's state in an error's details. */
  function engineSummary() {
    return records.map((record) => ({
      id: record.id,
      status: record.status,
      max: record.max,
      borrowed: record.pool?.metrics().borrowed ?? 0,
      hibernated: record.pool?.metrics().hibernated ?? 0,
    }));
  }

  /** The retry budget of an acquire ran out after the engine it waited on went away. */
  function exhaustedError(cause?: unknown): PoolError {
    const engines = engineSummary();
    const told = engines.map((engine) =>
      engine.status === "unreachable"
        ? `${engine.id}: unreachable`
        : `${engine.id}: ${engine.borrowed - engine.hibernated} leased, max ${engine.max}`,
    );
    return new PoolError(
      "POOL_EXHAUSTED",
      `No container within ${acquireTimeoutMs} ms on any engine of pool ${poolId} (${told.join("; ")})`,
      { cause, details: { poolId, acquireTimeoutMs, engines } },
    );
  }

  /** An engine pool's own failure, naming the engine when there are several. */
  function onEngine(record: EngineRecord<STATE>, error: unknown): unknown {
    if (records.length === 1 || !PoolError.isInstance(error)) return error;
    return new PoolError(error.code, `${error.message} on engine ${record.id}`, {
      cause: error,
      details: { ...error.details, engineId: record.id, engines: engineSummary() },
    });
  }

  function engineLease(record: EngineRecord<STATE>, lease: Lease<STATE>): EngineLease<STATE> {
    const { containerId, leaseKey } = lease;
    const lostController = new AbortController();
    let lostError: PoolError | undefined;
    record.leases.set(containerId, {
      leaseKey,
      lose(reason) {
        if (lostError) return;
        lostError = new PoolError(
          "CONTAINER_LOST",
          `Container ${containerId.slice(0, 12)} (${leaseKey}) is lost: Docker engine ${record.id} stopped answering (${messageOf(reason.cause)})`,
          { cause: reason, details: { engineId: record.id, containerId, leaseKey } },
        );
        record.lostIds.add(containerId);
        record.lostCount++;
        lostController.abort(lostError);
        events.emit("lost", { engineId: record.id, containerId, leaseKey, error: lostError });
      },
    });
    let ending: Promise<void> | undefined;
    const release = () => {
      ending ??= (async () => {
        record.leases.delete(containerId);
        try {
          await lease.release();
          record.lostIds.delete(containerId);
        } catch (error) {
          // A lost container is removed once its engine answers again.
          if (!lostError) throw error;
        }
      })();
      return ending;
    };
    // A lost container stays among the lost ones: removed once its engine answers, whoever took it over.
    const detach = () => {
      ending ??= (async () => {
        record.leases.delete(containerId);
        await lease.detach();
      })();
      return ending;
    };
    return {
      containerId,
      leaseKey,
      // Live: a wake sets the container up again.
      get state() {
        return lease.state;
      },
      get hibernated() {
        return lease.hibernated;
      },
      adopted: lease.adopted,
      acquiredAt: lease.acquiredAt,
      engineId: record.id,
      driver: record.driver,
      lostSignal: lostController.signal,
      async confirmLost(error) {
        if (lostError || closed) return lostError;
        if (saysUnavailable(error)) await check(record);
        else if (record.suspected) await record.suspected;
        return lostError;
      },
      // A lost lease does not wake: its engine stopped answering, so its files cannot be counted on.
      wake: (wakeOptions) => (lostError ? Promise.reject(lostError) : lease.wake(wakeOptions)),
      stopped: (stoppedOptions) => (lostError ? Promise.reject(lostError) : lease.stopped(stoppedOptions)),
      restart: (restartOptions) => (lostError ? Promise.reject(lostError) : lease.restart(restartOptions)),
      idle: () => lease.idle(),
      hibernate: () => (lostError ? Promise.reject(lostError) : lease.hibernate()),
      release,
      detach,
      [Symbol.asyncDispose]: release,
    };
  }

  // ------------------------------------------------------------------ operations
  async function acquire(acquireOptions: AcquireOptions): Promise<EngineLease<STATE>> {
    const { leaseKey, signal } = acquireOptions;
    if (typeof leaseKey !== "string" || leaseKey === "") {
      throw new TypeError("acquire: leaseKey must be a non-empty string");
    }
    if (closed) throw closedError();
    signal?.throwIfAborted();
    const startedAt = performance.now();
    const deadlineAt = Date.now() + acquireTimeoutMs;
    await firstChecks;
    /** Engines that went away, or could not be prepared, while this acquire tried them. */
    const excluded = new Set<EngineRecord<STATE>>();
    let lastError: unknown;
    for (;;) {
      if (closed) throw closedError();
      signal?.throwIfAborted();
      if (excluded.size > 0 && Date.now() >= deadlineAt) throw exhaustedError(lastError);
      const record = place(excluded);
      if (!record) {
        // Every reachable engine failed to prepare: its error says more than "no engine answers".
        if (lastError !== undefined && records.some((each) => !isUnreachable(each))) throw lastError;
        throw noEngineError(lastError);
      }
      record.placing++;
      let pool: ContainerPool<STATE>;
      try {
        pool = await ensurePool(record);
      } catch (error) {
        record.placing--;
        if (signal?.aborted) throw signal.reason;
        if (closed) throw closedError();
        // Try the other engines; a later acquire prepares this one again.
        excluded.add(record);
        lastError = error;
        continue;
      }
      try {
        // The first attempt ends at the engine pool's own deadline (its error tells why: full, or creates
        // failing); a retry elsewhere gets what is left of it.
        const attempt = AbortSignal.any([
          record.down.signal,
          ...(signal ? [signal] : []),
          ...(excluded.size > 0 ? [AbortSignal.timeout(Math.max(1, deadlineAt - Date.now()))] : []),
        ]);
        const lease = await pool.acquire({ leaseKey, signal: attempt });
        latency.add(performance.now() - startedAt);
        return engineLease(record, lease);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (closed) throw closedError();
        if (!PoolError.isInstance(error) && Date.now() >= deadlineAt) throw exhaustedError(lastError);
        if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) await check(record);
        if (!isUnreachable(record)) throw onEngine(record, error);
        excluded.add(record);
        lastError = error;
      } finally {
        record.placing--;
      }
    }
  }

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
    if (closed) throw closedError();
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
    return engineLease(record, await pool.adopt(containerId, rest));
  }

  async function replace(containerId: string, options: ReplaceOptions): Promise<EngineLease<STATE>> {
    const { engineId, leaseKey, carry, signal } = options;
    const record = await reachableEngineOf(containerId, engineId);
    const { labels } = await record.driver.inspect(containerId, signal ? { signal } : {});
    const adoptable = labels[poolLabels.pool] === poolId && labels[poolLabels.spec] === hash;
    if (labels[poolLabels.managed] !== "true" || adoptable) {
      throw new PoolError(
        "CONTAINER_FAILED",
        `Container ${containerId} is ${adoptable ? "this pool's: adopt it" : "not a managed container"}`,
        { details: { containerId, poolId, labels } },
      );
    }
    const lease = await inheritingLease({ driver: record.driver, containerId }, leaseKey, carry, signal);
    await record.driver.remove(containerId).catch((error: unknown) => {
      events.emit("error", { operation: "destroy", error, containerId, engineId: record.id });
    });
    return lease;
  }

  /** A fresh lease for `leaseKey` holding what `carry` holds in `from`; released again when the copy fails. */
  async function inheritingLease(
    from: { driver: ContainerDriver; containerId: string },
    leaseKey: string,
    carry: readonly string[],
    signal: AbortSignal | undefined,
  ): Promise<EngineLease<STATE>> {
    const lease = await acquire({ leaseKey, ...(signal ? { signal } : {}) });
    try {
      await carryPaths(from, { driver: lease.driver, containerId: lease.containerId }, carry, signal);
    } catch (error) {
      await lease.release().catch(() => undefined);
      throw error;
    }
    return lease;
  }

  async function succeed(
    old: EngineLease<STATE>,
    options: { carry: readonly string[]; signal?: AbortSignal },
  ): Promise<EngineLease<STATE>> {
    const lease = await inheritingLease(old, old.leaseKey, options.carry, options.signal);
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

  async function reapStrays(reapOptions: ReapStraysOptions = {}) {
    await firstChecks;
    const unreached: string[] = [];
    const results = await Promise.all(
      records.map(async (record) => {
        if (record.status === "unreachable") {
          unreached.push(record.id);
          return { removed: [], failed: [] };
        }
        try {
          return await (await ensurePool(record)).reapStrays(reapOptions);
        } catch (error) {
          if (reapOptions.signal?.aborted) throw reapOptions.signal.reason;
          events.emit("error", { operation: "reap", error, engineId: record.id });
          unreached.push(record.id);
          return { removed: [], failed: [] };
        }
      }),
    );
    return {
      removed: results.flatMap((result) => result.removed),
      failed: results.flatMap((result) => result.failed),
      unreached,
    };
  }

  async function warm(warmOptions: WarmOptions = {}): Promise<void> {
    if (closed) throw closedError();
    const timeoutMs = warmOptions.timeoutMs ?? 60_000;
    await firstChecks;
    const failures: unknown[] = [];
    /** Engines that could not be prepared (an `error` event each): skipped while another engine is warm. */
    const unprepared: unknown[] = [];
    await Promise.all(
      records.map(async (record) => {
        if (isUnreachable(record)) return;
        let pool: ContainerPool<STATE>;
        try {
          pool = await ensurePool(record);
        } catch (error) {
          if (warmOptions.signal?.aborted || closed) return;
          if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) await check(record);
          if (!isUnreachable(record)) unprepared.push(error);
          return;
        }
        try {
          // From the engine's preparation on: building its image may take minutes.
          await pool.warm({
            timeoutMs,
            ...(warmOptions.signal ? { signal: warmOptions.signal } : {}),
          });
        } catch (error) {
          if (warmOptions.signal?.aborted || closed) return;
          if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) await check(record);
          // An engine that went away is skipped by placement until it answers again.
          if (!isUnreachable(record)) failures.push(error);
        }
      }),
    );
    warmOptions.signal?.throwIfAborted();
    if (closed) throw closedError();
    if (failures.length > 0) throw failures[0];
    if (!records.some((record) => record.pool && !isUnreachable(record))) {
      if (unprepared.length > 0) throw unprepared[0];
      throw noEngineError();
    }
  }

  function engineMetrics(record: EngineRecord<STATE>): EngineMetrics {
    return {
      id: record.id,
      status: record.status,
      since: new Date(record.since),
      error: record.status === "unreachable" ? messageOf(record.error) : undefined,
      pool: record.pool?.metrics(),
      runtime: record.runtime,
      info: record.report ? { ...record.report.info, at: new Date(record.report.at) } : undefined,
      capacity: capacityOf(record),
      lost: record.lostCount,
      min: record.min,
      max: record.max,
    };
  }

  function metrics(): MultiEnginePoolMetrics {
    const perEngine = records.map(engineMetrics);
    const sum = (
      field:
        | "size"
        | "available"
        | "borrowed"
        | "hibernated"
        | "pending"
        | "creating"
        | "createFailures"
        | "destroyFailures",
    ) => perEngine.reduce((total, engine) => total + (engine.pool?.[field] ?? 0), 0);
    const { p50, p95 } = latency.summary();
    return {
      size: sum("size"),
      available: sum("available"),
      borrowed: sum("borrowed"),
      hibernated: sum("hibernated"),
      pending: sum("pending"),
      creating: sum("creating"),
      createFailures: sum("createFailures"),
      destroyFailures: sum("destroyFailures"),
      acquireLatencyMs: { p50, p95 },
      min: records.reduce((total, record) => total + record.min, 0),
      max: records.reduce((total, record) => total + record.max, 0),
      engines: perEngine,
    };
  }

  function leases(): Array<LeaseInfo & { engineId: string }> {
    return records.flatMap((record) =>
      (record.pool?.leases() ?? []).map((lease) => ({ ...lease, engineId: record.id })),
    );
  }

  function close(closeOptions: CloseOptions = {}): Promise<void> {
    closePromise ??= (async () => {
      closed = true;
      closeController.abort(closedError());
      for (const record of records) clearTimeout(record.timer);
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
    reapStrays,
    warm,
    metrics,
    leases,
    close,
    [Symbol.asyncDispose]: () => close(),
  };
}
