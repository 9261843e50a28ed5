import { hasErrorMarker, PaiErrorBase, type PaiErrorOptions } from "@pai/errors";

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
  | "CLIENT_DATA_TOO_LARGE"
  | "PREVIEWS_UNAVAILABLE"
  | "PREVIEW_NOT_FOUND"
  | "PREVIEW_FORBIDDEN"
  | "PREVIEW_UNREACHABLE"
  | "UNKNOWN_MESSAGE";

/**
 * The error `@pai/core` throws on purpose. `code` says what went wrong; `cause` holds the original error.
 *
 * PAI's error family follows the AI SDK's pattern: each class carries its own `Symbol.for('pai.error.<Name>')`
 * marker, so `isInstance` works across duplicated copies of a package and never confuses two classes.
 * `PaiError.isInstance(e)` holds for a `PaiError` (and a subclass of it), not for the other packages' errors
 * (`PoolError`, `SandboxError`, `BrowserError`, `ContainerAgentError`, `PaiResponseError`): check those with their
 * own class. Every member extends `PaiErrorBase` (`@pai/errors`), so it has the same shape (`name`, `code`,
 * `message`, `details`, `cause`, `toJSON()`).
 */
export class PaiError extends PaiErrorBase<PaiErrorCode> {
  readonly [marker] = true;

  constructor(code: PaiErrorCode, message: string, options: PaiErrorOptions = {}) {
    super("PaiError", code, message, options);
  }

  /** True for a `PaiError` (or a subclass of it) from any copy of `@pai/core`. */
  static isInstance(error: unknown): error is PaiError {
    return hasErrorMarker(error, marker);
  }

  /** True when `error` is a PaiError with the given code. */
  static hasCode(error: unknown, code: PaiErrorCode): error is PaiError {
    return PaiError.isInstance(error) && error.code === code;
  }
}
