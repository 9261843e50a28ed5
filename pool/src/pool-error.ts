import { hasErrorMarker, PaiErrorBase, type PaiErrorOptions } from "@pai/errors";

const marker = Symbol.for("pai.error.PoolError");

/** Every code a {@link PoolError} can carry: the codes `@pai/pool` throws. */
export type PoolErrorCode =
  | "POOL_EXHAUSTED"
  | "POOL_CLOSED"
  | "DOCKER_UNAVAILABLE"
  | "CONTAINER_FAILED"
  | "CONTAINER_LOST"
  | "NOT_FOUND"
  | "IMAGE_UNAVAILABLE";

/**
 * The error `@pai/pool` throws on purpose. A member of PAI's error family (extending `@pai/errors`'
 * `PaiErrorBase`) with its own `Symbol.for('pai.error.PoolError')` marker: `PoolError.isInstance(e)`
 * recognizes it from any copy of this package and nothing else; it is not a `PaiError` (the pool does not
 * depend on core).
 */
export class PoolError extends PaiErrorBase<PoolErrorCode> {
  readonly [marker] = true;

  constructor(code: PoolErrorCode, message: string, options: PaiErrorOptions = {}) {
    super("PoolError", code, message, options);
  }

  /** True for a `PoolError` (or a subclass of it) from any copy of this package. */
  static isInstance(error: unknown): error is PoolError {
    return hasErrorMarker(error, marker);
  }

  /** True when `error` is a pool error with the given code. */
  static hasCode(error: unknown, code: PoolErrorCode): error is PoolError {
    return PoolError.isInstance(error) && error.code === code;
  }
}
