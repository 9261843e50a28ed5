import { hasErrorMarker, PaiErrorBase, type PaiErrorJson } from "@pai/errors";

const marker = Symbol.for("pai.error.PaiResponseError");

/**
 * A PAI HTTP route answered with an error (`{ error: { code, message } }`). A member of PAI's error family
 * (extending `@pai/errors`' `PaiErrorBase`) with its own `Symbol.for('pai.error.PaiResponseError')` marker:
 * `PaiResponseError.isInstance(e)` recognizes it from any copy of this package; it is not a `PaiError` (its `code`
 * is whatever the server sent, `HTTP_<status>` when it sent none). Its `details` is always `undefined`.
 */
export class PaiResponseError extends PaiErrorBase {
  readonly [marker] = true;
  /** The HTTP status. */
  readonly status: number;

  constructor(options: { code: string; message: string; status: number }) {
    super("PaiResponseError", options.code, options.message);
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
    return hasErrorMarker(error, marker);
  }

  /** True when `error` is a `PaiResponseError` with the given code (`STALE_ANSWER`, `HTTP_404`, ...). */
  static hasCode(error: unknown, code: string): error is PaiResponseError {
    return PaiResponseError.isInstance(error) && error.code === code;
  }

  /** The code, the message and the HTTP status. */
  override toJSON(): PaiErrorJson<string> & { status: number } {
    return { ...super.toJSON(), status: this.status };
  }
}
