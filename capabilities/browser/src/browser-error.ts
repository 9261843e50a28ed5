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
 * The error `@pai/browser` throws on purpose. A member of PAI's error family (the shape of `@pai/core`'s `PaiError`)
 * with its own `Symbol.for('pai.error.BrowserError')` marker: `BrowserError.isInstance(e)` recognizes it from any
 * copy of this package and nothing else; it is not a `PaiError`.
 */
export class BrowserError extends Error {
  readonly [marker] = true;
  readonly code: BrowserErrorCode;
  /** Extra facts for logs (never secrets). */
  readonly details: Readonly<Record<string, unknown>> | undefined;

  constructor(
    code: BrowserErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, { cause: options.cause });
    this.name = "BrowserError";
    this.code = code;
    this.details = options.details;
  }

  /** True for a `BrowserError` (or a subclass of it) from any copy of this package. */
  static isInstance(error: unknown): error is BrowserError {
    return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[marker] === true;
  }

  /** True when `error` is a browser error with the given code. */
  static hasCode(error: unknown, code: BrowserErrorCode): error is BrowserError {
    return BrowserError.isInstance(error) && error.code === code;
  }

  toJSON(): { code: BrowserErrorCode; message: string; details?: Readonly<Record<string, unknown>> } {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }
}
