import type { IncomingMessage, ServerResponse } from "node:http";
import { Socket } from "node:net";
import { type SpliceBytes, spliceOf } from "./splice-bytes.ts";

/**
 * The smallest body left to move that is handed to the kernel: below it, starting the helper costs more than
 * copying the bytes through Node.
 */
const SPLICE_MIN_BYTES = 8 * 1024 * 1024;

/** The parts of a Node socket the handover stops: its libuv handle's reading. */
interface ReadingHandle {
  reading?: boolean;
  readStop?: () => number;
}

/**
 * The body a response from a port still has to send and how to splice it, when it can be moved in the kernel
 * ({@link spliceResponseBody}): a `content-length` body, no transfer coding, to a plain socket (not TLS), large enough,
 * over a connection that can splice. `undefined` otherwise.
 */
function spliceableBody(
  incoming: IncomingMessage,
  res: ServerResponse,
  method: string,
): { length: number; splice: SpliceBytes } | undefined {
  const splice = incoming.socket ? spliceOf(incoming.socket) : undefined;
  const destination = res.socket;
  if (!splice || !(destination instanceof Socket) || "encrypted" in destination) return undefined;
  if (method === "HEAD" || incoming.headers["transfer-encoding"] !== undefined) return undefined;
  const status = incoming.statusCode ?? 0;
  if (status < 200 || status === 204 || status === 304) return undefined;
  const length = Number(incoming.headers["content-length"]);
  const large = Number.isSafeInteger(length) && length - incoming.readableLength >= SPLICE_MIN_BYTES;
  return large ? { length, splice } : undefined;
}

/**
 * Sends `incoming`'s body to the browser's connection in the kernel instead of through Node, when it can be
 * ({@link spliceableBody}); the response head must not have been written yet, and nothing must have read `incoming`.
 * Resolves to the bytes moved in the kernel (the ones Node had read already are not counted); returns `undefined` at
 * once — without touching anything — when the body is not one to splice (the caller then sends it).
 *
 * The port's connection stops being read by Node; the body bytes Node's parser already took are written first, then
 * the rest is spliced (`SpliceBytes`). The connection is closed afterwards (its HTTP parser is behind it now), so it
 * serves no further request; the browser's connection goes on (`res` ends normally, its framing is the length). If
 * the splice falls short, the browser's connection is destroyed so the short body cannot be taken for a whole one.
 */
export function spliceResponseBody(options: {
  incoming: IncomingMessage;
  res: ServerResponse;
  method: string;
  headers: readonly [string, string][];
  signal: AbortSignal;
}): Promise<number> | undefined {
  const body = spliceableBody(options.incoming, options.res, options.method);
  return body ? spliceBody(options, body) : undefined;
}

async function spliceBody(
  options: {
    incoming: IncomingMessage;
    res: ServerResponse;
    headers: readonly [string, string][];
    signal: AbortSignal;
  },
  { length, splice }: { length: number; splice: SpliceBytes },
): Promise<number> {
  const { incoming, res, signal } = options;
  const connection = incoming.socket as Socket;

  stopReading(connection, incoming);
  const taken: Buffer[] = [];
  for (let chunk = incoming.read() as Buffer | null; chunk !== null; chunk = incoming.read() as Buffer | null)
    taken.push(chunk);
  const already = taken.reduce((sum, chunk) => sum + chunk.length, 0);
  // The port's connection ends with this body: what the parser and the agent make of its end is not the browser's.
  incoming.on("error", () => {});

  res.writeHead(incoming.statusCode ?? 502, incoming.statusMessage ?? "", options.headers.flat());
  await writeFlushed(res, Buffer.concat(taken));
  const rest = length - already;
  const { moved, complete } = signal.aborted
    ? { moved: 0, complete: false }
    : await splice(res.socket as Socket, rest, signal);
  connection.destroy();
  if (complete) res.end();
  else res.destroy();
  return moved;
}

/**
 * Makes Node stop reading `connection` now (a plain `pause()` lets it read up to a buffer's worth more) and stops
 * `incoming` from asking it to read again: what is not read yet stays in the kernel for the splice.
 */
function stopReading(connection: Socket, incoming: IncomingMessage): void {
  connection.pause();
  const handle = (connection as unknown as { _handle?: ReadingHandle })._handle;
  if (handle?.reading) {
    handle.reading = false;
    handle.readStop?.();
  }
  incoming._read = () => {};
  connection._read = () => {};
}

/**
 * Sends the response head and `bytes` (perhaps none), and resolves once the browser's socket has handed all it was
 * given to the kernel: a socket's writes complete in order, so an empty write's callback comes after theirs.
 */
async function writeFlushed(res: ServerResponse, bytes: Buffer): Promise<void> {
  res.flushHeaders();
  if (bytes.length > 0) res.write(bytes);
  const socket = res.socket as Socket;
  await new Promise<void>((resolve) => socket.write(Buffer.alloc(0), () => resolve()));
}
