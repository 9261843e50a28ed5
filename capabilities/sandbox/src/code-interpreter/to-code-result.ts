import type { CodeResult } from "./code-context.ts";

const FIELDS = {
  "text/plain": "text",
  "text/html": "html",
  "text/markdown": "markdown",
  "image/svg+xml": "svg",
  "image/png": "png",
  "image/jpeg": "jpeg",
  "application/json": "json",
  "text/latex": "latex",
  "application/javascript": "javascript",
} as const satisfies Record<string, keyof CodeResult>;

/**
 * A displayed MIME bundle as a {@link CodeResult}: the known types as fields (images base64, JSON parsed), every
 * other type under `extra`.
 * @example
 * toCodeResult({ "text/plain": "42" }, true); // { isMainResult: true, text: "42" }
 */
export function toCodeResult(data: Record<string, unknown>, isMainResult: boolean): CodeResult {
  const result: CodeResult = { isMainResult };
  const extra: Record<string, unknown> = {};
  for (const [mime, value] of Object.entries(data)) {
    const field = Object.hasOwn(FIELDS, mime) ? FIELDS[mime as keyof typeof FIELDS] : undefined;
    if (field === "json") result.json = value;
    else if (field) result[field] = typeof value === "string" ? value : JSON.stringify(value);
    else extra[mime] = value;
  }
  if (Object.keys(extra).length > 0) result.extra = extra;
  return result;
}
