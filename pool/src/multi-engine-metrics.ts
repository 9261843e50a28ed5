import type { EngineInfo } from "./container-driver.ts";
import type { ContainerPoolMetrics } from "./container-pool.ts";
import type { ResolvedContainerSpec } from "./container-spec.ts";
import type { FreeCapacity } from "./engine-capacity.ts";
import { engineCapacity } from "./engine-placement.ts";
import type { EngineRecord, EngineStatus } from "./engine-record.ts";
import { messageOf } from "./error-message.ts";
import type { LatencyWindow } from "./latency-window.ts";

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

function engineMetrics<STATE>(
  record: EngineRecord<STATE>,
  limits: ResolvedContainerSpec["limits"],
): EngineMetrics {
  return {
    id: record.id,
    status: record.status,
    since: new Date(record.since),
    error: record.status === "unreachable" ? messageOf(record.error) : undefined,
    pool: record.pool?.metrics(),
    runtime: record.runtime,
    info: record.report ? { ...record.report.info, at: new Date(record.report.at) } : undefined,
    capacity: engineCapacity(record, limits),
    lost: record.lostCount,
    min: record.min,
    max: record.max,
  };
}

/** `MultiEnginePool.metrics`: each engine's, and their sum; the acquire latency is the multi-engine pool's own. */
export function multiEngineMetrics<STATE>(
  records: readonly EngineRecord<STATE>[],
  limits: ResolvedContainerSpec["limits"],
  latency: LatencyWindow,
): MultiEnginePoolMetrics {
  const perEngine = records.map((record) => engineMetrics(record, limits));
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
