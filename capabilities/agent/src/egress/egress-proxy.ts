import { connect, type Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { CapabilityConnectionEvent } from "@pai/core";
import { canonicalAddress } from "./address-class.ts";
import { type EgressPolicy, type EgressTarget, formatTarget } from "./egress-policy.ts";

/** One connection through the egress proxy, reported when it ends (or at once when refused). */
export interface EgressConnectionEvent extends CapabilityConnectionEvent {
  /** Numbers this proxy's connections from 1. */
  id: number;
  host: string;
  port: number;
  /** `CONNECT` for a tunnel (HTTPS), else the method of the one plain-HTTP request forwarded. */
  method: string;
  /** The HTTP status the proxy answered: 200 (tunnel) or the upstream's, 403, 429, 400 or 502. */
  status: number;
  /** Epoch milliseconds. */
  startedAt: number;
  /**
   * How the connection reached the host: `socket`, relayed by the agent to this process's egress socket (an
   * engine on this machine), or `tunnel`, in frames over the agent's exec stream.
   */
  channel: EgressChannelKind;
}

/** See {@link EgressConnectionEvent.channel}. */
export type EgressChannelKind = "socket" | "tunnel";

/** Options of {@link EgressProxy.handle}. */
export interface EgressHandleOptions {
  /** Also gets the connection's event (the runs in flight when it opened). */
  report?: ((event: EgressConnectionEvent) => void) | undefined;
  /** How the connection reached the host. @default "tunnel" */
  channel?: EgressChannelKind | undefined;
}

/** Options of {@link createEgressProxy}. */
export interface EgressProxyOptions {
  policy: EgressPolicy;
  /** Connections open at once; more are refused (429) until one ends. @default 32 */
  maxConnections?: number | undefined;
  /**
   * Bytes both ways over the proxy's life; when spent, open connections are closed and new ones refused.
   * @default 1073741824 (1 GiB)
   */
  maxBytes?: number | undefined;
  /** How long connecting upstream may take. @default 10000 */
  connectTimeoutMs?: number | undefined;
  /** Every connection, when it ends (refused ones at once). A throwing listener is ignored. */
  onConnection?: ((event: EgressConnectionEvent) => void) | undefined;
}

/** An HTTP/HTTPS proxy for one container; see {@link createEgressProxy}. */
export interface EgressProxy {
  /** Serves one client connection (from the agent's listener, relayed or tunnelled). */
  handle(client: Duplex, options?: EgressHandleOptions): void;
  /** The reason of the latest refusal of `target` (`host:port`), if any: for a program that shows none. */
  refusalFor(target: string): string | undefined;
  /** Connections open now, connections seen, and bytes both ways so far. */
  stats(): { active: number; connections: number; bytes: number };
  /** Closes every connection and refuses new ones (the lease ended). Idempotent. */
  close(): void;
}

const MAX_HEAD_BYTES = 32 * 1024;
const HOP_BY_HOP = new Set([
  "connection",
  "proxy-connection",
  "proxy-authorization",
  "keep-alive",
  "te",
  "trailer",
  "upgrade",
]);

function statusLine(status: number, reason: string): string {
  return `HTTP/1.1 ${status} ${reason.replace(/[\r\n]+/g, " ")}\r\n`;
}

/** A refusal the program sees: the one-line reason in the status line, a Proxy-Status header and the body. */
function refusal(status: number, reason: string, error: string): string {
  const body = `${reason}\n`;
  return (
    statusLine(status, reason) +
    "Content-Type: text/plain; charset=utf-8\r\n" +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    `Proxy-Status: pai; error=${error}; details=${JSON.stringify(reason)}\r\n` +
    "Connection: close\r\n\r\n" +
    body
  );
}

/** `host:port` of a CONNECT request (IPv6 in brackets); `undefined` when malformed. */
function parseAuthority(authority: string): EgressTarget | undefined {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(authority);
  if (!match) return undefined;
  const host = match[1]!.startsWith("[") ? match[1]!.slice(1, -1) : match[1]!;
  return { host, port: Number(match[2]) };
}

interface Request {
  method: string;
  target: EgressTarget;
  /** For a plain-HTTP request, the head to send upstream (origin-form, `Connection: close`). */
  upstreamHead?: string;
}

function parseHead(head: string): Request | { error: string } {
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

/** Bytes read from an upstream connection at once, into one buffer reused for its life. */
const UPSTREAM_READ_BYTES = 1024 * 1024;

/** A connected upstream socket; its bytes go nowhere until {@link Upstream.forwardTo}. */
interface Upstream {
  socket: Socket;
  address: string;
  /**
   * Writes what the upstream sends to `client` from now on (what came before first), each chunk seen by
   * `onChunk` first. Bytes are read into one reused buffer and the next read waits until `client` took the
   * chunk: no allocation per chunk, a quarter of the CPU of `pipe` on a bulk download.
   */
  forwardTo(client: Duplex, onChunk: (chunk: Buffer) => void): void;
}

/** Connects to the first of `addresses` that answers within the deadline. */
async function connectFirst(
  addresses: readonly string[],
  port: number,
  timeoutMs: number,
): Promise<Upstream | { error: string }> {
  let lastError = "no address";
  for (const address of addresses) {
    let deliver: ((chunk: Buffer) => boolean) | undefined;
    const early: Buffer[] = [];
    const socket = connect({
      host: address,
      port,
      noDelay: true,
      onread: {
        buffer: Buffer.allocUnsafe(UPSTREAM_READ_BYTES), // a function would be called for every read
        callback: (length: number, buffer: Uint8Array) => {
          const chunk = Buffer.from(buffer.buffer, buffer.byteOffset, length);
          if (deliver) return deliver(chunk);
          early.push(Buffer.from(chunk)); // the buffer is reused: keep a copy until there is a client
          return false;
        },
      },
    });
    const outcome = await new Promise<Socket | string>((resolve) => {
      const timer = setTimeout(() => {
        socket.destroy();
        resolve("ETIMEDOUT");
      }, timeoutMs);
      socket.once("connect", () => {
        clearTimeout(timer);
        socket.removeAllListeners("error");
        resolve(socket);
      });
      socket.once("error", (error: NodeJS.ErrnoException) => {
        clearTimeout(timer);
        resolve(error.code ?? error.message);
      });
    });
    if (typeof outcome === "string") {
      lastError = outcome;
      continue;
    }
    return {
      socket,
      address,
      forwardTo(client, onChunk) {
        const resume = () => socket.resume();
        deliver = (chunk) => {
          onChunk(chunk);
          // Read again once the client has taken this chunk (the buffer is then free to reuse).
          client.write(chunk, resume);
          return false;
        };
        for (const chunk of early.splice(0)) {
          onChunk(chunk);
          client.write(chunk);
        }
        socket.resume();
      },
    };
  }
  return { error: lastError };
}

/**
 * The host side of a container's egress: an HTTP/HTTPS proxy served over the agent's connection (each
 * connection a program makes to the agent's loopback listener arrives here as a stream). It reads one request
 * head: `CONNECT host:port` opens a tunnel (HTTPS and anything else over TCP), an absolute `http://` request is
 * forwarded as one request (`Connection: close`). The policy resolves and decides each target on the host, and
 * the proxy connects to the address it allowed — never to a name the container chose. A refusal answers 403 (or
 * 429 at a limit, 502 when upstream does not answer) with a one-line reason in the status line and the body.
 *
 * @example
 * const proxy = createEgressProxy({ policy: parseEgressPolicy(["pypi.org"]), onConnection: console.log });
 * await agent.client.listen({ port: 3128, onConnection: (stream) => proxy.handle(stream) });
 */
export function createEgressProxy(options: EgressProxyOptions): EgressProxy {
  const maxConnections = options.maxConnections ?? 32;
  const maxBytes = options.maxBytes ?? 1024 ** 3;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const open = new Set<{ client: Duplex; upstream?: Socket }>();
  let connections = 0;
  let bytes = 0;
  let closed = false;
  /** Latest refusal per target, most recent last (bounded). */
  const refusals = new Map<string, string>();

  function emit(event: EgressConnectionEvent, report: ((event: EgressConnectionEvent) => void) | undefined) {
    for (const listener of [options.onConnection, report]) {
      try {
        listener?.(event);
      } catch {
        // a listener must not break the proxy
      }
    }
  }

  /** Closes every open connection (the budget is spent, or the proxy closes). */
  function closeAll(): void {
    for (const entry of [...open]) {
      entry.upstream?.destroy();
      entry.client.destroy();
    }
  }

  function handle(client: Duplex, handleOptions: EgressHandleOptions = {}): void {
    const { report, channel = "tunnel" } = handleOptions;
    const startedAt = Date.now();
    const started = performance.now();
    const id = ++connections;
    client.on("error", () => {});
    if (closed) {
      client.destroy();
      return;
    }
    const entry: { client: Duplex; upstream?: Socket } = { client };
    open.add(entry);
    let head = Buffer.alloc(0);
    let up = 0;
    let down = 0;
    let event: Omit<EgressConnectionEvent, "bytesUp" | "bytesDown" | "durationMs"> | undefined;

    const finish = () => {
      if (!open.delete(entry)) return;
      entry.upstream?.destroy();
      client.destroy();
      if (event)
        emit({ ...event, bytesUp: up, bytesDown: down, durationMs: performance.now() - started }, report);
    };
    client.once("close", finish);

    const answer = (
      status: number,
      reason: string,
      error: string,
      request: Partial<Request> & { address?: string },
    ) => {
      const target = request.target;
      if (target) {
        const label = formatTarget(target);
        refusals.delete(label);
        refusals.set(label, reason);
        if (refusals.size > 64) refusals.delete(refusals.keys().next().value as string);
      }
      event = {
        id,
        target: target ? formatTarget(target) : "",
        host: target?.host ?? "",
        port: target?.port ?? 0,
        method: request.method ?? "",
        decision: "refused",
        reason,
        status,
        startedAt,
        channel,
        ...(request.address !== undefined ? { address: request.address } : {}),
      };
      client.end(refusal(status, reason, error));
      // Whatever else the program sends is dropped, so the connection can close once it hangs up.
      client.resume();
    };

    const onHead = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf("\r\n\r\n");
      if (end < 0) {
        if (head.length > MAX_HEAD_BYTES) {
          client.off("data", onHead);
          answer(400, "pai egress: request head too large", "http_request_error", {});
        }
        return;
      }
      client.off("data", onHead);
      client.pause();
      const rest = head.subarray(end + 4);
      void serve(head.subarray(0, end).toString("latin1"), rest);
    };
    client.on("data", onHead);

    const serve = async (text: string, rest: Buffer) => {
      const parsed = parseHead(text);
      if ("error" in parsed) return answer(400, parsed.error, "http_request_error", {});
      const label = formatTarget(parsed.target);
      if (open.size > maxConnections) {
        return answer(
          429,
          `pai egress: ${label} refused: ${maxConnections} connections are open, the limit`,
          "connection_limit_reached",
          parsed,
        );
      }
      if (bytes >= maxBytes) {
        return answer(
          429,
          `pai egress: ${label} refused: the sandbox's ${maxBytes} bytes of traffic are spent`,
          "connection_limit_reached",
          parsed,
        );
      }
      const decision = await options.policy.decide(parsed.target);
      if (closed || client.destroyed) return finish();
      if (decision.decision === "refused") {
        return answer(403, decision.reason, "destination_ip_prohibited", {
          ...parsed,
          ...(decision.address !== undefined ? { address: decision.address } : {}),
        });
      }
      const connected = await connectFirst(decision.addresses, parsed.target.port, connectTimeoutMs);
      if ("error" in connected) {
        return answer(
          502,
          `pai egress: ${label} unreachable: ${connected.error}`,
          "destination_unavailable",
          { ...parsed, address: decision.addresses[0] },
        );
      }
      const { socket: upstream, address } = connected;
      if (closed || client.destroyed) {
        upstream.destroy();
        return finish();
      }
      entry.upstream = upstream;
      event = {
        id,
        target: label,
        host: parsed.target.host,
        port: parsed.target.port,
        address: canonicalAddress(address) ?? address,
        method: parsed.method,
        decision: "allowed",
        status: 200,
        startedAt,
        channel,
      };
      const count = (direction: "up" | "down") => (chunk: Buffer) => {
        if (direction === "up") up += chunk.length;
        else down += chunk.length;
        bytes += chunk.length;
        if (bytes >= maxBytes) closeAll();
      };
      upstream.on("error", () => client.destroy());
      upstream.once("close", () => {
        // What the upstream sent is delivered, then the program sees the end; what it still sends is dropped.
        if (!client.writableEnded) client.end();
        client.resume();
      });
      client.on("data", count("up"));
      const countDown = count("down");
      let onChunk = countDown;
      if (parsed.upstreamHead !== undefined) {
        const forwarded = Buffer.from(parsed.upstreamHead, "latin1");
        up += forwarded.length;
        bytes += forwarded.length;
        upstream.write(forwarded);
        // The upstream's status (in its first chunk) is what the program gets.
        onChunk = (chunk) => {
          const status = /^HTTP\/1\.[01] (\d{3})/.exec(chunk.subarray(0, 16).toString("latin1"));
          if (status && event) event.status = Number(status[1]);
          onChunk = countDown;
          countDown(chunk);
        };
      } else {
        const established = "HTTP/1.1 200 Connection established\r\n\r\n";
        down += established.length;
        client.write(established);
      }
      connected.forwardTo(client, (chunk) => onChunk(chunk));
      if (rest.length > 0) {
        up += rest.length;
        bytes += rest.length;
        upstream.write(rest);
      }
      client.pipe(upstream);
    };
  }

  return {
    handle,
    refusalFor: (target) => refusals.get(target),
    stats: () => ({ active: open.size, connections, bytes }),
    close() {
      if (closed) return;
      closed = true;
      closeAll();
    },
  };
}
