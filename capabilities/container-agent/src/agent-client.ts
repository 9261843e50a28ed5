import type { Duplex, Readable, Writable } from "node:stream";
import {
  AGENT_FRAME_TYPES,
  AGENT_PROTOCOL_VERSION,
  type AgentHello,
  type AgentSignal,
  decodeErrorPayload,
  decodeExitPayload,
  decodeHelloPayload,
  decodeListeningPayload,
  decodeU32Payload,
  encodeListenPayload,
  encodeReadFilePayload,
  encodeSignalPayload,
  encodeSpawnPayload,
  encodeWriteFilePayload,
  errnoName,
  FIRST_STREAM_ID,
  FrameType,
  LINUX_SIGNALS,
  MAX_FRAME_PAYLOAD_BYTES,
  signalNumber,
} from "./agent-protocol.ts";
import { AgentStream } from "./agent-stream.ts";
import { ContainerAgentError, protocolError } from "./container-agent-error.ts";
import { createFrameDecoder, encodeFrameHeader, type Frame } from "./frame-codec.ts";
import { createOutputCollector, type OutputCollector } from "./output-collector.ts";

/** The byte stream to the agent: a duplex (a socket), or separate ends (a child process's stdout and stdin). */
export type AgentTransport = Duplex | { readable: Readable; writable: Writable };

/** Options of {@link createAgentClient}. */
export interface AgentClientOptions {
  /**
   * The connection to a running `pai-agent`: what it writes to its stdout must arrive on the readable side
   * unchanged (demultiplex a Docker exec stream first), and the writable side must reach its stdin.
   */
  stream: AgentTransport;
  /**
   * Called once when the connection ends: with `undefined` after {@link AgentClient.close}, else with the
   * `SANDBOX_PROTOCOL` error that ended it (the agent exited, the stream broke, the agent sent garbage).
   */
  onClose?: ((error: ContainerAgentError | undefined) => void) | undefined;
  /**
   * Stdin bytes per command that may be in flight, sent but not yet taken by the command. Bounds the
   * agent's memory when a command reads its stdin slowly.
   * @default 262144
   */
  stdinWindowBytes?: number | undefined;
}

/** Why a command ended. A caller's own `kill()` of a running command counts as `abort`. */
export type TerminationReason = "exit" | "timeout" | "abort" | "output-limit";

/** Options of {@link AgentClient.spawn}. */
export interface AgentSpawnOptions {
  /** Program and arguments, e.g. `['sh', '-c', 'echo hi']`; the program is looked up in `PATH`. */
  argv: readonly string[];
  /** Working directory. @default the agent's working directory */
  cwd?: string | undefined;
  /** Environment variables, merged over the agent's own unless `inheritEnv` is false. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Start from the agent's environment. @default true */
  inheritEnv?: boolean | undefined;
  /** User to run as (needs a root agent unless it is the agent's own). @default the agent's default user */
  uid?: number | undefined;
  /** Group to run as. @default the agent's default group */
  gid?: number | undefined;
  /**
   * Stdin: bytes or text to send and then close, or `'pipe'` to keep it open for
   * {@link AgentProcess.writeStdin}. @default nothing (the command reads EOF)
   */
  stdin?: Uint8Array | string | "pipe" | undefined;
  /** Every stdout chunk as it arrives, uncapped. Throwing here kills the command and fails `wait()`. */
  onStdout?: ((chunk: Uint8Array) => void) | undefined;
  /** Every stderr chunk as it arrives, uncapped. Throwing here kills the command and fails `wait()`. */
  onStderr?: ((chunk: Uint8Array) => void) | undefined;
  /** Aborting kills the command's process group (TERM, then KILL); the result says `abort`. */
  signal?: AbortSignal | undefined;
  /** Kill the process group after this long (TERM, then KILL); the result says `timeout`. @default none */
  timeoutMs?: number | undefined;
  /**
   * Bytes kept per stream in the result: the first half and the last half, the middle dropped, with
   * `truncated` set. Callbacks still see everything.
   * @default 1048576
   */
  maxOutputBytes?: number | undefined;
  /**
   * What to do when a stream outgrows `maxOutputBytes`: keep the command running and drop the middle
   * (`'truncate'`), or kill it and report `output-limit` (`'kill'`).
   * @default 'truncate'
   */
  onOutputLimit?: "truncate" | "kill" | undefined;
  /** Grace between TERM and KILL when a timeout, abort or output limit stops the command. @default 2000 */
  forceKillAfterMs?: number | undefined;
  /**
   * SIGKILL what is left of the command's process group once the command itself has exited (what it put in
   * the background), so nothing outlives it. Processes that made their own session escape.
   * @default false
   */
  killGroupOnExit?: boolean | undefined;
  /**
   * Gives the command fd 3 and fd 4 (Chromium's `--remote-debugging-pipe`): what it writes to fd 4 arrives
   * here, and {@link AgentProcess.writePipe} reaches its fd 3. Absent: the command gets neither.
   */
  onPipe?: ((chunk: Uint8Array) => void) | undefined;
}

