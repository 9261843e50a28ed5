const marker = Symbol.for("pai.error");

/**
 * Every code a {@link PoolError} can carry. Each one is also a `PaiErrorCode` of `@pai/core`, so the runtime
 * can pass pool errors on unchanged.
 */
export type PoolErrorCode =
  | "POOL_EXHAUSTED"
  | "POOL_CLOSED"
  | "DOCKER_UNAVAILABLE"
  | "CONTAINER_FAILED"
  | "CONTAINER_LOST"
  | "NOT_FOUND";

const poolErrorCodes: ReadonlySet<string> = new Set<PoolErrorCode>([
  "POOL_EXHAUSTED",
  "POOL_CLOSED",
  "DOCKER_UNAVAILABLE",
  "CONTAINER_FAILED",
  "CONTAINER_LOST",
  "NOT_FOUND",
]);

/**
 * The error `@pai/pool` throws on purpose. It carries the same `Symbol.for('pai.error')` marker as `@pai/core`'s
 * `PaiError`, so `PaiError.isInstance(e)` and `PaiError.hasCode(e, 'POOL_EXHAUSTED')` recognize it without the
 * pool depending on core.
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

  /** True for any error carrying the PAI marker and a pool error code, from any copy of this package. */
  static isInstance(error: unknown): error is PoolError {
    if (typeof error !== "object" || error === null) return false;
    const record = error as Record<string | symbol, unknown>;
    return record[marker] === true && typeof record.code === "string" && poolErrorCodes.has(record.code);
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
