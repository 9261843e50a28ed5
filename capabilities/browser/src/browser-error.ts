import { hasErrorMarker, PaiErrorBase, type PaiErrorOptions } from "@pai/errors";

const marker = Symbol.for("pai.error.BrowserError");

/**
 * Every code a {@link BrowserError} carries: the codes `@pai/browser` throws. `IMAGE_UNAVAILABLE`: the browser image
 * is not on an engine and could not be provided there (the message says what to do).
 */
export type BrowserErrorCode =
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "CAPABILITY_UNAVAILABLE"
  | "BROWSER_TIMEOUT"
  | "BROWSER_NAVIGATION_FAILED"
  | "BROWSER_EVALUATION_FAILED"
  | "IMAGE_UNAVAILABLE";

/**
 * The error `@pai/browser` throws on purpose. A member of PAI's error family (extending `@pai/errors`'
 * `PaiErrorBase`) with its own `Symbol.for('pai.error.BrowserError')` marker: `BrowserError.isInstance(e)`
 * recognizes it from any copy of this package and nothing else; it is not a `PaiError`.
 */
export class BrowserError extends PaiErrorBase<BrowserErrorCode> {
  readonly [marker] = true;

  constructor(code: BrowserErrorCode, message: string, options: PaiErrorOptions = {}) {
    super("BrowserError", code, message, options);
  }

  /** True for a `BrowserError` (or a subclass of it) from any copy of this package. */
  static isInstance(error: unknown): error is BrowserError {
    return hasErrorMarker(error, marker);
  }

  /** True when `error` is a browser error with the given code. */
  static hasCode(error: unknown, code: BrowserErrorCode): error is BrowserError {
    return BrowserError.isInstance(error) && error.code === code;
  }
}
