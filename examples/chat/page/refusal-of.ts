import { APICallError } from "@ai-sdk/provider";
import { PaiResponseError } from "@pai/react";

/** A request PAI's handler answered with an error before anything started: its code and message. */
export interface Refusal {
  /** The server's code (`THREAD_BUSY`, `UNKNOWN_MESSAGE`, ...), or `HTTP_<status>` when it sent none. */
  code: string;
  message: string;
}

/**
 * The refusal `error` carries when PAI's handler answered the request with an error status: `useChat`'s
 * `APICallError` (whose body is the handler's `{ error: { code, message } }`) or a `PaiResponseError`. Anything else
 * (a stream that broke, a network failure) is not a refusal: `undefined`.
 */
export function refusalOf(error: unknown): Refusal | undefined {
  if (PaiResponseError.isInstance(error)) return { code: error.code, message: error.message };
  if (!APICallError.isInstance(error) || error.statusCode === undefined) return undefined;
  const status = error.statusCode;
  try {
    const body = JSON.parse(error.responseBody ?? "") as { error?: { code?: unknown; message?: unknown } };
    return {
      code: typeof body.error?.code === "string" ? body.error.code : `HTTP_${status}`,
      message: typeof body.error?.message === "string" ? body.error.message : `HTTP ${status}`,
    };
  } catch {
    return { code: `HTTP_${status}`, message: error.responseBody || `HTTP ${status}` };
  }
}
