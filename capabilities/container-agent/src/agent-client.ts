import type { Socket } from "node:net";
import {
  type AgentConnectOptions,
  type AgentDialBack,
  connectAgentPort,
  connectAgentPortDialBack,
} from "./agent-connect.ts";
import { type AgentConnection, type AgentTransport, createAgentConnection } from "./agent-connection.ts";
import {
  type AgentReadFileOptions,
  type AgentWriteFileOptions,
  readAgentFile,
  writeAgentFile,
} from "./agent-files.ts";
import { type AgentListener, type AgentListenOptions, createAgentListener } from "./agent-listener.ts";
import { createAgentPing } from "./agent-ping.ts";
import type { AgentProcess, AgentSpawnOptions } from "./agent-process.ts";
import type { AgentHello } from "./agent-protocol.ts";
import type { AgentStream } from "./agent-stream.ts";
import type { ContainerAgentError } from "./container-agent-error.ts";
import { spawnAgentProcess } from "./spawn-agent-process.ts";

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
  listen(options: AgentListenOptions): Promise<number>;
  /**
   * Connects to `127.0.0.1:port` inside the container, through the agent (the container needs no network), and
   * resolves to the connection as an {@link AgentStream}: flow-controlled both ways like the listener's
   * connections, `end()` half-closes, `destroy()` closes. Rejects with `SANDBOX_PORT_CLOSED` when nothing listens
   * there, `SANDBOX_CONNECT_FAILED` for another failure, `INVALID_ARGUMENT` for a port outside 1–65535.
   *
   * With `hostSocket` (a unix socket of this host the container mounts; see `AgentDial.dialBack`) the agent relays
   * the connection there instead, and this resolves to that socket's end of it (a `net.Socket`, half-open allowed,
   * as the frame path's stream): none of its bytes cross the agent's frame stream.
   */
  connect(port: number, options: AgentConnectOptions & { hostSocket: AgentDialBack }): Promise<Socket>;
  connect(port: number, options?: AgentConnectOptions & { hostSocket?: undefined }): Promise<AgentStream>;
  connect(port: number, options?: AgentConnectOptions): Promise<AgentStream | Socket>;
  /**
   * Ends the connection: every request in flight rejects with `SANDBOX_PROTOCOL`, and the agent, seeing its
   * stdin end, kills every command it started and exits. Resolves when its output has ended (at most ~2 s).
   */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

const DEFAULT_STDIN_WINDOW_BYTES = 256 * 1024;

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
  const stdinWindowBytes = options.stdinWindowBytes ?? DEFAULT_STDIN_WINDOW_BYTES;
  // The listener is made once the connection exists; the connection calls on it only when the agent's frames
  // arrive or the connection ends, which happens in a later tick.
  const connection: AgentConnection = createAgentConnection({
    stream: options.stream,
    onStreamFrame: (frame) => listener.onFrame(frame),
    onEnd: () => listener.closeAll(),
    onClose: options.onClose,
  });
  const listener: AgentListener = createAgentListener(connection);
  return {
    hello: connection.hello,
    get closed() {
      return connection.closed;
    },
    whenClosed: connection.whenClosed,
    spawn: (spawnOptions) => spawnAgentProcess(connection, spawnOptions, stdinWindowBytes),
    readFile: (path, readOptions) => readAgentFile(connection, path, readOptions),
    writeFile: (path, content, writeOptions) => writeAgentFile(connection, path, content, writeOptions),
    ping: createAgentPing(connection),
    listen: listener.listen,
    connect: ((port: number, connectOptions?: AgentConnectOptions) =>
      connectOptions?.hostSocket
        ? connectAgentPortDialBack(connection, port, {
            ...connectOptions,
            hostSocket: connectOptions.hostSocket,
          })
        : connectAgentPort(connection, port, connectOptions)) as AgentClient["connect"],
    close: connection.close,
    [Symbol.asyncDispose]: connection.close,
  };
}
