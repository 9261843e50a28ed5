import {
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from "node:http";
import { type Duplex, Readable } from "node:stream";
import { PaiError } from "../errors/pai-error.ts";
import { refuseUpgrade, toFetchHeaders } from "../http/upgrade-socket.ts";
import { decidePreviewAccess, type PreviewAccessDecision, withoutCookie } from "./preview-access.ts";
import { PREVIEW_TOKEN_COOKIE, PREVIEW_TOKEN_PARAM, parsePreviewHost } from "./preview-origin.ts";
import type { PreviewEntry, PreviewRegistry } from "./preview-registry.ts";
import type { PreviewRequestEvent } from "./preview-request-event.ts";

/** Options of {@link createPreviewGateway}. */
export interface PreviewGatewayOptions {
  registry: PreviewRegistry;
  /** A new connection to the preview's port (the resource woken first); its close ends the use. */
  connect(entry: PreviewEntry, signal: AbortSignal): Promise<Duplex>;
  /** The identity key of a request's caller (the app's `authenticate`), or `undefined` for nobody. */
  identityKeyOf(request: Request): Promise<string | undefined>;
}

/** Serves the previews of a {@link PreviewRegistry}: plain requests (fetch-style) and upgrades (Node). */
export interface PreviewGateway {
  /** The preview id a request's `Host` names, or `undefined` when the request is not a preview's. */
  previewIdOf(host: string | null | undefined): string | undefined;
  /** Answers a request to preview `id`: its port's response, streamed, or a refusal. */
  handle(request: Request, id: string): Promise<Response>;
  /**
   * {@link handle} for a Node server (`toNodeListener`): the same checks and answers, with the bodies piped between
   * Node's streams instead of passing through web streams (about twice the throughput).
   */
  handleNode(req: IncomingMessage, res: ServerResponse, id: string): Promise<void>;
  /** Takes an upgrade request (a WebSocket) to preview `id` over: tunnels it to the port, or refuses it. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, id: string): Promise<void>;
}

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

/** What the request paths of a gateway share: the registry, the way to the port, and the access decision. */
interface GatewayContext {
  registry: PreviewRegistry;
  connect: PreviewGatewayOptions["connect"];
  decide(
    entry: PreviewEntry | undefined,
    method: string,
    url: URL,
    cookie: string | null | undefined,
    request: Request | (() => Request),
  ): Promise<PreviewAccessDecision>;
}

/** Serves previews over the connections `options.connect` opens. */
export function createPreviewGateway(options: PreviewGatewayOptions): PreviewGateway {
  const { registry } = options;
  const gateway: GatewayContext = {
    registry,
    connect: options.connect,
    decide: (entry, method, url, cookie, request) =>
      decidePreviewAccess(entry, {
        method,
        url,
        cookie,
        identityKey: () => options.identityKeyOf(typeof request === "function" ? request() : request),
      }),
  };
  return {
    previewIdOf(host) {
      const parsed = parsePreviewHost(host, registry.baseUrl);
      return parsed.preview ? parsed.id : undefined;
    },
    handle: (request, id) => handleRequest(gateway, request, id),
    handleNode: (req, res, id) => handleNodeRequest(gateway, req, res, id),
    upgrade: (req, socket, head, id) => tunnelUpgrade(gateway, req, socket, head, id),
  };
}

async function handleRequest(gateway: GatewayContext, request: Request, id: string): Promise<Response> {
  const startedAt = Date.now();
  const url = new URL(request.url);
  const entry = gateway.registry.get(id);
  const base = eventBase(entry, id, request.method, url, "http");
  const decision = await gateway.decide(entry, request.method, url, request.headers.get("cookie"), request);
  if (!decision.allowed) {
    reportUnconnected(gateway, base, refusal(decision), startedAt);
    return errorResponse(decision.status, decision.code, decision.reason);
  }
  if (decision.redirectTo !== undefined) {
    reportUnconnected(gateway, base, { decision: "allowed", status: 302 }, startedAt);
    return new Response(null, {
      status: 302,
      headers: {
        location: decision.redirectTo,
        "set-cookie": decision.setCookie ?? "",
        "cache-control": "no-store",
      },
    });
  }
  const live = entry as PreviewEntry;
  const opened = await openTracked(gateway, live, request.signal, { base, startedAt });
  if (!("connection" in opened)) return errorResponse(opened.status, opened.code, opened.reason);
  const { connection } = opened;
  const down = countData(connection);
  let up = () => 0;
  const finish = (status: number, reason?: string) =>
    gateway.registry.report({
      ...base,
      decision: "allowed",
      status,
      ...(reason ? { reason } : {}),
      bytesUp: up(),
      bytesDown: down(),
      durationMs: elapsed(startedAt),
    });
  try {
    const response = await forward(request, url, live, connection, (source) => {
      up = countData(source);
    });
    const body = response.body;
    if (!body) {
      finish(response.status);
      connection.destroy();
      return response;
    }
    return new Response(
      body.pipeThrough(
        new TransformStream({
          flush: () => {
            finish(response.status);
            connection.destroy();
          },
        }),
      ),
      { status: response.status, statusText: response.statusText, headers: response.headers },
    );
  } catch (error) {
    connection.destroy();
    const reason = error instanceof Error ? error.message : String(error);
    finish(502, reason);
    return errorResponse(
      502,
      "PREVIEW_UNREACHABLE",
      `the server on port ${live.port} did not answer: ${reason}`,
    );
  }
}

async function handleNodeRequest(
  gateway: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
): Promise<void> {
  const startedAt = Date.now();
  const url = nodeRequestUrl(req, gateway.registry.baseUrl);
  const method = req.method ?? "GET";
  const entry = gateway.registry.get(id);
  const base = eventBase(entry, id, method, url, "http");
  const asRequest = () => new Request(url, { method: "GET", headers: toFetchHeaders(req.headers) });
  const decision = await gateway.decide(entry, method, url, req.headers.cookie, asRequest);
  if (!decision.allowed) {
    reportUnconnected(gateway, base, refusal(decision), startedAt);
    return sendError(res, decision.status, decision.code, decision.reason);
  }
  if (decision.redirectTo !== undefined) {
    reportUnconnected(gateway, base, { decision: "allowed", status: 302 }, startedAt);
    res.writeHead(302, {
      location: decision.redirectTo,
      "set-cookie": decision.setCookie ?? "",
      "cache-control": "no-store",
    });
    res.end();
    return;
  }
  const live = entry as PreviewEntry;
  const controller = new AbortController();
  res.once("close", () => controller.abort());
  const opened = await openTracked(gateway, live, controller.signal, { base, startedAt });
  if (!("connection" in opened)) return sendError(res, opened.status, opened.code, opened.reason);
  const { connection } = opened;
  const up = countData(req);
  const down = countData(connection);
  let status = 502;
  let reason: string | undefined;
  res.once("close", () => {
    connection.destroy();
    gateway.registry.report({
      ...base,
      decision: "allowed",
      status,
      ...(reason ? { reason } : {}),
      bytesUp: up(),
      bytesDown: down(),
      durationMs: elapsed(startedAt),
    });
  });
  const outgoing = httpRequest({
    method,
    path: withoutTokenParam(url),
    headers: forwardedHeaders(req.headers, live, url, false),
    createConnection: () => connection as never,
  });
  outgoing.once("error", (error) => {
    reason = error.message;
    if (res.headersSent) res.destroy();
    else
      sendError(res, 502, "PREVIEW_UNREACHABLE", `the server on port ${live.port} did not answer: ${reason}`);
  });
  outgoing.once("response", (incoming) => {
    status = incoming.statusCode ?? 502;
    res.writeHead(status, incoming.statusMessage ?? "", responseHeaderPairs(incoming).flat());
    incoming.pipe(res);
    incoming.once("error", () => res.destroy());
  });
  req.pipe(outgoing);
}

async function tunnelUpgrade(
  gateway: GatewayContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  id: string,
): Promise<void> {
  const startedAt = Date.now();
  const url = nodeRequestUrl(req, gateway.registry.baseUrl);
  const method = req.method ?? "GET";
  const entry = gateway.registry.get(id);
  const base = eventBase(entry, id, method, url, "upgrade");
  const asRequest = () => new Request(url, { method, headers: toFetchHeaders(req.headers) });
  const decision = await gateway.decide(entry, method, url, req.headers.cookie, asRequest);
  if (!decision.allowed) {
    reportUnconnected(gateway, base, refusal(decision), startedAt);
    refuseUpgrade(socket, decision.status, decision.code, decision.reason);
    return;
  }
  const live = entry as PreviewEntry;
  const controller = new AbortController();
  socket.once("close", () => controller.abort());
  const opened = await openTracked(gateway, live, controller.signal, { base, startedAt });
  if (!("connection" in opened)) return refuseUpgrade(socket, opened.status, opened.code, opened.reason);
  const { connection } = opened;
  const up = countData(socket);
  const down = countData(connection);
  const path = withoutTokenParam(url);
  const headers = forwardedHeaders(req.headers, live, url, true);
  connection.write(requestHead(method, path, headers));
  if (head.length > 0) connection.write(head);
  socket.pipe(connection);
  connection.pipe(socket);
  const end = () => {
    socket.destroy();
    connection.destroy();
  };
  socket.once("error", end);
  connection.once("error", end);
  socket.once("close", end);
  connection.once("close", () => {
    end();
    gateway.registry.report({
      ...base,
      decision: "allowed",
      status: 101,
      bytesUp: up(),
      bytesDown: down(),
      durationMs: elapsed(startedAt),
    });
  });
}

/**
 * Sends `request` to the port over `connection` and resolves with the port's response, its body streaming.
 * `onBody` gets the request body's stream, when there is one.
 */
function forward(
  request: Request,
  url: URL,
  entry: PreviewEntry,
  connection: Duplex,
  onBody: (source: Readable) => void,
): Promise<Response> {
  return new Promise<Response>((resolve, reject) => {
    const outgoing = httpRequest({
      method: request.method,
      path: withoutTokenParam(url),
      headers: forwardedHeaders(Object.fromEntries(request.headers), entry, url, false),
      createConnection: () => connection as never,
      signal: request.signal,
    });
    outgoing.once("error", reject);
    outgoing.once("response", (incoming) => {
      const body =
        request.method === "HEAD" || incoming.statusCode === 204 || incoming.statusCode === 304
          ? null
          : (Readable.toWeb(incoming) as ReadableStream<Uint8Array>);
      if (!body) incoming.resume();
      resolve(
        new Response(body, {
          status: incoming.statusCode ?? 502,
          statusText: incoming.statusMessage ?? "",
          headers: responseHeaders(incoming),
        }),
      );
    });
    if (request.body) {
      const source = Readable.fromWeb(request.body as never);
      onBody(source);
      source.once("error", (error) => outgoing.destroy(error));
      source.pipe(outgoing);
    } else {
      outgoing.end();
    }
  });
}

/**
 * The headers the port's server gets: the browser's, less hop-by-hop ones (unless `upgrade`) and the preview's
 * token cookie, with its own `Host` (`localhost:<port>`) and where the browser was in `X-Forwarded-*`.
 */
function forwardedHeaders(
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
function responseHeaders(incoming: IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of responseHeaderPairs(incoming)) headers.append(name, value);
  return headers;
}

/** {@link responseHeaders} as the name/value pairs Node's `writeHead` takes, in order. */
function responseHeaderPairs(incoming: IncomingMessage): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  const raw = incoming.rawHeaders;
  for (let at = 0; at + 1 < raw.length; at += 2) {
    const name = raw[at]!.toLowerCase();
    const value = raw[at + 1]!;
    if (HOP_BY_HOP.has(name) || (name === "content-length" && incoming.headers["transfer-encoding"]))
      continue;
    pairs.push([name, name === "set-cookie" ? hostOnlyCookie(value) : value]);
  }
  return pairs;
}

/** A `Set-Cookie` value without a `Domain` attribute: a preview sets cookies for its own host only. */
function hostOnlyCookie(value: string): string {
  return value
    .split(";")
    .filter((part, index) => index === 0 || !/^\s*domain\s*=/i.test(part))
    .join(";");
}

/** The path and query of `url` without the preview's token parameter. */
function withoutTokenParam(url: URL): string {
  if (!url.searchParams.has(PREVIEW_TOKEN_PARAM)) return url.pathname + url.search;
  const clean = new URL(url);
  clean.searchParams.delete(PREVIEW_TOKEN_PARAM);
  return clean.pathname + clean.search;
}

/** An HTTP/1.1 request head. Node's parser validated the header names and values the browser sent. */
function requestHead(method: string, path: string, headers: Record<string, string | string[]>): string {
  const lines = [`${method} ${path} HTTP/1.1`];
  for (const [name, value] of Object.entries(headers)) {
    for (const one of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${one}`);
  }
  return `${lines.join("\r\n")}\r\n\r\n`;
}

/** Why a connection to a preview's port failed, as the request is answered. */
interface ConnectFailure {
  status: number;
  code: string;
  reason: string;
}

/**
 * Connects to the preview's port and tracks the connection (closing the preview ends it); a failure is reported as
 * the request's event and returned for the caller to answer with.
 */
async function openTracked(
  gateway: GatewayContext,
  live: PreviewEntry,
  signal: AbortSignal,
  event: { base: ReturnType<typeof eventBase>; startedAt: number },
): Promise<{ connection: Duplex } | ConnectFailure> {
  try {
    const connection = await gateway.connect(live, signal);
    gateway.registry.track(live.id, connection);
    return { connection };
  } catch (error) {
    const failure = unreachable(error);
    reportUnconnected(gateway, event.base, failure.event, event.startedAt);
    return { status: failure.event.status, code: failure.code, reason: failure.event.reason };
  }
}

/** Reports a request whose bytes never reached the port: refused, redirected to set the token cookie, or failed. */
function reportUnconnected(
  gateway: GatewayContext,
  base: ReturnType<typeof eventBase>,
  outcome: Pick<PreviewRequestEvent, "decision" | "status" | "reason">,
  startedAt: number,
): void {
  gateway.registry.report({ ...base, ...outcome, bytesUp: 0, bytesDown: 0, durationMs: elapsed(startedAt) });
}

/** Counts the bytes `stream` emits (alongside whoever reads them). */
function countData(stream: Readable | Duplex): () => number {
  let bytes = 0;
  stream.on("data", (chunk: Uint8Array) => {
    bytes += chunk.length;
  });
  return () => bytes;
}

function eventBase(
  entry: PreviewEntry | undefined,
  id: string,
  method: string,
  url: URL,
  kind: "http" | "upgrade",
): Pick<PreviewRequestEvent, "previewId" | "threadId" | "port" | "method" | "path" | "kind"> {
  return {
    ...(entry ? { previewId: id, threadId: entry.threadId, port: entry.port } : {}),
    method,
    path: withoutTokenParam(url),
    kind,
  };
}

function refusal(decision: Extract<PreviewAccessDecision, { allowed: false }>) {
  return { decision: "refused" as const, status: decision.status, reason: decision.reason };
}

function unreachable(error: unknown): {
  code: string;
  event: { decision: "refused"; status: number; reason: string };
} {
  const code = PaiError.isInstance(error) ? error.code : "PREVIEW_UNREACHABLE";
  const reason = error instanceof Error ? error.message : String(error);
  const status = code === "PREVIEW_NOT_FOUND" ? 404 : 502;
  return { code, event: { decision: "refused", status, reason } };
}

/** The URL a Node request asked for, as the browser saw it (the base URL's scheme, the request's `Host`). */
function nodeRequestUrl(req: IncomingMessage, baseUrl: URL | undefined): URL {
  return new URL(req.url ?? "/", `${baseUrl?.protocol ?? "http:"}//${req.headers.host ?? "localhost"}`);
}

function elapsed(startedAt: number): number {
  return Date.now() - startedAt;
}

/** Answers a Node request with a JSON error, as {@link errorResponse} does. */
function sendError(res: ServerResponse, status: number, code: string, message: string): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify({ error: { code, message } }));
}

function errorResponse(status: number, code: string, message: string): Response {
  return new Response(JSON.stringify({ error: { code, message } }), {
    status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}