/** How a command ended, with its (capped) output. */
export interface AgentProcessResult {
  /** Exit code, or null when a signal ended it. */
  exitCode: number | null;
  /** Signal number (Linux numbering, e.g. 9 for SIGKILL), or null when it exited. */
  signal: number | null;
  /** Kept stdout bytes (head then tail when truncated). */
  stdout: Uint8Array;
  /** Kept stderr bytes (head then tail when truncated). */
  stderr: Uint8Array;
  /** Whether a stream outgrew `maxOutputBytes` and lost its middle. */
  truncated: { stdout: boolean; stderr: boolean };
  /** Bytes dropped from the middle of each stream (at offset `ceil(maxOutputBytes / 2)`). */
  omittedBytes: { stdout: number; stderr: number };
  /** From the spawn request to the exit report, measured on the host. */
  durationMs: number;
  /** Why it ended: by itself (`exit`), or stopped by a timeout, an abort/kill or the output limit. */
  terminationReason: TerminationReason;
}

/** A command running through the agent. */
export interface AgentProcess {
  /** The command's pid inside the container; rejects when it could not be started. */
  readonly pid: Promise<number>;
  /** Resolves when the command ends (a non-zero exit is a value); rejects when it could not be started. */
  wait(): Promise<AgentProcessResult>;
  /**
   * Sends a signal to the command's whole process group. A terminating signal (SIGTERM, SIGINT, SIGHUP,
   * SIGQUIT) is followed by SIGKILL after `forceKillAfterMs` if the command is still running, and the result
   * then says `abort`.
   * @default signal 'SIGTERM', forceKillAfterMs 2000
   */
  kill(signal?: AgentSignal, options?: { forceKillAfterMs?: number | undefined }): void;
  /**
   * Sends bytes to the command's stdin (needs `stdin: 'pipe'`). Resolves once they are handed to the
   * connection, waiting while the command has not taken earlier input (see `stdinWindowBytes`); bytes for
   * a command that has exited are dropped.
   */
  writeStdin(data: Uint8Array | string): Promise<void>;
  /** Closes the command's stdin after what was written. */
  closeStdin(): Promise<void>;
  /**
   * Sends bytes to the command's fd 3 (needs `onPipe`), flow-controlled like stdin; bytes for a command that has
   * exited are dropped.
   */
  writePipe(data: Uint8Array | string): Promise<void>;
}

/** Options of {@link AgentClient.readFile}. */
export interface AgentReadFileOptions {
  /**
   * The directory the read is confined to: `path` is resolved inside the container (symlinks followed) and
   * refused with `SANDBOX_FILE_FAILED` `EXDEV` (the resolved path as the message) when it leaves `root`.
   */
  root: string;
  /** Largest file accepted; a larger one fails with `SANDBOX_FILE_FAILED`. @default 1048576 (the maximum) */
  maxBytes?: number | undefined;
  /** Read as this user. @default the agent's default user */
  uid?: number | undefined;
  /** Read as this group. @default the agent's default group */
  gid?: number | undefined;
  /** Stops waiting for the answer. */
  signal?: AbortSignal | undefined;
}

/** Options of {@link AgentClient.writeFile}. */
export interface AgentWriteFileOptions {
  /**
   * The directory the write is confined to, as for reads. The file is written by its name in its parent (a
   * symlink there is replaced; a directory is refused with `EISDIR`); missing parents are created.
   */
  root: string;
  /** Permission bits, applied even when the file exists. @default 0o644 for a new file, unchanged otherwise */
  mode?: number | undefined;
  /** Only check where the file would go (outside `root`, a directory): nothing is written. */
  checkOnly?: boolean | undefined;
  /** Write as this user (it owns new files and directories). @default the agent's default user */
  uid?: number | undefined;
  /** Write as this group. @default the agent's default group */
  gid?: number | undefined;
  /** Stops waiting for the answer. */
  signal?: AbortSignal | undefined;
}

