import { createHash } from "node:crypto";

/**
 * A stable key for an identity: `user:<userId>` when the identity has a string `userId`, otherwise a hash of
 * its canonical JSON. Threads are owned by it and `user`-lifetime capabilities are keyed by it.
 */
export function defaultIdentityKey(identity: unknown): string {
  if (typeof identity === "object" && identity !== null) {
    const userId = (identity as { userId?: unknown }).userId;
    if (typeof userId === "string" && userId !== "") return `user:${userId}`;
  }
  if (identity === undefined || identity === null) return "anonymous";
  return `identity:${createHash("sha256").update(canonicalJson(identity)).digest("hex").slice(0, 16)}`;
}

/** JSON with object keys sorted, so equal values give equal strings. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
