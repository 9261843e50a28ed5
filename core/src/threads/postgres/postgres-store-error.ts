import { DatabaseError } from "pg";
import { PaiError } from "../../errors/pai-error.ts";

/** SQLSTATEs that mean the store's tables are missing or not what this build created. */
const CORRUPT_STATES = new Set([
  "42P01" /* undefined_table */,
  "42703" /* undefined_column */,
  "3F000" /* invalid_schema_name */,
]);

/** SQLSTATEs of text PostgreSQL cannot hold (a NUL character; a character the database encoding lacks). */
const UNSTORABLE_TEXT_STATES = new Set(["22021" /* character_not_in_repertoire */, "22P05"]);

/** Errors of the connection itself, raised by Node or pg rather than by the server. */
const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOENT",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ETIMEDOUT",
  "EPIPE",
  "EACCES",
]);

/**
 * Maps an error of `pg` (or of reading a stored row) to `PaiError`; a `PaiError` passes through.
 * - `STORE_CORRUPT`: the store's schema or tables are missing or damaged, or a stored value is not JSON;
 * - `INVALID_ARGUMENT`: a text field PostgreSQL cannot store (a NUL character); nothing was written;
 * - `STORE_UNWRITABLE`: everything else, the server unreachable among it, with a message that says which.
 */
export function toPostgresStoreError(error: unknown, target: string, action: string): PaiError {
  if (PaiError.isInstance(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof DatabaseError) {
    const sqlState = error.code ?? "";
    const details = { target, sqlState };
    if (CORRUPT_STATES.has(sqlState)) {
      return new PaiError(
        "STORE_CORRUPT",
        `The thread store ${target} is missing tables or columns (${message}): was its schema dropped or changed by hand?`,
        { cause: error, details },
      );
    }
    if (UNSTORABLE_TEXT_STATES.has(sqlState)) {
      return new PaiError(
        "INVALID_ARGUMENT",
        `The thread store ${target} cannot store this text (${message}): PostgreSQL text holds no NUL character`,
        { cause: error, details },
      );
    }
    return new PaiError("STORE_UNWRITABLE", `Cannot ${action} the thread store ${target}: ${message}`, {
      cause: error,
      details,
    });
  }
  if (error instanceof SyntaxError) {
    return new PaiError(
      "STORE_CORRUPT",
      `The thread store ${target} holds a value that is not JSON: ${message}`,
      {
        cause: error,
        details: { target },
      },
    );
  }
  const code = (error as { code?: unknown } | null)?.code;
  const unreachable =
    (typeof code === "string" && CONNECTION_CODES.has(code)) ||
    /connection|connect|terminated|timeout/i.test(message);
  return new PaiError(
    "STORE_UNWRITABLE",
    unreachable
      ? `Cannot reach the PostgreSQL server of the thread store ${target}: ${message || code}`
      : `Cannot ${action} the thread store ${target}: ${message}`,
    { cause: error, details: { target, ...(typeof code === "string" ? { code } : {}), unreachable } },
  );
}
