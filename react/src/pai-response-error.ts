const marker = Symbol.for("pai.error.PaiResponseError");

/**
 * A PAI HTTP route answered with an error (`{ error: { code, message } }`). A member of PAI's error family with its
 * own `Symbol.for('pai.error.PaiResponseError')` marker: `PaiResponseError.isInstance(e)` recognizes it from any copy
 * of this package; it is not a `PaiError` (its `code` is whatever the server sent).
 */
export class PaiResponseError extends Error {
  readonly [marker] = true;
  /** The error code the server sent (`STALE_ANSWER`, `TOOL_DISABLED`, `THREAD_BUSY`, ...), or `HTTP_<status>`. */
  readonly code: string;
  /** The HTTP status. */
  readonly status: number;

  constructor(options: { code: string; message: string; status: number }) {
    super(options.message);
    this.name = "PaiResponseError";
    this.code = options.code;
    this.status = options.status;
  }

  /** Builds the error from a non-2xx response. */
  static async fromResponse(response: Response): Promise<PaiResponseError> {
    let code = `HTTP_${response.status}`;
    let message = `${response.status} ${response.statusText}`.trim();
    try {
      const body = (await response.json()) as { error?: { code?: unknown; message?: unknown } };
      if (typeof body.error?.code === "string") code = body.error.code;
      if (typeof body.error?.message === "string") message = body.error.message;
    } catch {
      // not a JSON error body
    }
    return new PaiResponseError({ code, message, status: response.status });
  }

  /** True for a `PaiResponseError` (or a subclass of it) from any copy of this package. */
  static isInstance(error: unknown): error is PaiResponseError {
    return typeof error === "object" && error !== null && (error as Record<symbol, unknown>)[marker] === true;
  }
}
