const marker = Symbol.for("pai.error.PaiError");

/**
 * Every code a {@link PaiError} carries: the codes `@pai/core` throws. The other packages own theirs
 * (`PoolError` in `@pai/pool`, `SandboxError` in `@pai/sandbox`, `BrowserError` in `@pai/browser`,
 * `ContainerAgentError` in `@pai/container-agent`).
 */
export type PaiErrorCode =
  | "INVALID_IDENTITY"
  | "INVALID_CONTEXT"
  | "INVALID_INPUT"
  | "INVALID_OUTPUT"
  | "INVALID_ARGUMENT"
  | "UNKNOWN_AGENT"
  | "UNKNOWN_RUN"
  | "UNKNOWN_ACTION"
  | "TOOL_DISABLED"
  | "RUN_FAILED"
  | "STALE_ANSWER"
  | "JOURNAL_DIVERGED"
  | "THREAD_BUSY"
  | "STORE_CORRUPT"
  | "STORE_UNWRITABLE"
  | "STORE_CLOSED"
  | "MISSING_CAPABILITY"
  | "CAPABILITY_UNAVAILABLE"
  | "CAPABILITY_BUSY"
  | "NOT_FOUND"
  | "BAD_REQUEST"
  | "BODY_TOO_LARGE"
  | "MESSAGE_TOO_LARGE"
  | "TOO_MANY_PARTS"
  | "ANSWER_TOO_LARGE"
  | "CLIENT_DATA_TOO_LARGE";

/**
 * The error `@pai/core` throws on purpose. `code` says what went wrong; `cause` holds the original error.
 *
 * PAI's error family follows the AI SDK's pattern: each class carries its own `Symbol.for('pai.error.<Name>')`
 * marker, so `isInstance` works across duplicated copies of a package and never confuses two classes.
 * `PaiError.isInstance(e)` holds for a `PaiError` (and a subclass of it), not for the other packages' errors
 * (`PoolError`, `SandboxError`, `BrowserError`, `ContainerAgentError`, `PaiResponseError`): check those with their
 * own class. Every member has the same shape (`name`, `code`, `message`, `details`, `cause`, `toJSON()`).
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

  /** True for a `PaiError` (or a subclass of it) from any copy of `@pai/core`. */
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
