import type { EgressTarget } from "./egress-policy.ts";

/** Headers that concern one hop: not forwarded upstream. */
const HOP_BY_HOP = new Set([
  "connection",
  "proxy-connection",
  "proxy-authorization",
  "keep-alive",
  "te",
  "trailer",
  "upgrade",
]);

/** A proxy request as {@link parseProxyRequest} reads it. */
export interface ProxyRequest {
  method: string;
  target: EgressTarget;
  /** For a plain-HTTP request, the head to send upstream (origin-form, `Connection: close`). */
  upstreamHead?: string;
}

/** `host:port` of a CONNECT request (IPv6 in brackets); `undefined` when malformed. */
function parseAuthority(authority: string): EgressTarget | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const host = match[1]!.startsWith("[") ? match[1]!.slice(1, -1) : match[1]!;
  return { host, port: Number(match[2]) };
}

/**
 * Reads a program's proxy request head (latin1, without its blank line): `CONNECT host:port` (a tunnel) or an
 * absolute `http://` request (forwarded as one request, its hop-by-hop headers dropped). A head that is neither is
 * `{ error }`, the reason the program is told; it never throws. The target is not checked here: the policy decides.
 */
export function parseProxyRequest(head: string): ProxyRequest | { error: string } {
  const lines = head.split("\r\n");
  const [method = "", requestTarget = "", version = ""] = (lines[0] ?? "").split(" ");
  if (!/^HTTP\/1\.[01]$/.test(version) || !/^[A-Z]+$/.test(method)) {
    return { error: "pai egress: not an HTTP proxy request" };
  }
  if (method === "CONNECT") {
    const target = parseAuthority(requestTarget);
    return target ? { method, target } : { error: `pai egress: bad CONNECT target ${requestTarget}` };
  }
  let url: URL;
  try {
    url = new URL(requestTarget);
  } catch {
    return { error: "pai egress: a proxy request needs an absolute http:// URL or CONNECT" };
  }
  if (url.protocol !== "http:") {
    return { error: `pai egress: ${url.protocol} URLs go through CONNECT, not a plain request` };
  }
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? 80 : Number(url.port);
  const headers = lines
    .slice(1)
    .filter((line) => line !== "")
    .filter((line) => !HOP_BY_HOP.has(line.slice(0, line.indexOf(":")).trim().toLowerCase()));
  if (!headers.some((line) => /^host\s*:/i.test(line))) headers.unshift(`Host: ${url.host}`);
  const upstreamHead = `${method} ${url.pathname}${url.search} ${version}\r\n${headers.join("\r\n")}\r\nConnection: close\r\n\r\n`;
  return { method, target: { host, port }, upstreamHead };
}
