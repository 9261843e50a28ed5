import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import { withoutCookie } from "./preview-access.ts";
import { PREVIEW_TOKEN_COOKIE, PREVIEW_TOKEN_PARAM } from "./preview-origin.ts";
import type { PreviewEntry } from "./preview-registry.ts";

/** Headers that belong to one connection, never forwarded (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authenticate",
  "proxy-authorization",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
]);

/**
 * The headers the port's server gets: the browser's, less hop-by-hop ones (unless `upgrade`) and the preview's
 * token cookie, with its own `Host` (`localhost:<port>`) and where the browser was in `X-Forwarded-*`.
 */
export function forwardedHeaders(
  incoming: IncomingHttpHeaders | Record<string, string>,
  entry: PreviewEntry,
  url: URL,
  upgrade: boolean,
): Record<string, string | string[]> {
  const headers: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    const lower = name.toLowerCase();
    if (lower === "host" || lower.startsWith("x-forwarded-")) continue;
    if (HOP_BY_HOP.has(lower) && !(upgrade && (lower === "connection" || lower === "upgrade"))) continue;
    headers[lower] = value;
  }
  const cookie = withoutCookie(
    typeof headers.cookie === "string" ? headers.cookie : undefined,
    PREVIEW_TOKEN_COOKIE,
  );
  if (cookie === undefined) delete headers.cookie;
  else headers.cookie = cookie;
  headers.host = `localhost:${entry.port}`;
  headers["x-forwarded-host"] = url.host;
  headers["x-forwarded-proto"] = url.protocol.replace(":", "");
  return headers;
}

/** The port's response headers for the browser: no hop-by-hop ones, and cookies only for the preview's own host. */
export function responseHeaders(incoming: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of responseHeaderPairs(incoming)) headers.append(name, value);
  return headers;
}

/** {@link responseHeaders} as the name/value pairs Node's `writeHead` takes, in order. */
export function responseHeaderPairs(incoming: IncomingMessage): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  const raw = incoming.rawHeaders;
  let chunked = false;
  for (let at = 0; at + 1 < raw.length; at += 2) {
    const name = raw[at]!.toLowerCase();
    const value = raw[at + 1]!;
    if (name === "transfer-encoding") chunked = true;
    if (HOP_BY_HOP.has(name)) continue;
    pairs.push([name, name === "set-cookie" ? hostOnlyCookie(value) : value]);
  }
  // a body in chunks has no length of its own (the raw headers, not `headers`: Node builds that object on demand)
  return chunked ? pairs.filter(([name]) => name !== "content-length") : pairs;
}

/** A `Set-Cookie` value without a `Domain` attribute: a preview sets cookies for its own host only. */
function hostOnlyCookie(value: string): string {
  return value
    .split(";")
    .filter((part, index) => index === 0 || !/^\s*domain\s*=/i.test(part))
    .join(";");
}

/** The path and query of `url` without the preview's token parameter. */
export function withoutTokenParam(url: URL): string {
  // most requests carry no query at all: no URLSearchParams for them
  if (!url.search.includes(PREVIEW_TOKEN_PARAM) || !url.searchParams.has(PREVIEW_TOKEN_PARAM)) {
    return url.pathname + url.search;
  }
  const clean = new URL(url);
  clean.searchParams.delete(PREVIEW_TOKEN_PARAM);
  return clean.pathname + clean.search;
}

/** An HTTP/1.1 request head. Node's parser validated the header names and values the browser sent. */
export function requestHead(
  method: string,
  path: string,
  headers: Record<string, string | string[]>,
): string {
  const lines = [`${method} ${path} HTTP/1.1`];
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
  }
  return `${lines.join("\r\n")}\r\n\r\n`;
}