/** A connection to one `pai-agent`; see {@link createAgentClient}. */
export interface AgentClient {
  /** The agent's HELLO; rejects if the connection fails first or the protocol version differs. */
  readonly hello: Promise<AgentHello>;
  /** True once the connection has ended, by `close()` or by failure. */
  readonly closed: boolean;
  /** Resolves once the connection has ended, by `close()` or by failure. */
  readonly whenClosed: Promise<void>;
  /** Starts a command. Throws `INVALID_ARGUMENT` synchronously when the request cannot be encoded. */
  spawn(options: AgentSpawnOptions): AgentProcess;
  /** A small file's bytes, or null when it (or a parent directory) does not exist. */
  readFile(path: string, options: AgentReadFileOptions): Promise<Uint8Array | null>;
  /** Writes a small file (at most about 1 MiB), creating parent directories. */
  writeFile(path: string, content: Uint8Array | string, options: AgentWriteFileOptions): Promise<void>;
  /** Round trip through the agent, in milliseconds. */
  ping(options?: { signal?: AbortSignal | undefined }): Promise<number>;
  /**
   * Makes the agent listen on the container's `127.0.0.1:port` (0: a port the kernel picks; one listener per
   * agent) and hands every connection a program makes there to `onConnection` as an {@link AgentStream}.
   * With `hostSocket` (a unix socket of this host the container mounts; see `prepareEgressChannel`) the agent
   * relays each connection there instead, after the line `PAI-EGRESS/1 <token>`, and tunnels it to
   * `onConnection` only when that socket cannot be reached. Resolves to the port.
   */
  listen(options: {
    port: number;
    onConnection: (stream: AgentStream) => void;
    hostSocket?: { path: string; token: string } | undefined;
    signal?: AbortSignal | undefined;
  }): Promise<number>;
  /**
   * Ends the connection: every request in flight rejects with `SANDBOX_PROTOCOL`, and the agent, seeing its
   * stdin end, kills every command it started and exits. Resolves when its output has ended (at most ~2 s).
   */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** The output kept per stream when `maxOutputBytes` is not given. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const DEFAULT_FORCE_KILL_AFTER_MS = 2000;
const DEFAULT_STDIN_WINDOW_BYTES = 256 * 1024;
const STDIN_CHUNK_BYTES = 64 * 1024;
const CLOSE_WAIT_MS = 2000;
const TERMINATING = new Set<number>([
  LINUX_SIGNALS.SIGTERM,
  LINUX_SIGNALS.SIGINT,
  LINUX_SIGNALS.SIGHUP,
  LINUX_SIGNALS.SIGQUIT,
  LINUX_SIGNALS.SIGKILL,
]);

const textEncoder = new TextEncoder();
const noop = () => {};

interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

function deferred<T>(): Deferred<T> {
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  promise.catch(noop); // the caller may never look; rejection then must not crash the process
  return { promise, resolve, reject };
}

interface StdinItem {
  data: Uint8Array | undefined; // undefined: end of stdin
  done: (() => void) | undefined;
  fail: ((error: unknown) => void) | undefined;
}

/** Bytes on their way to one of a command's inputs (stdin or fd 3), flow-controlled by acknowledgements. */
interface InputChannel {
  frame: number;
  unacked: number;
  queue: StdinItem[];
}

interface ProcessState {
  id: number;
  argv0: string;
  startedAt: number;
  stdout: OutputCollector;
  stderr: OutputCollector;
  options: AgentSpawnOptions;
  pid: Deferred<number>;
  result: Deferred<AgentProcessResult>;
  spawned: boolean;
  done: boolean;
  reason: TerminationReason | undefined;
  callbackError: { error: unknown } | undefined;
  stdinPipe: boolean;
  stdinEnded: boolean;
  stdin: InputChannel;
  pipe: InputChannel;
  forceKillTimer: ReturnType<typeof setTimeout> | undefined;
  timeoutTimer: ReturnType<typeof setTimeout> | undefined;
  removeAbortListener: () => void;
}

type PendingRequest =
  | { kind: "process"; state: ProcessState }
  | { kind: "call"; onFrame(frame: Frame): void; fail(error: unknown): void };

function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === "string" ? textEncoder.encode(data) : data;
}

