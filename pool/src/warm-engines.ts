import type { ContainerPool, WarmOptions } from "./container-pool.ts";
import { noEngineError, poolClosedError } from "./engine-errors.ts";
import { type EngineRecord, isUnreachable } from "./engine-record.ts";
import { PoolError } from "./pool-error.ts";

/** What {@link warmEngines} needs of the multi-engine pool. */
export interface WarmEnginesContext<STATE> {
  poolId: string;
  records: readonly EngineRecord<STATE>[];
  /** The first health check of every engine. */
  firstChecks: Promise<unknown>;
  closeSignal: AbortSignal;
  /** The engine's own pool, prepared on first use (see `createEnginePreparation`). */
  ensurePool(record: EngineRecord<STATE>): Promise<ContainerPool<STATE>>;
  /** A health check of the engine (see `EngineHealth.check`). */
  check(record: EngineRecord<STATE>): Promise<void>;
}

/**
 * `MultiEnginePool.warm`: prepares every reachable engine and warms its pool, all at once. An engine that goes
 * away meanwhile is skipped; one that cannot be prepared is skipped while another engine is warm.
 */
export async function warmEngines<STATE>(
  context: WarmEnginesContext<STATE>,
  warmOptions: WarmOptions = {},
): Promise<void> {
  const { records, closeSignal } = context;
  if (closeSignal.aborted) throw poolClosedError(context.poolId);
  const timeoutMs = warmOptions.timeoutMs ?? 60_000;
  await context.firstChecks;
  const failures: unknown[] = [];
  /** Engines that could not be prepared (an `error` event each): skipped while another engine is warm. */
  const unprepared: unknown[] = [];
  await Promise.all(
    records.map(async (record) => {
      if (isUnreachable(record)) return;
      let pool: ContainerPool<STATE>;
      try {
        pool = await context.ensurePool(record);
      } catch (error) {
        if (warmOptions.signal?.aborted || closeSignal.aborted) return;
        if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) await context.check(record);
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
        if (warmOptions.signal?.aborted || closeSignal.aborted) return;
        if (PoolError.hasCode(error, "DOCKER_UNAVAILABLE")) await context.check(record);
        // An engine that went away is skipped by placement until it answers again.
        if (!isUnreachable(record)) failures.push(error);
      }
    }),
  );
  warmOptions.signal?.throwIfAborted();
  if (closeSignal.aborted) throw poolClosedError(context.poolId);
  if (failures.length > 0) throw failures[0];
  if (!records.some((record) => record.pool && !isUnreachable(record))) {
    if (unprepared.length > 0) throw unprepared[0];
    throw noEngineError(context.poolId, records);
  }
}
