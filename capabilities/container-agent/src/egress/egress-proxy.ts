import type { CapabilityConnectionEvent } from "@pai/core";
import { canonicalAddress } from "./address-class.ts";
import { type EgressPolicy, formatTarget } from "./egress-policy.ts";
import { type ProxyRequest, parseProxyRequest } from "./parse-proxy-request.ts";

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
   * How the connection reached the host: `socket`, relayed by the agent to this process's egress relay (an
   * engine on this machine; the bytes then move in the kernel), or `tunnel`, in frames over the agent's exec
   * stream.
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

/** What a {@link ProxiedConnection} tells the proxy, each call in order. */
export interface ProxiedConnectionEvents {
  /** The request head (latin1, without its blank line), or `undefined` when 32 KiB came without one. Once. */
  head(head: string | undefined): void;
  /** Bytes moved since the last call: up (program → upstream) and down, the prelude and upstream head included. */
  bytes(up: number, down: number): void;
  /** The upstream's HTTP status, when {@link UpstreamRequest.reportStatus} asked for it. */
  status(status: number): void;
  /** The connection is over (either side hung up, or it was destroyed). Once, last. */
  close(): void;
}

/** Where an allowed connection goes, and what is written before the bytes flow both ways. */
export interface UpstreamRequest {
  /** The addresses the policy allowed, tried in order; each gets the whole timeout. */
  addresses: readonly string[];
  port: number;
  timeoutMs: number;
  /**
   * The most bytes both ways (prelude and upstream head included) the connection may still move: the proxy's
   * budget left. The native relay stops there in the kernel path; either way the proxy closes every connection
   * once its budget is spent.
   */
  maxBytes: number;
  /** Written to the program once connected (`200 Connection established` for a tunnel). */
  prelude: string;
  /** Written to the upstream once connected (a plain-HTTP request's head), before what followed the program's head. */
  upstreamHead: string;
  /** Whether to report the upstream's HTTP status (a plain-HTTP request). */
  reportStatus: boolean;
}

/**
 * One program connection as the proxy drives it, whatever carries its bytes: a stream in this process
 * (`proxiedDuplex`, the tunnel) or a connection the native egress relay holds (the fast channel). The proxy
 * decides; the connection reads the head, writes the answer and moves the bytes.
 */
export interface ProxiedConnection {
  /** Starts reading the request head; `events` then hears of it, of bytes moved, and of the close. Once. */
  start(events: ProxiedConnectionEvents): void;
  /** Writes `answer` to the program and closes once it hangs up (what it still sends is dropped). */
  refuse(answer: string): void;
  /**
   * Connects upstream, then writes the prelude and the upstream head and relays both ways. `done` is called
   * once, before any later event: with the address connected to, or with why none answered (the connection then
   * waits for {@link ProxiedConnection.refuse}); not at all when the connection closes first.
   */
  open(request: UpstreamRequest, done: (outcome: { address: string } | { error: string }) => void): void;
  /** Closes the connection; {@link ProxiedConnectionEvents.close} follows. Idempotent. */
  destroy(): void;
}

/** An HTTP/HTTPS proxy for one container; see {@link createEgressProxy}. */
export interface EgressProxy {
  /** Serves one program connection (from the agent's listener, relayed or tunnelled). */
  handle(connection: ProxiedConnection, options?: EgressHandleOptions): void;
  /** The reason of the latest refusal of `target` (`host:port`), if any: for a program that shows none. */
  refusalFor(target: string): string | undefined;
  /** Connections open now, connections seen, and bytes both ways so far. */
  stats(): { active: number; connections: number; bytes: number };
  /** Closes every connection and refuses new ones (the lease ended). Idempotent. */
  close(): void;
}

/** The longest request head the proxy reads (without its blank line). */
export const MAX_REQUEST_HEAD_BYTES = 32 * 1024;
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

