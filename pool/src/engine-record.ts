import type { ContainerDriver, EngineInfo } from "./container-driver.ts";
import type { ContainerPool } from "./container-pool.ts";
import type { PoolError } from "./pool-error.ts";

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

/** Whether an engine answers: `starting` until a health check answers or fails. */
export type EngineStatus = "starting" | "reachable" | "unreachable";

/** Read through a call, so a status checked before an `await` is not taken as still known after it. */
export function isUnreachable(record: { status: EngineStatus }): boolean {
  return record.status === "unreachable";
}

/**
 * Inside the multi-engine pool: a live lease as its engine's record keeps it, lost together with the others when the
 * engine stops answering.
 */
export interface LiveLease {
  leaseKey: string;
  lose(reason: PoolError): void;
}

/**
 * What a multi-engine pool knows of one of its engines. Each group of fields has one module that writes it: the
 * health checks (`engine-health.ts`), the preparation (`engine-preparation.ts`), placement
 * (`acquire-on-engines.ts`) and the leases (`engine-lease.ts`).
 */
export interface EngineRecord<STATE> {
  id: string;
  /** The driver as given: health checks and the removal of lost containers use it. */
  raw: ContainerDriver;
  /** The driver leases and the preparation use: guarded by the engine's health (see `guardEngineDriver`). */
  driver: ContainerDriver;
  min: number;
  max: number;

  // Health.
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
  /** Aborted (with the engine's unreachable error) when it stops answering; renewed when it comes back. */
  down: AbortController;

  // Preparation.
  pool: ContainerPool<STATE> | undefined;
  preparing: Promise<ContainerPool<STATE>> | undefined;
  /** What `checkEngine` said, once the engine was prepared. */
  runtime: string | undefined;

  // Placement.
  /** Acquires choosing this engine right now (counted as leased by placement). */
  placing: number;

  // Leases.
  /** Live leases on this engine, by container id: lost together when it stops answering. */
  leases: Map<string, LiveLease>;
  /** Containers of lost leases, removed once the engine answers again. */
  lostIds: Set<string>;
  lostCount: number;
}

function count(name: string, value: number, least: number): number {
  if (!Number.isSafeInteger(value) || value < least) {
    throw new RangeError(
      `createMultiEnginePool: ${name} must be an integer of at least ${least}, got ${value}`,
    );
  }
  return value;
}

/**
 * A record per engine, each `starting`, with its own `min` and `max` (the pool's when it names none).
 * @throws TypeError for an engine without an id or an id given twice; RangeError for a bad `min` or `max`.
 */
export function createEngineRecords<STATE>(
  engines: readonly PoolEngine[],
  defaults: { min?: number | undefined; max?: number | undefined },
): EngineRecord<STATE>[] {
  const ids = new Set<string>();
  return engines.map((engine) => {
    if (typeof engine.id !== "string" || engine.id === "") {
      throw new TypeError("createMultiEnginePool: every engine needs a non-empty id");
    }
    if (ids.has(engine.id))
      throw new TypeError(`createMultiEnginePool: engine id ${engine.id} is given twice`);
    ids.add(engine.id);
    const max = count(`max of engine ${engine.id}`, engine.max ?? defaults.max ?? 10, 1);
    const min = count(`min of engine ${engine.id}`, engine.min ?? defaults.min ?? 1, 0);
    if (min > max) {
      throw new RangeError(
        `createMultiEnginePool: min (${min}) of engine ${engine.id} exceeds its max (${max})`,
      );
    }
    return {
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
      down: new AbortController(),
      pool: undefined,
      preparing: undefined,
      runtime: undefined,
      placing: 0,
      leases: new Map(),
      lostIds: new Set(),
      lostCount: 0,
    };
  });
}
