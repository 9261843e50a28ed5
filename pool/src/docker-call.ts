// How the Docker drivers call dockerode: its errors turned into PoolErrors, its abort option.
import { PoolError } from "./pool-error.ts";

const unavailableCodes = new Set([
  "ECONNREFUSED",
  "ENOENT",
  "EACCES",
  "EPERM",
  "ECONNRESET",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "ENOTFOUND",
]);

/** True for the error an aborted dockerode request rejects with. */
export function isAbortError(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    ((error as { name?: unknown }).name === "AbortError" ||
      (error as { code?: unknown }).code === "ABORT_ERR")
  );
}

/** The engine's own words for a failed request. */
export function dockerMessage(error: unknown): string {
  const e = error as { json?: unknown; message?: unknown };
  if (e.json && typeof e.json === "object" && typeof (e.json as { message?: unknown }).message === "string") {
    return (e.json as { message: string }).message;
  }
  // docker-modem prefixes "(HTTP code 404) no such container - " even when the path, not the container, is missing.
  const message = typeof e.message === "string" ? e.message : String(error);
  return message.replace(/^\(HTTP code \d+\) [^-]*- /, "").trim();
}

/** Maps a dockerode/socket error onto a PoolError (aborts and PoolErrors pass through). */
export function toPoolError(error: unknown, action: string, details: Record<string, unknown> = {}): unknown {
  if (PoolError.isInstance(error) || isAbortError(error)) return error;
  const e = (error ?? {}) as { code?: unknown; statusCode?: unknown };
  if (typeof e.code === "string" && unavailableCodes.has(e.code)) {
    return new PoolError(
      "DOCKER_UNAVAILABLE",
      `Docker engine unavailable (${e.code}) while trying to ${action}`,
      {
        cause: error,
        details: { ...details, errno: e.code },
      },
    );
  }
  const statusCode = typeof e.statusCode === "number" ? e.statusCode : undefined;
  const message = `${action}: ${dockerMessage(error)}`;
  if (statusCode === 404) {
    return new PoolError("NOT_FOUND", message, { cause: error, details: { ...details, statusCode } });
  }
  return new PoolError("CONTAINER_FAILED", message, { cause: error, details: { ...details, statusCode } });
}

/** Runs `operation`, turning its errors into PoolErrors; an abort rejects with the signal's own reason. */
export async function dockerCall<T>(
  action: string,
  details: Record<string, unknown>,
  operation: () => Promise<T>,
  signal?: AbortSignal,
): Promise<T> {
  try {
    return await operation();
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    throw toPoolError(error, action, details);
  }
}

/** dockerode's option that ties a request to `signal`: nothing without one. */
export function abortOption(signal: AbortSignal | undefined): { abortSignal?: AbortSignal } {
  return signal ? { abortSignal: signal } : {};
}
