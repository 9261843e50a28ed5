import type { Duplex, Readable, Writable } from "node:stream";
import {
  AGENT_FRAME_TYPES,
  AGENT_PROTOCOL_VERSION,
  type AgentHello,
  decodeErrorPayload,
  decodeHelloPayload,
  FIRST_STREAM_ID,
  FrameType,
} from "./agent-protocol.ts";
import { ContainerAgentError, protocolError } from "./container-agent-error.ts";
import { deferred } from "./deferred.ts";
import { createFrameDecoder, encodeFrameHeader, type Frame } from "./frame-codec.ts";
import { createRequestTable, type RequestTable } from "./request-table.ts";

/** The byte stream to the agent: a duplex (a socket), or separate ends (a child process's stdout and stdin). */
export type AgentTransport = Duplex | { readable: Readable; writable: Writable };

/** Options of {@link createAgentConnection}. */
export interface AgentConnectionOptions {
  /** See `AgentClientOptions.stream`. */
  stream: AgentTransport;
  /** A frame of a connection the agent accepted on its listener (request ids from `FIRST_STREAM_ID` on). */
  onStreamFrame(frame: Frame): void;
  /** The connection ended: called once, after every request in flight failed and before `onClose`. */
  onEnd(): void;
  /** See `AgentClientOptions.onClose`. */
  onClose?: ((error: ContainerAgentError | undefined) => void) | undefined;
}

/**
 * One connection to a `pai-agent`: the frames both ways, the HELLO that opens it, the requests in flight, and its
 * end. What the requests mean is up to their senders (commands, files, the listener).
 */
export interface AgentConnection {
  /** The agent's HELLO; rejects if the connection fails first or the protocol version differs. */
  readonly hello: Promise<AgentHello>;
  /** True once the connection has ended, by `close()` or by failure. */
  readonly closed: boolean;
  /** Resolves once the connection has ended, by `close()` or by failure. */
  readonly whenClosed: Promise<void>;
  /** The requests waiting for the agent's frames; each fails with the error that ends the connection. */
  readonly requests: RequestTable;
  /** Sends one frame. Throws `SANDBOX_PROTOCOL` once the connection has ended. */
  send(type: number, requestId: number, payload?: Uint8Array): void;
  /** Ends the connection; see `AgentClient.close`. */
  close(): Promise<void>;
}

/** Frames whose payload is a stretch of a byte stream: handed on in pieces as they arrive, never gathered. */
const BYTE_STREAM_FRAME_TYPES: ReadonlySet<number> = new Set([
  FrameType.Stdout,
  FrameType.Stderr,
  FrameType.PipeOut,
  FrameType.StreamDataOut,
]);

/** How long `close()` waits for the agent's output to end before it destroys the stream. */
const CLOSE_WAIT_MS = 2000;

function isTransportPair(stream: AgentTransport): stream is { readable: Readable; writable: Writable } {
  // A Duplex has boolean `readable`/`writable` flags; a pair has stream objects there.
  const candidate = stream as { readable?: unknown };
  return typeof candidate.readable === "object" && candidate.readable !== null;
}

/** The agent's first frame as its HELLO: on request 0, of this client's protocol version. */
function acceptHello(frame: Frame): AgentHello {
  if (frame.type !== FrameType.Hello || frame.requestId !== 0) {
    throw protocolError(`protocol error: expected HELLO first, got type 0x${frame.type.toString(16)}`);
  }
  const info = decodeHelloPayload(frame.payload);
  if (info.protocolVersion !== AGENT_PROTOCOL_VERSION) {
    throw protocolError(
      `the container agent speaks protocol ${info.protocolVersion}, this client ${AGENT_PROTOCOL_VERSION} (agent ${info.version})`,
    );
  }
  return info;
}

/** Writes frames to `writable`, the frames of one tick batched into one write. */
function createFrameWriter(
  writable: Writable,
): (type: number, requestId: number, payload?: Uint8Array) => void {
  let corked = false;
  return (type, requestId, payload) => {
    if (!corked && typeof writable.cork === "function") {
      corked = true;
      writable.cork();
      process.nextTick(() => {
        corked = false;
        writable.uncork();
      });
    }
    writable.write(encodeFrameHeader(type, requestId, payload?.length ?? 0));
    if (payload && payload.length > 0) writable.write(payload);
  };
}

/**
 * Ends the agent's stdin and waits for its output to end (the agent, seeing EOF, exits), draining what it still
 * sends; after {@link CLOSE_WAIT_MS} destroys both ends instead.
 */
