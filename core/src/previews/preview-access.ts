import { timingSafeEqual } from "node:crypto";
import { PREVIEW_TOKEN_COOKIE, PREVIEW_TOKEN_PARAM } from "./preview-origin.ts";
import type { PreviewEntry } from "./preview-registry.ts";

/** What a preview request may do: go on (perhaps after setting the token cookie), or be refused. */
export type PreviewAccessDecision =
  | {
      allowed: true;
      /** The token came in the URL: set this cookie and redirect to `redirectTo` (GET/HEAD) or go on. */
      setCookie?: string;
      redirectTo?: string;
    }
  | { allowed: false; status: 403 | 404; code: "PREVIEW_NOT_FOUND" | "PREVIEW_FORBIDDEN"; reason: string };

/** What {@link decidePreviewAccess} reads of a request. */
export interface PreviewAccessRequest {
  method: string;
  /** The request's URL, as the browser sent it (with the token parameter on a first visit). */
  url: URL;
  /** The `Cookie` header. */
  cookie: string | null | undefined;
  /** The identity key of whoever the app's `authenticate` says is asking, or `undefined` for nobody. */
  identityKey: () => Promise<string | undefined>;
}

/**
 * Decides a request to preview `entry` (`undefined`: no live preview by that id). `access: "token"`: the token in
 * the URL (first visit: it becomes a cookie for the preview's own origin) or in that cookie; `"identity"`: the
 * identity that owns the thread. Tokens are compared in constant time.
 */
export async function decidePreviewAccess(
  entry: PreviewEntry | undefined,
  request: PreviewAccessRequest,
): Promise<PreviewAccessDecision> {
  if (!entry) return refuse(404, "PREVIEW_NOT_FOUND", "no such preview (closed, expired or never opened)");
  if (entry.access === "identity") {
    const key = await request.identityKey();
    return key === entry.identityKey
      ? { allowed: true }
      : refuse(403, "PREVIEW_FORBIDDEN", "this preview opens only for the identity that owns the thread");
  }
  const fromUrl = request.url.searchParams.get(PREVIEW_TOKEN_PARAM);
  if (fromUrl !== null) {
    if (!sameSecret(fromUrl, entry.token)) return refuse(403, "PREVIEW_FORBIDDEN", "wrong preview token");
    const clean = new URL(request.url);
    clean.searchParams.delete(PREVIEW_TOKEN_PARAM);
    const setCookie = tokenCookie(entry, request.url);
    const navigates = request.method === "GET" || request.method === "HEAD";
    return navigates
      ? { allowed: true, setCookie, redirectTo: clean.pathname + clean.search }
      : { allowed: true };
  }
  const fromCookie = readCookie(request.cookie, PREVIEW_TOKEN_COOKIE);
  if (fromCookie === undefined) return refuse(403, "PREVIEW_FORBIDDEN", "no preview token");
  if (!sameSecret(fromCookie, entry.token)) return refuse(403, "PREVIEW_FORBIDDEN", "wrong preview token");
  return { allowed: true };
}

/**
 * The token cookie for the preview's origin only (no `Domain`). In a browser's secure context (https, or
 * `*.localhost`) it is `SameSite=None; Secure; Partitioned`, so that the preview also works inside the app's
 * `<iframe>`; on plain http elsewhere `SameSite=Lax`.
 */
function tokenCookie(entry: PreviewEntry, url: URL): string {
  const maxAge = Math.max(1, Math.floor((entry.expiresAt - Date.now()) / 1000));
  const base = `${PREVIEW_TOKEN_COOKIE}=${entry.token}; Path=/; Max-Age=${maxAge}; HttpOnly`;
  const secureContext = url.protocol === "https:" || url.hostname.endsWith(".localhost");
  return secureContext ? `${base}; SameSite=None; Secure; Partitioned` : `${base}; SameSite=Lax`;
}

/** The value of cookie `name` in a `Cookie` header, if present. */
export function readCookie(header: string | null | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at < 0) continue;
    if (part.slice(0, at).trim() === name) return part.slice(at + 1).trim();
  }
  return undefined;
}

/** A `Cookie` header without cookie `name` (the preview's token never reaches the server in the sandbox). */
export function withoutCookie(header: string | undefined, name: string): string | undefined {
  if (header === undefined) return undefined;
  const kept = header
    .split(";")
    .map((part) => part.trim())
    .filter((part) => part !== "" && part.slice(0, Math.max(0, part.indexOf("="))).trim() !== name);
  return kept.length > 0 ? kept.join("; ") : undefined;
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function refuse(
  status: 403 | 404,
  code: "PREVIEW_NOT_FOUND" | "PREVIEW_FORBIDDEN",
  reason: string,
): PreviewAccessDecision {
  return { allowed: false, status, code, reason };
}
