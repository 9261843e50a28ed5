import type { ContainerPool, ReapStraysOptions } from "./container-pool.ts";
import type { EngineRecord } from "./engine-record.ts";
import type { MultiEnginePoolEventMap } from "./multi-engine-pool-events.ts";
import type { PoolEventEmitter } from "./pool-events.ts";

/** What {@link reapEngines} needs of the multi-engine pool. */
export interface ReapEnginesContext<STATE> {
  records: readonly EngineRecord<STATE>[];
  /** The first health check of every engine. */
  firstChecks: Promise<unknown>;
  events: PoolEventEmitter<MultiEnginePoolEventMap>;
  /** The engine's own pool, prepared on first use (see `createEnginePreparation`). */
  ensurePool(record: EngineRecord<STATE>): Promise<ContainerPool<STATE>>;
}

/**
 * `MultiEnginePool.reapStrays`: `ContainerPool.reapStrays` on every reachable engine, all at once; an engine that
 * fails is reported as an `error` event. `unreached` names the engines not reaped (unreachable, or failed).
 */
export async function reapEngines<STATE>(
  context: ReapEnginesContext<STATE>,
  reapOptions: ReapStraysOptions = {},
): Promise<{ removed: string[]; failed: string[]; unreached: string[] }> {
  await context.firstChecks;
  const unreached: string[] = [];
  const results = await Promise.all(
    context.records.map(async (record) => {
      if (record.status === "unreachable") {
        unreached.push(record.id);
        return { removed: [], failed: [] };
      }
      try {
        return await (await context.ensurePool(record)).reapStrays(reapOptions);
      } catch (error) {
        if (reapOptions.signal?.aborted) throw reapOptions.signal.reason;
        context.events.emit("error", { operation: "reap", error, engineId: record.id });
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
