import type { ContainerPoolSettings } from "./container-pool-options.ts";
import { messageOf } from "./error-message.ts";
import { PoolError } from "./pool-error.ts";

/** `POOL_CLOSED`: the single-engine pool `poolId` is closed. */
export function poolClosedError(poolId: string): PoolError {
  return new PoolError("POOL_CLOSED", `Container pool ${poolId} is closed`, { details: { poolId } });
}

/** `NOT_FOUND`: a lease's container is gone (removed by the pool while hibernated, or from outside). */
export function containerGoneError(
  containerId: string,
  poolId: string,
  how = "was removed while hibernated",
): PoolError {
  return new PoolError("NOT_FOUND", `The lease's container ${containerId} ${how}`, {
    details: { containerId, poolId },
  });
}

/** What a pool tells of itself when no container came within `acquireTimeoutMs`. */
export interface ExhaustionState {
  /** Leased containers holding room within `max`. */
  borrowed: number;
  createFailures: number;
  /** Set while creates keep failing: the last create's error. */
  failing: { error: unknown } | undefined;
}

/**
 * The error of an `acquire` (or a wake) that got no container within `acquireTimeoutMs`: `DOCKER_UNAVAILABLE` when
 * creates keep failing because the engine is unreachable, else `POOL_EXHAUSTED` (naming the failing creates'
 * error, or how many containers are leased).
 */
export function poolExhaustedError(settings: ContainerPoolSettings, state: ExhaustionState): PoolError {
  const { poolId, min, max, acquireTimeoutMs } = settings;
  const details = { poolId, min, max, acquireTimeoutMs, borrowed: state.borrowed };
  if (state.failing) {
    const { error } = state.failing;
    const unavailable = PoolError.hasCode(error, "DOCKER_UNAVAILABLE");
    const reason = messageOf(error);
    return new PoolError(
      unavailable ? "DOCKER_UNAVAILABLE" : "POOL_EXHAUSTED",
      `No container within ${acquireTimeoutMs} ms: creating containers keeps failing (${reason})`,
      { cause: error, details: { ...details, createFailures: state.createFailures } },
    );
  }
  return new PoolError(
    "POOL_EXHAUSTED",
    `No container within ${acquireTimeoutMs} ms (${details.borrowed} leased, max ${max})`,
    { details },
  );
}
