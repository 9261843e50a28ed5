import type { ContainerLease } from "./container-lease.ts";
import type { AcquireOptions, ContainerPool } from "./container-pool.ts";
import type { ResolvedContainerSpec } from "./container-spec.ts";
import { noEngineError, poolClosedError } from "./engine-errors.ts";
import type { EngineLease } from "./engine-lease.ts";
import { placeEngine } from "./engine-placement.ts";
import { type EngineRecord, isUnreachable } from "./engine-record.ts";
import type { LatencyWindow } from "./latency-window.ts";
import { PoolError } from "./pool-error.ts";

/** What {@link createAcquireOnEngines} needs of the multi-engine pool. */
export interface AcquireOnEnginesContext<STATE> {
  poolId: string;
  records: readonly EngineRecord<STATE>[];
  limits: ResolvedContainerSpec["limits"];
  acquireTimeoutMs: number;
  /** The first health check of every engine: an acquire waits for it once. */
  firstChecks: Promise<unknown>;
  closeSignal: AbortSignal;
  /** Records each acquire's latency. */
  latency: LatencyWindow;
  /** The engine's own pool, prepared on first use (see `createEnginePreparation`). */
  ensurePool(record: EngineRecord<STATE>): Promise<ContainerPool<STATE>>;
  /** A health check of the engine (see `EngineHealth.check`). */
  check(record: EngineRecord<STATE>): Promise<void>;
  /** Wraps a lease of the engine's pool (see `createEngineLease`). */
  engineLease(record: EngineRecord<STATE>, lease: ContainerLease<STATE>): EngineLease<STATE>;
}

/** Each engine's state in an error's details. */
function engineSummary<STATE>(records: readonly EngineRecord<STATE>[]) {
  return records.map((record) => ({
    id: record.id,
    status: record.status,
    max: record.max,
    borrowed: record.pool?.metrics().borrowed ?? 0,
    hibernated: record.pool?.metrics().hibernated ?? 0,
  }));
}

/**
 * `MultiEnginePool.acquire`: a fresh container from the engine placement picks (see `placeEngine`). An engine that
 * cannot be prepared, or goes away while the acquire waits on it, is left out and the next one tried, within what
 * is left of `acquireTimeoutMs`; any other failure of an engine's pool is the acquire's.
 */
export function createAcquireOnEngines<STATE>(
  context: AcquireOnEnginesContext<STATE>,
): (options: AcquireOptions) => Promise<EngineLease<STATE>> {
  const { poolId, records, acquireTimeoutMs, closeSignal } = context;

  /** The retry budget of an acquire ran out after the engine it waited on went away. */
  function exhaustedError(cause?: unknown): PoolError {
    const engines = engineSummary(records);
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
      details: { ...error.details, engineId: record.id, engines: engineSummary(records) },
    });
  }

  return async function acquire({ leaseKey, signal }) {
    if (typeof leaseKey !== "string" || leaseKey === "") {
      throw new TypeError("acquire: leaseKey must be a non-empty string");
    }
    if (closeSignal.aborted) throw poolClosedError(poolId);
    signal?.throwIfAborted();
    const startedAt = performance.now();
    const deadlineAt = Date.now() + acquireTimeoutMs;
    await context.firstChecks;
    /** Engines that went away, or could not be prepared, while this acquire tried them. */
    const excluded = new Set<EngineRecord<STATE>>();
    let lastError: unknown;
    for (;;) {
      if (closeSignal.aborted) throw poolClosedError(poolId);
      signal?.throwIfAborted();
      if (excluded.size > 0 && Date.now() >= deadlineAt) throw exhaustedError(lastError);
      const record = placeEngine(records, excluded, context.limits);
      if (!record) {
        // Every reachable engine failed to prepare: its error says more than "no engine answers".
        if (lastError !== undefined && records.some((each) => !isUnreachable(each))) throw lastError;
        throw noEngineError(poolId, records, lastError);
      }
      record.placing++;
      let pool: ContainerPool<STATE>;
      try {
        pool = await context.ensurePool(record);
      } catch (error) {
        record.placing--;
        if (signal?.aborted) throw signal.reason;
        if (closeSignal.aborted) throw poolClosedError(poolId);
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
        context.latency.add(performance.now() - startedAt);
        return context.engineLease(record, lease);
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (closeSignal.aborted) throw poolClosedError(poolId);
        if (!PoolError.isInstance(error) && Date.now() >= deadlineAt) throw exhaustedError(lastError);
        if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) await context.check(record);
        if (!isUnreachable(record)) throw onEngine(record, error);
        excluded.add(record);
        lastError = error;
      } finally {
        record.placing--;
      }
    }
  };
}
