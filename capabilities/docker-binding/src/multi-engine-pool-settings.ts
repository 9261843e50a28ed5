import type { EngineCheckOptions, MultiEnginePoolOptions } from "@pai/pool";

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

/** The names of `createMultiEnginePool`'s options that a binding's `pool` and `tuning` set. */
const poolKeys = ["min", "max", "acquireTimeoutMs", "hibernateAfterMs", "maxHibernated"] as const;
const tuningKeys = ["maxConcurrentCreates", "softIdleTimeoutMs", "createBackoff", "engineChecks"] as const;

/** What of `createMultiEnginePool`'s options a binding's `pool` and `tuning` set. */
export type MultiEnginePoolSettings = Pick<
  MultiEnginePoolOptions,
  (typeof poolKeys)[number] | (typeof tuningKeys)[number]
>;

/** `createMultiEnginePool`'s options for a binding's `pool` and `tuning`: the ones given, none set to `undefined`. */
export function multiEnginePoolSettings(
  pool: PooledBindingPoolOptions = {},
  tuning: PooledBindingTuning = {},
): MultiEnginePoolSettings {
  const settings: Record<string, unknown> = {};
  for (const key of poolKeys) if (pool[key] !== undefined) settings[key] = pool[key];
  for (const key of tuningKeys) if (tuning[key] !== undefined) settings[key] = tuning[key];
  return settings as MultiEnginePoolSettings;
}