function isTransportPair(stream: AgentTransport): stream is { readable: Readable; writable: Writable } {
  // A Duplex has boolean `readable`/`writable` flags; a pair has stream objects there.
  const candidate = stream as { readable?: unknown };
  return typeof candidate.readable === "object" && candidate.readable !== null;
}

function agentError(
  code: "SANDBOX_SPAWN_FAILED" | "SANDBOX_FILE_FAILED",
  payload: Uint8Array,
  details: object,
) {
  const { errno, message } = decodeErrorPayload(payload);
  return new ContainerAgentError(code, message, {
    details: { ...details, errno, errnoName: errnoName(errno) },
  });
}

/**
 * Connects to a running `pai-agent` over its stdin/stdout and runs commands and small file operations
 * through it, many at once.
 *
 * Every frame from the agent is treated as untrusted: sizes are bounded, unknown or malformed frames end
 * the connection with a `SANDBOX_PROTOCOL` error, and every request in flight rejects with it.
 *
 * @example
 * ```ts
 * const binary = await findPrebuiltBinary({ program: "pai-agent", architecture: process.arch });
 * const child = spawn(binary, [], { stdio: ["pipe", "pipe", "inherit"] });
 * const agent = createAgentClient({ stream: { readable: child.stdout, writable: child.stdin } });
 * const result = await agent.spawn({ argv: ["sh", "-c", "echo hi"], timeoutMs: 5_000 }).wait();
 * new TextDecoder().decode(result.stdout); // "hi\n"
 * await agent.close();
 * ```
 */
