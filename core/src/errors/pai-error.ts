const marker = Symbol.for("pai.error");

/** Every code a {@link PaiError} can carry. */
export type PaiErrorCode =
  | "INVALID_IDENTITY"
  | "INVALID_CONTEXT"
  | "INVALID_INPUT"
  | "INVALID_OUTPUT"
  | "INVALID_ARGUMENT"
  | "UNKNOWN_AGENT"
  | "UNKNOWN_TOOL"
  | "UNKNOWN_THREAD"
  | "UNKNOWN_RUN"
  | "UNKNOWN_ACTION"
  | "TOOL_DISABLED"
  | "TOOL_FAILED"
  | "RUN_FAILED"
  | "RUN_CANCELLED"
  | "STALE_ANSWER"
  | "JOURNAL_DIVERGED"
  | "THREAD_BUSY"
  | "STORE_CORRUPT"
  | "STORE_UNWRITABLE"
  | "STORE_CLOSED"
  | "MISSING_CAPABILITY"
  | "CAPABILITY_UNAVAILABLE"
  | "CAPABILITY_BUSY"
  | "POOL_EXHAUSTED"
  | "POOL_CLOSED"
  | "DOCKER_UNAVAILABLE"
  | "CONTAINER_FAILED"
  | "CONTAINER_LOST"
  | "PATH_OUTSIDE_WORKSPACE"
  | "SANDBOX_PROTOCOL"
  | "SANDBOX_SPAWN_FAILED"
  | "SANDBOX_FILE_FAILED"
  | "NOT_FOUND"
  | "FORBIDDEN"
  | "BAD_REQUEST"
  | "BODY_TOO_LARGE"
  | "MESSAGE_TOO_LARGE"
  | "TOO_MANY_PARTS"
  | "ANSWER_TOO_LARGE"
  | "CLIENT_DATA_TOO_LARGE";

/**
 * The one error type PAI throws on purpose. `code` says what went wrong; `cause` holds the original error.
 * `PaiError.isInstance(e)` works across duplicated copies of the package.
 */
export class PaiError extends Error {
  readonly [marker] = true;
  readonly code: PaiErrorCode;
  /** Extra facts for logs and typed HTTP bodies (never secrets). */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: PaiErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "PaiError";
    this.code = code;
    this.details = options.details;
  }

  static isInstance(error: unknown): error is PaiError {
    return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[marker] === true;
  }

  /** True when `error` is a PaiError with the given code. */
  static hasCode(error: unknown, code: PaiErrorCode): error is PaiError {
    return PaiError.isInstance(error) && error.code === code;
  }

  toJSON(): { code: PaiErrorCode; message: string; details?: Readonly<Record<string, unknown>> } {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }
}
