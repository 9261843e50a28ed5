import { PaiError } from "../../errors/pai-error.ts";

/** SQLite primary result codes that mean the file is not (or no longer) a readable database. */
const CORRUPT_CODES = new Set([11 /* SQLITE_CORRUPT */, 26 /* SQLITE_NOTADB */]);

/** Maps a `node:sqlite` error to `PaiError`; anything else (including a `PaiError`) passes through. */
export function toSqliteStoreError(error: unknown, location: string, action: string): unknown {
  if (PaiError.isInstance(error)) return error;
  const errcode = (error as { errcode?: unknown } | null)?.errcode;
  if (typeof errcode !== "number") return error;
  const message = errorMessage(error);
  const details = { path: location, sqliteCode: errcode };
  if (CORRUPT_CODES.has(errcode & 0xff) || /^no such (table|column)/.test(message)) {
    return new PaiError(
      "STORE_CORRUPT",
      `${location} is not a PAI thread store or is damaged (${message}); it was left untouched`,
      { cause: error, details },
    );
  }
  return new PaiError("STORE_UNWRITABLE", `Cannot ${action} the thread store ${location}: ${message}`, {
    cause: error,
    details,
  });
}

/** The message of a thrown value, which need not be an `Error`. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