/**
 * The host side of a container's egress: an HTTP/HTTPS proxy for the connections programs make to the agent's
 * loopback listener, whichever way they reach the host (see {@link ProxiedConnection}). It reads one request
 * head: `CONNECT host:port` opens a tunnel (HTTPS and anything else over TCP), an absolute `http://` request is
 * forwarded as one request (`Connection: close`). The policy resolves and decides each target on the host, and
 * the connection goes to an address it allowed — never to a name the container chose. A refusal answers 403 (or
 * 429 at a limit, 400 for a bad request, 502 when upstream does not answer) with a one-line reason in the status
 * line and the body.
 *
 * @example
 * const proxy = createEgressProxy({ policy: parseEgressPolicy(["pypi.org"]), onConnection: console.log });
 * await agent.client.listen({ port: 3128, onConnection: (stream) => proxy.handle(proxiedDuplex(stream)) });
 */
export function createEgressProxy(options: EgressProxyOptions): EgressProxy {
  const maxConnections = options.maxConnections ?? 32;
  const maxBytes = options.maxBytes ?? 1024 ** 3;
  const connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
  const open = new Set<ProxiedConnection>();
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
    for (const connection of [...open]) connection.destroy();
  }

  function handle(connection: ProxiedConnection, handleOptions: EgressHandleOptions = {}): void {
    const { report, channel = "tunnel" } = handleOptions;
    const startedAt = Date.now();
    const started = performance.now();
    const id = ++connections;
    if (closed) {
      connection.destroy();
      return;
    }
    open.add(connection);
    let up = 0;
    let down = 0;
    let event: Omit<EgressConnectionEvent, "bytesUp" | "bytesDown" | "durationMs"> | undefined;

    const answer = (
      status: number,
      reason: string,
      error: string,
      request: Partial<ProxyRequest> & { address?: string },
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
      connection.refuse(refusal(status, reason, error));
    };

    const serve = async (head: string | undefined) => {
      if (head === undefined) {
        return answer(400, "pai egress: request head too large", "http_request_error", {});
      }
      const parsed = parseProxyRequest(head);
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
      if (!open.has(connection)) return; // closed meanwhile (the program hung up, or the proxy closed)
      if (decision.decision === "refused") {
        return answer(403, decision.reason, "destination_ip_prohibited", {
          ...parsed,
          ...(decision.address !== undefined ? { address: decision.address } : {}),
        });
      }
      const tunnel = parsed.upstreamHead === undefined;
      connection.open(
        {
          addresses: decision.addresses,
          port: parsed.target.port,
          timeoutMs: connectTimeoutMs,
          maxBytes: maxBytes - bytes,
          prelude: tunnel ? "HTTP/1.1 200 Connection established\r\n\r\n" : "",
          upstreamHead: parsed.upstreamHead ?? "",
          reportStatus: !tunnel,
        },
        (outcome) => {
          if ("error" in outcome) {
            return answer(
              502,
              `pai egress: ${label} unreachable: ${outcome.error}`,
              "destination_unavailable",
              { ...parsed, address: decision.addresses[0] },
            );
          }
          event = {
            id,
            target: label,
            host: parsed.target.host,
            port: parsed.target.port,
            address: canonicalAddress(outcome.address) ?? outcome.address,
            method: parsed.method,
            decision: "allowed",
            // a tunnel's; a plain request gets the upstream's (status())
            status: 200,
            startedAt,
            channel,
          };
        },
      );
    };

    connection.start({
      head: (head) => void serve(head),
      bytes(moreUp, moreDown) {
        up += moreUp;
        down += moreDown;
        bytes += moreUp + moreDown;
        if (bytes >= maxBytes) closeAll();
      },
      status(status) {
        if (event) event.status = status;
      },
      close() {
        if (!open.delete(connection)) return;
        if (event)
          emit({ ...event, bytesUp: up, bytesDown: down, durationMs: performance.now() - started }, report);
      },
    });
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