export function createAgentClient(options: AgentClientOptions): AgentClient {
  const { readable, writable } = isTransportPair(options.stream)
    ? options.stream
    : { readable: options.stream, writable: options.stream };
  const stdinWindowBytes = options.stdinWindowBytes ?? DEFAULT_STDIN_WINDOW_BYTES;
  const requests = new Map<number, PendingRequest>();
  const hello = deferred<AgentHello>();
  let helloReceived = false;
  let closed = false;
  const ended = deferred<void>();
  let closing: Promise<void> | undefined;
  let closedByClient = false;
  let lastRequestId = 0;
  let corked = false;
  /** The connections the agent accepted on its listener, by id. */
  const streams = new Map<number, AgentStream>();
  let onConnection: ((stream: AgentStream) => void) | undefined;

  // ----------------------------------------------------------------- connection

  const decoder = createFrameDecoder({ onFrame: dispatch, frameTypes: AGENT_FRAME_TYPES });

  const onData = (chunk: unknown) => {
    if (closed) return;
    try {
      if (!(chunk instanceof Uint8Array))
        throw protocolError("the agent stream must carry bytes, not strings");
      decoder.write(chunk);
    } catch (error) {
      fail(
        ContainerAgentError.isInstance(error)
          ? error
          : protocolError("invalid agent frame", { cause: error }),
        true,
      );
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
    if (!corked && typeof writable.cork === "function") {
      // Batch the frames of one tick into one write.
      corked = true;
      writable.cork();
      process.nextTick(() => {
        corked = false;
        writable.uncork();
      });
    }
    writable.write(encodeFrameHeader(type, requestId, payload?.length ?? 0));
    if (payload && payload.length > 0) writable.write(payload);
  }

  function nextRequestId(): number {
    do lastRequestId = lastRequestId >= FIRST_STREAM_ID - 1 ? 1 : lastRequestId + 1;
    while (requests.has(lastRequestId));
    return lastRequestId;
  }

  /** Ends the connection; every request in flight fails with `error`. */
  function fail(error: ContainerAgentError, destroy: boolean): void {
    if (closed) return;
    closed = true;
    hello.reject(error);
    const pending = [...requests.values()];
    requests.clear();
    for (const request of pending) {
      if (request.kind === "call") request.fail(error);
      else failProcess(request.state, error);
    }
    const open = [...streams.values()];
    streams.clear();
    for (const stream of open) stream.closedByAgent();
    if (destroy) {
      readable.destroy();
      writable.destroy();
    }
    ended.resolve();
    options.onClose?.(closedByClient ? undefined : error);
  }

  function dispatch(frame: Frame): void {
    if (!helloReceived) {
      if (frame.type !== FrameType.Hello || frame.requestId !== 0) {
        throw protocolError(`protocol error: expected HELLO first, got type 0x${frame.type.toString(16)}`);
      }
      const info = decodeHelloPayload(frame.payload);
      if (info.protocolVersion !== AGENT_PROTOCOL_VERSION) {
        throw protocolError(
          `the container agent speaks protocol ${info.protocolVersion}, this client ${AGENT_PROTOCOL_VERSION} (agent ${info.version})`,
        );
      }
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
      onStreamFrame(frame);
      return;
    }
    const request = requests.get(frame.requestId);
    if (!request) return; // a late answer to a request the host gave up (aborted, or exited)
    if (request.kind === "call") request.onFrame(frame);
    else onProcessFrame(request.state, frame);
  }

  /**
   * Sends one request and settles with `onReply(answer)`. `onReply` throwing a `SANDBOX_PROTOCOL` error ends
   * the connection; any other error rejects this request only.
   */
  function call<T>(
    type: number,
    payload: Uint8Array,
    signal: AbortSignal | undefined,
    onReply: (frame: Frame) => T,
  ): Promise<T> {
    if (closed) return Promise.reject(protocolError("the container agent connection is closed"));
    if (signal?.aborted) return Promise.reject(signal.reason);
    const id = nextRequestId();
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => {
        requests.delete(id);
        reject(signal?.reason);
      };
      const cleanup = () => {
        requests.delete(id);
        signal?.removeEventListener("abort", onAbort);
      };
      requests.set(id, {
        kind: "call",
        onFrame(frame) {
          let value: T;
          try {
            value = onReply(frame);
          } catch (error) {
            if (ContainerAgentError.hasCode(error, "SANDBOX_PROTOCOL")) throw error;
            cleanup();
            reject(error);
            return;
          }
          cleanup();
          resolve(value);
        },
        fail(error) {
          signal?.removeEventListener("abort", onAbort);
          reject(error);
        },
      });
      signal?.addEventListener("abort", onAbort, { once: true });
      send(type, id, payload);
    });
  }

  function unexpected(frame: Frame, what: string): never {
    throw protocolError(`protocol error: unexpected frame type 0x${frame.type.toString(16)} for ${what}`);
  }

  // ----------------------------------------------------------------- connections

  const streamLink = (id: number) => ({
    send: (type: number, payload?: Uint8Array) => send(type, id, payload),
    get open() {
      return !closed;
    },
  });

  function onStreamFrame(frame: Frame): void {
    const id = frame.requestId;
    if (frame.type === FrameType.StreamOpen) {
      if (streams.has(id)) throw protocolError(`protocol error: connection ${id} opened twice`);
      const stream = new AgentStream(id, streamLink(id));
      streams.set(id, stream);
      if (onConnection) onConnection(stream);
      else stream.destroy();
      return;
    }
    const stream = streams.get(id);
    switch (frame.type) {
      case FrameType.StreamDataOut:
        stream?.receive(frame.payload);
        return;
      case FrameType.StreamEofOut:
        stream?.receiveEnd();
        return;
      case FrameType.StreamAckOut:
        stream?.acknowledged(decodeU32Payload(frame.payload, "STREAM_ACK"));
        return;
      case FrameType.StreamClosed:
        streams.delete(id);
        stream?.closedByAgent();
        return;
      default:
        unexpected(frame, "a connection");
    }
  }

  function listen(listenOptions: {
    port: number;
    onConnection: (stream: AgentStream) => void;
    hostSocket?: { path: string; token: string } | undefined;
    signal?: AbortSignal | undefined;
  }): Promise<number> {
    let payload: Uint8Array;
    try {
      payload = encodeListenPayload(listenOptions.port, listenOptions.hostSocket);
    } catch (error) {
      return Promise.reject(error);
    }
    return call(FrameType.Listen, payload, listenOptions.signal, (frame) => {
      if (frame.type === FrameType.Listening) {
        // Set while handling LISTENING: no connection can be announced before it.
        onConnection = listenOptions.onConnection;
        return decodeListeningPayload(frame.payload);
      }
      if (frame.type === FrameType.Error) {
        const { errno, message } = decodeErrorPayload(frame.payload);
        throw new ContainerAgentError("SANDBOX_SPAWN_FAILED", message, {
          details: { errno, errnoName: errnoName(errno), port: listenOptions.port },
        });
      }
      return unexpected(frame, "LISTEN");
    });
  }

  // ----------------------------------------------------------------- processes

  function onProcessFrame(state: ProcessState, frame: Frame): void {
    switch (frame.type) {
      case FrameType.Spawned: {
        if (state.spawned) unexpected(frame, "a started command");
        state.spawned = true;
        state.pid.resolve(decodeU32Payload(frame.payload, "SPAWNED"));
        return;
      }
      case FrameType.Stdout:
      case FrameType.Stderr: {
        if (!state.spawned) unexpected(frame, "a command not yet started");
        const isStdout = frame.type === FrameType.Stdout;
        const collector = isStdout ? state.stdout : state.stderr;
        collector.push(frame.payload);
        const callback = isStdout ? state.options.onStdout : state.options.onStderr;
        if (callback && !state.callbackError) {
          try {
            callback(frame.payload);
          } catch (error) {
            state.callbackError = { error };
            terminate(state, "abort", LINUX_SIGNALS.SIGKILL, 0);
          }
        }
        if (collector.truncated && state.options.onOutputLimit === "kill") terminate(state, "output-limit");
        return;
      }
      case FrameType.StdinAck:
      case FrameType.PipeAck: {
        const channel = frame.type === FrameType.StdinAck ? state.stdin : state.pipe;
        const count = decodeU32Payload(frame.payload, "STDIN_ACK");
        if (count > channel.unacked)
          throw protocolError("protocol error: an acknowledgement for more bytes than were sent");
        channel.unacked -= count;
        pumpInput(state, channel);
        return;
      }
      case FrameType.PipeOut: {
        if (!state.spawned || !state.options.onPipe) unexpected(frame, "a command without a pipe");
        if (!state.callbackError) {
          try {
            state.options.onPipe(frame.payload);
          } catch (error) {
            state.callbackError = { error };
            terminate(state, "abort", LINUX_SIGNALS.SIGKILL, 0);
          }
        }
        return;
      }
      case FrameType.Exit: {
        if (!state.spawned) unexpected(frame, "a command not yet started");
        const status = decodeExitPayload(frame.payload);
        requests.delete(state.id);
        settle(state);
        if (state.callbackError) {
          state.result.reject(state.callbackError.error);
          return;
        }
        const reason = state.reason ?? "exit";
        state.result.resolve({
          ...status,
          stdout: state.stdout.bytes(),
          stderr: state.stderr.bytes(),
          truncated: { stdout: state.stdout.truncated, stderr: state.stderr.truncated },
          omittedBytes: { stdout: state.stdout.omittedBytes, stderr: state.stderr.omittedBytes },
          durationMs: performance.now() - state.startedAt,
          terminationReason: reason,
        });
        return;
      }
      case FrameType.Error: {
        if (state.spawned) return; // a failed SIGNAL/STDIN for a running command; it goes on
        requests.delete(state.id);
        failProcess(state, agentError("SANDBOX_SPAWN_FAILED", frame.payload, { argv0: state.argv0 }));
        return;
      }
      default:
        unexpected(frame, "a command");
    }
  }

  function settle(state: ProcessState): void {
    state.done = true;
    clearTimeout(state.timeoutTimer);
    clearTimeout(state.forceKillTimer);
    state.removeAbortListener();
    // Input for a command that is gone is dropped, not an error.
    for (const item of [...state.stdin.queue.splice(0), ...state.pipe.queue.splice(0)]) item.done?.();
  }

  function failProcess(state: ProcessState, error: unknown): void {
    if (state.done) return;
    settle(state);
    for (const item of [...state.stdin.queue.splice(0), ...state.pipe.queue.splice(0)]) item.fail?.(error);
    state.pid.reject(error);
    state.result.reject(error);
  }

  function signalGroup(state: ProcessState, signal: number): void {
    if (state.done || closed) return;
    send(FrameType.Signal, state.id, encodeSignalPayload(signal));
  }

  function terminate(
    state: ProcessState,
    reason: TerminationReason,
    signal: number = LINUX_SIGNALS.SIGTERM,
    forceKillAfterMs = state.options.forceKillAfterMs ?? DEFAULT_FORCE_KILL_AFTER_MS,
  ): void {
    if (state.done) return;
    state.reason ??= reason;
    signalGroup(state, signal);
    if (
      signal !== LINUX_SIGNALS.SIGKILL &&
      state.forceKillTimer === undefined &&
      Number.isFinite(forceKillAfterMs)
    ) {
      state.forceKillTimer = setTimeout(() => signalGroup(state, LINUX_SIGNALS.SIGKILL), forceKillAfterMs);
    }
  }

  function pumpInput(state: ProcessState, channel: InputChannel): void {
    while (!state.done && !closed && channel.queue.length > 0) {
      const item = channel.queue[0]!;
      if (item.data === undefined) {
        channel.queue.shift();
        send(FrameType.StdinEof, state.id);
        item.done?.();
        continue;
      }
      if (channel.unacked > 0 && channel.unacked + item.data.length > stdinWindowBytes) return;
      channel.queue.shift();
      send(channel.frame, state.id, item.data);
      channel.unacked += item.data.length;
      item.done?.();
    }
  }

  /** Queues bytes (or, with `undefined`, the end of stdin) for one of a command's inputs. */
  function queueInput(
    state: ProcessState,
    channel: InputChannel,
    data: Uint8Array | undefined,
  ): Promise<void> {
    if (state.done || closed) return Promise.resolve();
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    if (data === undefined) {
      channel.queue.push({ data: undefined, done: resolve, fail: reject });
    } else if (data.length === 0) {
      return Promise.resolve();
    } else {
      for (let offset = 0; offset < data.length; offset += STDIN_CHUNK_BYTES) {
        const end = Math.min(offset + STDIN_CHUNK_BYTES, data.length);
        const last = end === data.length;
        channel.queue.push({
          data: data.slice(offset, end),
          done: last ? resolve : undefined,
          fail: last ? reject : undefined,
        });
      }
    }
    pumpInput(state, channel);
    return promise;
  }

  function spawn(spawnOptions: AgentSpawnOptions): AgentProcess {
    const { stdin, signal, timeoutMs } = spawnOptions;
    const maxOutputBytes = spawnOptions.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (!Number.isInteger(maxOutputBytes) || maxOutputBytes < 0) {
      throw new ContainerAgentError("INVALID_ARGUMENT", "maxOutputBytes must be a non-negative integer");
    }
    const payload = encodeSpawnPayload({
      argv: spawnOptions.argv,
      cwd: spawnOptions.cwd,
      env: spawnOptions.env,
      inheritEnv: spawnOptions.inheritEnv,
      uid: spawnOptions.uid,
      gid: spawnOptions.gid,
      stdin: stdin !== undefined,
      killGroupOnExit: spawnOptions.killGroupOnExit,
      pipe: spawnOptions.onPipe !== undefined,
    });
    const state: ProcessState = {
      id: 0,
      argv0: spawnOptions.argv[0]!,
      startedAt: performance.now(),
      stdout: createOutputCollector(maxOutputBytes),
      stderr: createOutputCollector(maxOutputBytes),
      options: spawnOptions,
      pid: deferred<number>(),
      result: deferred<AgentProcessResult>(),
      spawned: false,
      done: false,
      reason: undefined,
      callbackError: undefined,
      stdinPipe: stdin === "pipe",
      stdinEnded: stdin === undefined,
      stdin: { frame: FrameType.Stdin, unacked: 0, queue: [] },
      pipe: { frame: FrameType.PipeIn, unacked: 0, queue: [] },
      forceKillTimer: undefined,
      timeoutTimer: undefined,
      removeAbortListener: noop,
    };
    const handle: AgentProcess = {
      pid: state.pid.promise,
      wait: () => state.result.promise,
      kill(signal = "SIGTERM", killOptions) {
        const number = signalNumber(signal);
        if (TERMINATING.has(number)) terminate(state, "abort", number, killOptions?.forceKillAfterMs);
        else signalGroup(state, number);
      },
      writeStdin(data) {
        if (!state.stdinPipe) {
          return Promise.reject(
            new ContainerAgentError("INVALID_ARGUMENT", "writeStdin needs spawn({ stdin: 'pipe' })"),
          );
        }
        if (state.stdinEnded) {
          return Promise.reject(new ContainerAgentError("INVALID_ARGUMENT", "stdin was already closed"));
        }
        return queueInput(state, state.stdin, toBytes(data));
      },
      closeStdin() {
        if (state.stdinEnded) return Promise.resolve();
        state.stdinEnded = true;
        return queueInput(state, state.stdin, undefined);
      },
      writePipe(data) {
        if (!spawnOptions.onPipe) {
          return Promise.reject(
            new ContainerAgentError("INVALID_ARGUMENT", "writePipe needs spawn({ onPipe })"),
          );
        }
        return queueInput(state, state.pipe, toBytes(data));
      },
    };

    if (closed) {
      failProcess(state, protocolError("the container agent connection is closed"));
      return handle;
    }
    if (signal?.aborted) {
      settle(state);
      state.pid.reject(signal.reason);
      state.result.resolve({
        exitCode: null,
        signal: null,
        stdout: new Uint8Array(0),
        stderr: new Uint8Array(0),
        truncated: { stdout: false, stderr: false },
        omittedBytes: { stdout: 0, stderr: 0 },
        durationMs: 0,
        terminationReason: "abort",
      });
      return handle;
    }

    state.id = nextRequestId();
    requests.set(state.id, { kind: "process", state });
    send(FrameType.Spawn, state.id, payload);
    if (stdin !== undefined && stdin !== "pipe") {
      state.stdinEnded = true;
      void queueInput(state, state.stdin, toBytes(stdin)).catch(noop);
      void queueInput(state, state.stdin, undefined).catch(noop);
    }
    if (timeoutMs !== undefined && Number.isFinite(timeoutMs)) {
      state.timeoutTimer = setTimeout(() => terminate(state, "timeout"), Math.max(0, timeoutMs));
    }
    if (signal) {
      const onAbort = () => terminate(state, "abort");
      signal.addEventListener("abort", onAbort, { once: true });
      state.removeAbortListener = () => signal.removeEventListener("abort", onAbort);
    }
    return handle;
  }

  // ----------------------------------------------------------------- files and ping

  function readFile(path: string, readOptions: AgentReadFileOptions): Promise<Uint8Array | null> {
    let payload: Uint8Array;
    try {
      payload = encodeReadFilePayload({
        root: readOptions.root,
        path,
        maxBytes: readOptions.maxBytes ?? MAX_FRAME_PAYLOAD_BYTES,
        uid: readOptions.uid,
        gid: readOptions.gid,
      });
    } catch (error) {
      return Promise.reject(error);
    }
    return call(FrameType.ReadFile, payload, readOptions.signal, (frame) => {
      switch (frame.type) {
        case FrameType.FileData:
          return new Uint8Array(frame.payload); // a copy, and a plain Uint8Array
        case FrameType.FileMissing:
          return null;
        case FrameType.Error:
          throw agentError("SANDBOX_FILE_FAILED", frame.payload, { path, operation: "read" });
        default:
          return unexpected(frame, "READ_FILE");
      }
    });
  }

  function writeFile(path: string, content: Uint8Array | string, writeOptions: AgentWriteFileOptions) {
    let payload: Uint8Array;
    try {
      payload = encodeWriteFilePayload({
        root: writeOptions.root,
        path,
        content: toBytes(content),
        mode: writeOptions.mode,
        checkOnly: writeOptions.checkOnly,
        uid: writeOptions.uid,
        gid: writeOptions.gid,
      });
    } catch (error) {
      return Promise.reject(error);
    }
    return call(FrameType.WriteFile, payload, writeOptions.signal, (frame): void => {
      if (frame.type === FrameType.FileWritten) return;
      if (frame.type === FrameType.Error) {
        throw agentError("SANDBOX_FILE_FAILED", frame.payload, { path, operation: "write" });
      }
      unexpected(frame, "WRITE_FILE");
    });
  }

  let pingCounter = 0;
  function ping(pingOptions: { signal?: AbortSignal | undefined } = {}): Promise<number> {
    const payload = new Uint8Array(8);
    new DataView(payload.buffer).setFloat64(0, ++pingCounter);
    const started = performance.now();
    return call(FrameType.Ping, payload, pingOptions.signal, (frame) => {
      if (frame.type !== FrameType.Pong) unexpected(frame, "PING");
      if (frame.payload.length !== 8 || !frame.payload.every((byte, index) => byte === payload[index])) {
        throw protocolError("protocol error: PONG does not echo the PING");
      }
      return performance.now() - started;
    });
  }

  // ----------------------------------------------------------------- closing

  function close(): Promise<void> {
    if (closing) return closing;
    closedByClient = true;
    closing = (async () => {
      fail(protocolError("the container agent client was closed"), false);
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
    spawn,
    readFile,
    writeFile,
    ping,
    listen,
    close,
    [Symbol.asyncDispose]: close,
  };
}
