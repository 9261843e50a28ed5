import type { ResolvedContainerSpec } from "./container-spec.ts";
import { type FreeCapacity, freeCapacity, pickEngine } from "./engine-capacity.ts";
import type { EngineRecord } from "./engine-record.ts";

type Limits = ResolvedContainerSpec["limits"];

/** An engine's free capacity as placement sees it now (see `freeCapacity`). */
export function engineCapacity<STATE>(record: EngineRecord<STATE>, limits: Limits): FreeCapacity {
  const metrics = record.pool?.metrics();
  return freeCapacity(
    {
      max: record.max,
      // Hibernated leases are stopped: they hold no slot of `max` and use no memory or CPU.
      leased: (metrics?.borrowed ?? 0) - (metrics?.hibernated ?? 0) + record.placing,
      heldNow: metrics?.size ?? 0,
      report: record.report,
    },
    limits,
  );
}

/**
 * The engine a new container goes to: of the engines not unreachable and not `excluded`, the one with the most
 * free capacity (see `pickEngine`); `undefined` when there is none.
 */
export function placeEngine<STATE>(
  records: readonly EngineRecord<STATE>[],
  excluded: ReadonlySet<EngineRecord<STATE>>,
  limits: Limits,
): EngineRecord<STATE> | undefined {
  return pickEngine(
    records
      // An engine still `starting` answered its first check slowly: it is tried, not skipped.
      .filter((record) => record.status !== "unreachable" && !excluded.has(record))
      .map((record) => ({
        engine: record,
        capacity: engineCapacity(record, limits),
        available: record.pool?.metrics().available ?? 0,
      })),
  );
}