async function endTransport(readable: Readable, writable: Writable): Promise<void> {
  const ended = new Promise<void>((resolve) => {
    if (readable.readableEnded || readable.destroyed) resolve();
    readable.once("end", resolve);
    readable.once("close", resolve);
    readable.resume(); // drain what the agent still sends so that it can see EOF and exit
  });
  writable.end();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), CLOSE_WAIT_MS);
  });
  try {
    if (await Promise.race([ended.then(() => false), timedOut])) {
      readable.destroy();
      writable.destroy();
    }
  } finally {
    clearTimeout(timer);
  }
}

/** What a failure while reading the agent's frames ends the connection with. */
function asAgentError(error: unknown): ContainerAgentError {
  return ContainerAgentError.isInstance(error)
    ? error
    : protocolError("invalid agent frame", { cause: error });
}

/**
 * Opens a connection over `options.stream` to a `pai-agent` that has just started. Every frame from the agent is
 * treated as untrusted: sizes are bounded, and a frame that is unknown, malformed or unexpected ends the connection
 * with a `SANDBOX_PROTOCOL` error, with which every request in flight fails.
 */
export function createAgentConnection(options: AgentConnectionOptions): AgentConnection {
  const { readable, writable } = isTransportPair(options.stream)
    ? options.stream
    : { readable: options.stream, writable: options.stream };
  const requests = createRequestTable();
  const hello = deferred<AgentHello>();
  const ended = deferred<void>();
  const write = createFrameWriter(writable);
  let helloReceived = false;
  let closed = false;
  let closedByClient = false;
  let closing: Promise<void> | undefined;

  const decoder = createFrameDecoder({
    onFrame: dispatch,
    frameTypes: AGENT_FRAME_TYPES,
    pieceTypes: BYTE_STREAM_FRAME_TYPES,
  });

  const onData = (chunk: unknown) => {
    if (closed) return;
    try {
      if (!(chunk instanceof Uint8Array))
        throw protocolError("the agent stream must carry bytes, not strings");
      decoder.write(chunk);
    } catch (error) {
      fail(asAgentError(error), true);
    }
  };
  const onEnd = () => {
    if (closed) return;
    try {
      decoder.end();
      fail(protocolError("the container agent closed the connection"), false);
    } catch (error) {
      fail(error as ContainerAgentError, false);
    }
  };
  const onError = (error: unknown) => {
    if (closed) return;
    const message = error instanceof Error ? error.message : String(error);
    fail(protocolError(`the container agent connection failed: ${message}`, { cause: error }), true);
  };
  readable.on("data", onData);
  readable.on("end", onEnd);
  readable.on("close", onEnd);
  readable.on("error", onError);
  writable.on("error", onError);
  writable.on("close", onEnd);

  function send(type: number, requestId: number, payload?: Uint8Array): void {
    if (closed) throw protocolError("the container agent connection is closed");
    write(type, requestId, payload);
  }

  /** Ends the connection; every request in flight fails with `error`. */
  function fail(error: ContainerAgentError, destroy: boolean): void {
    if (closed) return;
    closed = true;
    hello.reject(error);
    for (const request of requests.drain()) request.fail(error);
    options.onEnd();
    if (destroy) {
      readable.destroy();
      writable.destroy();
    }
    ended.resolve();
    options.onClose?.(closedByClient ? undefined : error);
  }

  function dispatch(frame: Frame): void {
    if (!helloReceived) {
      const info = acceptHello(frame);
      helloReceived = true;
      hello.resolve(info);
      return;
    }
    if (frame.requestId === 0) {
      if (frame.type === FrameType.Error) {
        throw protocolError(`the container agent failed: ${decodeErrorPayload(frame.payload).message}`);
      }
      throw protocolError(`protocol error: unexpected frame type 0x${frame.type.toString(16)} on request 0`);
    }
    if (frame.requestId >= FIRST_STREAM_ID) {
      options.onStreamFrame(frame);
      return;
    }
    // absent: a late answer to a request the host gave up (aborted, or exited)
    const request = requests.get(frame.requestId);
    try {
      request?.onFrame(frame);
    } catch (error) {
      // A frame the request cannot take ends the connection; the request fails with it even when it had let go of
      // its id before it threw (a malformed last frame), so no call is left waiting.
      requests.delete(frame.requestId);
      request?.fail(asAgentError(error));
      throw error;
    }
  }

  function close(): Promise<void> {
    if (closing) return closing;
    closedByClient = true;
    closing = (async () => {
      fail(protocolError("the container agent client was closed"), false);
      try {
        await endTransport(readable, writable);
      } finally {
        readable.off("data", onData);
      }
    })();
    return closing;
  }

  return {
    hello: hello.promise,
    get closed() {
      return closed;
    },
    whenClosed: ended.promise,
    requests,
    send,
    close,
  };
}
