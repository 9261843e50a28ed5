const marker = Symbol.for("pai.error");

/** Every code a {@link BrowserError} carries. */
export type BrowserErrorCode =
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "CAPABILITY_UNAVAILABLE"
  | "BROWSER_TIMEOUT"
  | "BROWSER_NAVIGATION_FAILED"
  | "BROWSER_EVALUATION_FAILED";

/**
 * The error the browser facade throws. It carries the `Symbol.for('pai.error')` marker, so `PaiError.isInstance(e)`
 * holds and `e.code` reads as a PaiError's would; the browser-only codes (`BROWSER_*`) live here, not in core.
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

  /** True for a BrowserError from any copy of this package. */
  static isInstance(error: unknown): error is BrowserError {
    return (
      typeof error === "object" &&
      error !== null &&
      (error as Record<symbol, unknown>)[marker] === true &&
      (error as { name?: unknown }).name === "BrowserError"
    );
  }

  toJSON(): { code: BrowserErrorCode; message: string; details?: Readonly<Record<string, unknown>> } {
    return this.details
      ? { code: this.code, message: this.message, details: this.details }
      : { code: this.code, message: this.message };
  }
}
