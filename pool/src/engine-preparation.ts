import type { ContainerDriver } from "./container-driver.ts";
import { type ContainerPool, type ContainerPoolOptions, createContainerPool } from "./container-pool.ts";
import type { ResolvedContainerSpec } from "./container-spec.ts";
import { poolClosedError } from "./engine-errors.ts";
import type { EngineRecord } from "./engine-record.ts";
import { forwardEngineEvents, type MultiEnginePoolEventMap } from "./multi-engine-pool-events.ts";
import type { PoolEventEmitter } from "./pool-events.ts";

/** What a preparation hook of a multi-engine pool is told: the engine, its guarded driver, the pool's signal. */
export interface EnginePreparationContext {
  engineId: string;
  driver: ContainerDriver;
  signal: AbortSignal;
}

/** Options of {@link createEnginePreparation}. */
export interface EnginePreparationOptions<STATE> {
  poolId: string;
  spec: ResolvedContainerSpec;
  /** See `MultiEnginePoolOptions.ensureImage`. */
  ensureImage: ((context: EnginePreparationContext) => Promise<void>) | undefined;
  /** See `MultiEnginePoolOptions.prepareEngine`. */
  prepareEngine: ((context: EnginePreparationContext) => Promise<void>) | undefined;
  /** The options of an engine's own pool, asked when it is made (the pool's owner may have been claimed since). */
  poolOptions(record: EngineRecord<STATE>): ContainerPoolOptions<STATE>;
  /** Aborted when the multi-engine pool closes: it stops the preparation, and an engine prepared then is not used. */
  closeSignal: AbortSignal;
  events: PoolEventEmitter<MultiEnginePoolEventMap>;
}

/**
 * An engine's own container pool, made once the engine is ready for it: `ensureImage`, the driver's
 * `checkEngine` (the image is there, the disk plugin answers), then `prepareEngine`, once per engine; a failure
 * of any is reported (`error` event, operation `prepare`) and the next call starts over.
 */
export function createEnginePreparation<STATE>(
  options: EnginePreparationOptions<STATE>,
): (record: EngineRecord<STATE>) => Promise<ContainerPool<STATE>> {
  const { spec, ensureImage, prepareEngine, closeSignal, events } = options;

  async function prepare(record: EngineRecord<STATE>): Promise<ContainerPool<STATE>> {
    const signal = closeSignal;
    await ensureImage?.({ engineId: record.id, driver: record.driver, signal });
    const { runtime } = await record.driver.checkEngine(spec, { signal });
    await prepareEngine?.({ engineId: record.id, driver: record.driver, signal });
    if (closeSignal.aborted) throw poolClosedError(options.poolId);
    const pool = createContainerPool<STATE>(options.poolOptions(record));
    forwardEngineEvents(record.id, pool, events);
    record.runtime = runtime;
    record.pool = pool;
    return pool;
  }

  return function ensurePool(record) {
    if (record.pool) return Promise.resolve(record.pool);
    if (closeSignal.aborted) return Promise.reject(poolClosedError(options.poolId));
    if (!record.preparing) {
      const preparing = prepare(record);
      record.preparing = preparing;
      preparing.catch((error: unknown) => {
        if (record.preparing === preparing) record.preparing = undefined;
        if (!closeSignal.aborted) events.emit("error", { operation: "prepare", error, engineId: record.id });
      });
    }
    return record.preparing;
  };
}
