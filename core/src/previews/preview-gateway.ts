import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import { type Duplex, Readable } from "node:stream";
import { PaiError } from "../errors/pai-error.ts";
import { refuseUpgrade, toFetchHeaders } from "../http/upgrade-socket.ts";
import { decidePreviewAccess, type PreviewAccessDecision } from "./preview-access.ts";
import {
  forwardedHeaders,
  requestHead,
  responseHeaderPairs,
  responseHeaders,
  withoutTokenParam,
} from "./preview-headers.ts";
import { parsePreviewHost } from "./preview-origin.ts";
import type { PreviewEntry, PreviewRegistry } from "./preview-registry.ts";
import type { PreviewRequestEvent } from "./preview-request-event.ts";
import {
  PreviewUpstream,
  requestUpstream,
  type UpstreamRequestError,
  upstreamBytesRead,
} from "./preview-upstream.ts";
import { spliceResponseBody } from "./splice-response-body.ts";

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

/**
 * What the request paths of a gateway share: the registry, the way to the port (new connections, and each
 * preview's kept-alive ones), and the access decision.
 */
interface GatewayContext {
  registry: PreviewRegistry;
  connect: PreviewGatewayOptions["connect"];
  upstreamOf(entry: PreviewEntry): PreviewUpstream;
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
  // by entry: a closed preview's upstream goes with it (its connections were closed with the preview)
  const upstreams = new WeakMap<PreviewEntry, PreviewUpstream>();
  const gateway: GatewayContext = {
    registry,
    connect: options.connect,
    upstreamOf(entry) {
      let upstream = upstreams.get(entry);
      if (!upstream) {
        upstream = new PreviewUpstream((signal) => connectTracked(gateway, entry, signal));
        upstreams.set(entry, upstream);
      }
      return upstream;
    },
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
  const exchanged = await exchange(gateway, entry as PreviewEntry, {
    method: request.method,
    url,
    headers: Object.fromEntries(request.headers),
    body: request.body ? Readable.fromWeb(request.body as never) : undefined,
    signal: request.signal,
    event: { base, startedAt },
  });
  if (!("incoming" in exchanged)) return errorResponse(exchanged.status, exchanged.code, exchanged.reason);
  const { incoming, report } = exchanged;
  const init = {
    status: incoming.statusCode ?? 502,
    statusText: incoming.statusMessage ?? "",
    headers: responseHeaders(incoming),
  };
  if (request.method === "HEAD" || init.status === 204 || init.status === 304) {
    incoming.resume();
    report();
    return new Response(null, init);
  }
  const body = Readable.toWeb(incoming) as ReadableStream<Uint8Array>;
  return new Response(body.pipeThrough(new TransformStream({ flush: report })), init);
}

/**
 * A Node request (or upgrade) to preview `id`: its URL, its event's base and the gateway's decision on it, a refusal
 * already reported. (Access is decided on the request's head alone: a body never reaches the identity check.)
 */
async function decideNodeRequest(
  gateway: GatewayContext,
  req: IncomingMessage,
  id: string,
  kind: "http" | "upgrade",
) {
  const startedAt = Date.now();
  const url = nodeRequestUrl(req, gateway.registry.baseUrl);
  const method = req.method ?? "GET";
  const entry = gateway.registry.get(id);
  const base = eventBase(entry, id, method, url, kind);
  const asRequest = () => new Request(url, { method: "GET", headers: toFetchHeaders(req.headers) });
  const decision = await gateway.decide(entry, method, url, req.headers.cookie, asRequest);
  if (!decision.allowed) reportUnconnected(gateway, base, refusal(decision), startedAt);
  return { startedAt, url, method, entry, base, decision };
}

async function handleNodeRequest(
  gateway: GatewayContext,
  req: IncomingMessage,
  res: ServerResponse,
  id: string,
): Promise<void> {
  const { startedAt, url, method, entry, base, decision } = await decideNodeRequest(gateway, req, id, "http");
  if (!decision.allowed) return sendError(res, decision.status, decision.code, decision.reason);
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
  const controller = new AbortController();
  res.once("close", () => controller.abort());
  const exchanged = await exchange(gateway, entry as PreviewEntry, {
    method,
    url,
    headers: req.headers,
    body: hasBody(req) ? req : undefined,
    signal: controller.signal,
    event: { base, startedAt },
  });
  if (!("incoming" in exchanged)) return sendError(res, exchanged.status, exchanged.code, exchanged.reason);
  const { incoming, report, spliced } = exchanged;
  res.once("close", report);
  const headers = responseHeaderPairs(incoming);
  const signal = controller.signal;
  const splicing = spliceResponseBody({ incoming, res, method, headers, signal });
  if (splicing) return spliced(await splicing);
  relayResponse(incoming, res, headers);
}

/**
 * Sends the port's response to the browser: head and body in one write when the whole body has arrived with the head
 * (a small response), else the body piped as it comes.
 */
function relayResponse(incoming: IncomingMessage, res: ServerResponse, headers: [string, string][]): void {
  res.writeHead(incoming.statusCode ?? 502, incoming.statusMessage ?? "", headers.flat());
  if (incoming.complete) {
    // all of it is in the parser's buffer: reading it ends `incoming` (its connection is free for the next request)
    const body = incoming.read() as Buffer | null;
    res.end(body ?? undefined);
    return;
  }
  incoming.pipe(res);
  incoming.once("error", () => res.destroy());
}

async function tunnelUpgrade(
  gateway: GatewayContext,
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  id: string,
): Promise<void> {
  const { startedAt, url, method, entry, base, decision } = await decideNodeRequest(
    gateway,
    req,
    id,
    "upgrade",
  );
  if (!decision.allowed) return refuseUpgrade(socket, decision.status, decision.code, decision.reason);
  const live = entry as PreviewEntry;
  const controller = new AbortController();
  socket.once("close", () => controller.abort());
  const opened = await openTracked(gateway, live, controller.signal, { base, startedAt });
  if (!("connection" in opened)) return refuseUpgrade(socket, opened.status, opened.code, opened.reason);
  const { connection } = opened;
  const up = countData(socket);
  const down = countData(connection);
  const { path } = base;
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

/** A request to a preview's port, from the browser's. */
interface ExchangeOptions {
  method: string;
  /** What the browser asked for. */
  url: URL;
  /** The browser's headers. */
  headers: IncomingHttpHeaders | Record<string, string>;
  body: Readable | undefined;
  /** Ends the exchange (the browser went away). */
  signal: AbortSignal;
  event: { base: ReturnType<typeof eventBase>; startedAt: number };
}

/** The port's response to an {@link exchange}, and how to report the request once the response is over. */
interface Exchanged {
  incoming: IncomingMessage;
  /** Reports the request as served, with the port's status (once; call it when the response is over). */
  report(): void;
  /** The response's body was moved in the kernel (`spliceResponseBody`), `bytes` of it: they count as read. */
  spliced(bytes: number): void;
}

/**
 * Sends a browser's request to the preview's port over its kept-alive connections ({@link PreviewUpstream}) and
 * resolves with the response, its body streaming. A failure is reported as the request's event and returned for
 * the caller to answer with.
 */
async function exchange(
  gateway: GatewayContext,
  live: PreviewEntry,
  options: ExchangeOptions,
): Promise<Exchanged | ConnectFailure> {
  const { base, startedAt } = options.event;
  const up = options.body ? countData(options.body) : () => 0;
  let down = () => 0;
  const event = (status: number, reason?: string) =>
    gateway.registry.report({
      ...base,
      decision: "allowed",
      status,
      ...(reason ? { reason } : {}),
      bytesUp: up(),
      bytesDown: down(),
      durationMs: elapsed(startedAt),
    });
  let incoming: IncomingMessage;
  try {
    incoming = await requestUpstream({
      upstream: gateway.upstreamOf(live),
      method: options.method,
      path: base.path,
      headers: forwardedHeaders(options.headers, live, options.url, false),
      body: options.body,
      signal: options.signal,
      onConnection(connection) {
        const from = upstreamBytesRead(connection);
        down = () => upstreamBytesRead(connection) - from;
      },
    });
  } catch (error) {
    const { cause, connected } = error as UpstreamRequestError;
    if (!connected) return unconnected(gateway, cause, options.event);
    const reason = error instanceof Error ? error.message : String(error);
    event(502, reason);
    return {
      status: 502,
      code: "PREVIEW_UNREACHABLE",
      reason: `the server on port ${live.port} did not answer: ${reason}`,
    };
  }
  // the connection serves the next request once this response is read: its bytes are this request's until then
  incoming.once("end", () => {
    const total = down();
    down = () => total;
  });
  let reported = false;
  return {
    incoming,
    spliced(bytes) {
      const head = down();
      down = () => head + bytes;
    },
    report() {
      if (reported) return;
      reported = true;
      event(incoming.statusCode ?? 502);
    },
  };
}

/** Whether a browser's request has a body (a length other than 0, or chunks). */
function hasBody(req: IncomingMessage): boolean {
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && length !== "0");
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
    return { connection: await connectTracked(gateway, live, signal) };
  } catch (error) {
    return unconnected(gateway, error, event);
  }
}

/** A new connection to the preview's port, tracked: closing the preview ends it. */
async function connectTracked(
  gateway: GatewayContext,
  live: PreviewEntry,
  signal: AbortSignal,
): Promise<Duplex> {
  const connection = await gateway.connect(live, signal);
  gateway.registry.track(live.id, connection);
  return connection;
}

/** Reports a request whose connection to the port failed with `error`, and says how to answer it. */
function unconnected(
  gateway: GatewayContext,
  error: unknown,
  event: { base: ReturnType<typeof eventBase>; startedAt: number },
): ConnectFailure {
  const failure = unreachable(error);
  reportUnconnected(gateway, event.base, failure.event, event.startedAt);
  return { status: failure.event.status, code: failure.code, reason: failure.event.reason };
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
