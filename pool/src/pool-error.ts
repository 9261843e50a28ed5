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
 * The error `@pai/pool` throws on purpose. A member of PAI's error family (the shape of `@pai/core`'s `PaiError`)
 * with its own `Symbol.for('pai.error.PoolError')` marker: `PoolError.isInstance(e)` recognizes it from any copy of
 * this package and nothing else; it is not a `PaiError` (the pool does not depend on core).
 */
export class PoolError extends Error {
  readonly [marker] = true;
  /** What went wrong. */
  readonly code: PoolErrorCode;
  /** Extra facts for logs (container id, HTTP status, limits); never secrets. */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: PoolErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "PoolError";
    this.code = code;
    this.details = options.details;
  }

  /** True for a `PoolError` (or a subclass of it) from any copy of this package. */
  static isInstance(error: unknown): error is PoolError {
    return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[marker] === true;
  }

  /** True when `error` is a pool error with the given code. */
  static hasCode(error: unknown, code: PoolErrorCode): error is PoolError {
    return PoolError.isInstance(error) && error.code === code;
  }

  toJSON(): { code: PoolErrorCode; message: string; details?: Readonly<Record<string, unknown>> } {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }
}
