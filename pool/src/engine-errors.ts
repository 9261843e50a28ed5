// The errors a multi-engine pool raises about itself and its engines, shared by its modules.
import type { EngineRecord } from "./engine-record.ts";
import { messageOf } from "./error-message.ts";
import { PoolError } from "./pool-error.ts";

/** An operation on a pool after `close()`. */
export function poolClosedError(poolId: string): PoolError {
  return new PoolError("POOL_CLOSED", `Container pool ${poolId} is closed`, { details: { poolId } });
}

/** A call on an engine known to be unreachable, naming it and why its last health check failed. */
export function unreachableError(record: Pick<EngineRecord<unknown>, "id" | "error" | "since">): PoolError {
  return new PoolError(
    "DOCKER_UNAVAILABLE",
    `Docker engine ${record.id} is unreachable (${messageOf(record.error)})`,
    { cause: record.error, details: { engineId: record.id, since: new Date(record.since).toISOString() } },
  );
}

/** No engine of the pool answers: each one's last failure. */
export function noEngineError(
  poolId: string,
  records: readonly Pick<EngineRecord<unknown>, "id" | "error" | "status">[],
  cause?: unknown,
): PoolError {
  const down = records.map((record) => `${record.id} (${messageOf(record.error ?? "not checked yet")})`);
  return new PoolError("DOCKER_UNAVAILABLE", `No engine of pool ${poolId} answers: ${down.join(", ")}`, {
    cause,
    details: { poolId, engines: records.map((record) => ({ id: record.id, status: record.status })) },
  });
}
