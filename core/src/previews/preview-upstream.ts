import {
  Agent,
  type ClientRequestArgs,
  request as httpRequest,
  type IncomingMessage,
  type OutgoingHttpHeaders,
} from "node:http";
import { Socket } from "node:net";
import type { Duplex, Readable } from "node:stream";

/** Idle connections kept per preview. */
const MAX_IDLE_CONNECTIONS = 8;
/**
 * How long an idle connection is kept: under the 5 s a Node server keeps one (and under a server's own
 * `Keep-Alive: timeout=` hint, which Node's agent honours). An idle connection is a use of the preview's resource,
 * so this is also how much later a sandbox may hibernate after its last preview request.
 */
const IDLE_TIMEOUT_MS = 4_000;

/** Bytes read so far from each connection an upstream opened, for the per-request events. */
const readCounts = new WeakMap<Duplex, { bytes: number }>();

/**
 * The connections to one preview's port, kept alive between requests as a reverse proxy keeps its upstream's:
 * a request takes an idle connection or opens one with `open`. After a response the server did not close, a
 * `net.Socket` waits for the next request (at most {@link MAX_IDLE_CONNECTIONS}, {@link IDLE_TIMEOUT_MS} each);
 * one the server closes or writes to while idle is destroyed (Node's agent guards idle sockets). Another kind of
 * duplex stream serves one request. `open` tracks what it opens: closing the preview destroys idle and busy ones.
 */
export class PreviewUpstream extends Agent {
  readonly #open: (signal: AbortSignal) => Promise<Duplex>;

  constructor(open: (signal: AbortSignal) => Promise<Duplex>) {
    super({ keepAlive: true, maxFreeSockets: MAX_IDLE_CONNECTIONS, scheduling: "lifo" });
    this.#open = open;
  }

  override createConnection(
    options: ClientRequestArgs,
    callback?: (error: Error | null, stream: Duplex) => void,
  ): undefined {
    const signal = (options as UpstreamRequestArgs).connectSignal;
    this.#open(signal).then(
      (connection) => {
        const count = { bytes: 0 };
        readCounts.set(connection, count);
        connection.on("data", (chunk: Uint8Array) => {
          count.bytes += chunk.length;
        });
        callback?.(null, connection);
      },
      (error: unknown) =>
        callback?.(error instanceof Error ? error : new Error(String(error)), undefined as never),
    );
    return undefined;
  }

  override keepSocketAlive(socket: Duplex): boolean {
    // Node's unreferences the socket, sets the server's keep-alive hint as its timeout, and says whether to keep it
    if (!(socket instanceof Socket) || (super.keepSocketAlive(socket) as unknown) === false) return false;
    if (socket.timeout === undefined || socket.timeout === 0 || socket.timeout > IDLE_TIMEOUT_MS)
      socket.setTimeout(IDLE_TIMEOUT_MS);
    return true;
  }

  override reuseSocket(socket: Duplex, request: Parameters<Agent["reuseSocket"]>[1]): void {
    super.reuseSocket(socket, request);
    (socket as Socket).setTimeout(0); // busy: no idle timeout
  }
}

/** The options a request through a {@link PreviewUpstream} is created with. */
interface UpstreamRequestArgs extends ClientRequestArgs {
  /** Aborts opening a connection for the request (a connection already open is the upstream's). */
  connectSignal: AbortSignal;
}

/** One request to a preview's port; see {@link requestUpstream}. */
export interface UpstreamRequest {
  upstream: PreviewUpstream;
  method: string;
  path: string;
  headers: OutgoingHttpHeaders;
  /** The request's body, piped to the port; `undefined` for none (such a request may be sent again). */
  body: Readable | undefined;
  /** Ends the request: while connecting, the exchange, or (after the response) its body. */
  signal: AbortSignal;
  /** Told of the connection the request was written to (once per attempt). */
  onConnection(connection: Duplex): void;
}

/** Why {@link requestUpstream} failed, and whether a connection to the port was reached first. */
export class UpstreamRequestError extends Error {
  readonly connected: boolean;

  constructor(cause: unknown, connected: boolean) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = "UpstreamRequestError";
    this.connected = connected;
  }
}

/**
 * Sends a request to a preview's port and resolves with the port's response head, its body streaming. A request
 * without a body that fails on a kept-alive connection before any response (the server closed the connection as
 * it was reused) is sent again, each time on another connection, until one is fresh. Rejects with an
 * {@link UpstreamRequestError}.
 */
export function requestUpstream(request: UpstreamRequest): Promise<IncomingMessage> {
  return new Promise<IncomingMessage>((resolve, reject) => {
    let connected = false;
    const attempt = () => {
      const options: UpstreamRequestArgs = {
        agent: request.upstream,
        method: request.method,
        path: request.path,
        headers: request.headers,
        connectSignal: request.signal,
      };
      const outgoing = httpRequest(options);
      // Not the request's `signal` option: Node's stream abort machinery costs more than the request's own work.
      const abort = () => outgoing.destroy(request.signal.reason);
      request.signal.addEventListener("abort", abort, { once: true });
      outgoing.once("close", () => request.signal.removeEventListener("abort", abort));
      let responded = false;
      outgoing.once("socket", (connection: Duplex) => {
        connected = true;
        request.onConnection(connection);
      });
      outgoing.on("error", (error) => {
        if (responded) return; // the response's body ends with it (its own error)
        if (outgoing.reusedSocket && !request.body && !request.signal.aborted) return attempt();
        reject(new UpstreamRequestError(error, connected));
      });
      outgoing.once("response", (incoming) => {
        responded = true;
        resolve(incoming);
      });
      if (request.body) request.body.pipe(outgoing);
      else outgoing.end();
    };
    attempt();
  });
}

/** Bytes read so far from a connection a {@link PreviewUpstream} opened. */
export function upstreamBytesRead(connection: Duplex): number {
  return readCounts.get(connection)?.bytes ?? 0;
}
