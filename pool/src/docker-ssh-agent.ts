import { Agent } from "node:http";
import { connect as connectTcp, type Socket } from "node:net";
import { Duplex } from "node:stream";
import { type ClientChannel, Client as SshClient } from "ssh2";
import type { DockerSshOptions } from "./docker-engine-connection.ts";
import { PoolError } from "./pool-error.ts";

/** Options of {@link createDockerSshAgent}. */
export interface DockerSshAgentOptions {
  host: string;
  port: number;
  /** The user to log in as. @default "root" */
  username?: string | undefined;
  sshOptions?: DockerSshOptions | undefined;
  /**
   * Channels (Engine API connections, hijacked exec streams) one SSH connection carries before another is opened:
   * OpenSSH allows 10 sessions per connection (`MaxSessions`).
   * @default 8
   */
  channelsPerConnection?: number;
  /** How long an SSH connection with no channel stays open. @default 10000 */
  idleMs?: number;
}

const DIAL_COMMAND = "docker system dial-stdio";
/** What is kept of the remote command's stderr, for the error when it fails. */
const STDERR_LIMIT = 2048;

/**
 * One Engine API connection: the stdio of `docker system dial-stdio` on an SSH channel, shaped as the socket Node's
 * HTTP client and agent expect (`setTimeout` as an idle timeout, `ref`/`unref`, half-close on `end()`).
 */
class DialStdioSocket extends Duplex {
  /** The idle timeout (Node's HTTP agent reads it as a socket's). */
  timeout = 0;
  #timer: NodeJS.Timeout | undefined;
  readonly #channel: ClientChannel;
  readonly #onRef: (socket: DialStdioSocket, referenced: boolean) => void;

  constructor(
    channel: ClientChannel,
    describe: string,
    onRef: (socket: DialStdioSocket, referenced: boolean) => void,
  ) {
    super({ allowHalfOpen: true });
    this.#channel = channel;
    this.#onRef = onRef;
    let stderr = "";
    let answered = false;
    let ended = false;
    channel.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < STDERR_LIMIT)
        stderr += chunk.toString("utf8").slice(0, STDERR_LIMIT - stderr.length);
    });
    channel.on("data", (chunk: Buffer) => {
      answered = true;
      this.#touch();
      if (!this.push(chunk)) channel.pause();
    });
    channel.on("end", () => {
      ended = true;
      this.push(null);
    });
    channel.on("exit", (code: number | null) => {
      // A command that failed before the engine said anything: no docker there, or it cannot reach its engine.
      if (code === 0 || code === null || answered) return;
      this.destroy(
        new PoolError(
          "DOCKER_UNAVAILABLE",
          `\`${DIAL_COMMAND}\` failed on ${describe} (exit ${code})${stderr ? `: ${stderr.trim()}` : ""}`,
          { details: { reason: "ssh-dial-stdio", exitCode: code } },
        ),
      );
    });
    // The remote side is gone: what it sent is still read to the end first (a paused reader loses nothing).
    channel.on("close", () => {
      if (!ended || this.readableEnded) this.destroy();
      else this.once("end", () => this.destroy());
    });
    channel.on("error", (error: Error) => this.destroy(error));
  }

  override _read(): void {
    this.#channel.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    this.#touch();
    this.#channel.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    // EOF on the remote command's stdin: dial-stdio half-closes the engine connection, output keeps flowing.
    this.#channel.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    clearTimeout(this.#timer);
    this.#channel.destroy();
    this.#onRef(this, false);
    callback(error);
  }

  /**
   * Emits `timeout` after `ms` without data either way, as `net.Socket#setTimeout` does: `0` turns it off and
   * removes `callback` (Node's HTTP client does so each time it hands a kept-alive connection back).
   */
  setTimeout(ms: number, callback?: () => void): this {
    this.timeout = ms;
    if (callback && ms === 0) this.removeListener("timeout", callback);
    else if (callback) this.once("timeout", callback);
    this.#touch();
    return this;
  }

  setNoDelay(): this {
    return this;
  }

  setKeepAlive(): this {
    return this;
  }

  /** Keeps the process alive while the connection is open (the default). */
  ref(): this {
    if (!this.destroyed) this.#onRef(this, true);
    return this;
  }

  /** Lets the process exit while the connection is open (Node's HTTP agent does so for an idle kept-alive one). */
  unref(): this {
    this.#onRef(this, false);
    return this;
  }

  #touch(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.timeout > 0 && !this.destroyed) {
      this.#timer = setTimeout(() => this.emit("timeout"), this.timeout);
      this.#timer.unref();
    }
  }
}

/** One SSH connection to the engine's host and the channels it carries. */
interface SshConnection {
  client: SshClient;
  tcp: Socket;
  ready: Promise<void>;
  /** Channels open or being opened. */
  channels: number;
  /** Channels being opened: they keep the process alive, as a socket that is connecting does. */
  opening: number;
  /** Channels that keep the process alive. */
  referenced: Set<DialStdioSocket>;
  idleTimer: NodeJS.Timeout | undefined;
  closed: boolean;
}

/** A clear error for an SSH failure (a socket error keeps its code: the driver maps it as any other). */
function sshError(error: Error & { level?: string; code?: unknown }, describe: string): Error {
  if (typeof error.code === "string") return error;
  const reason = error.level === "client-authentication" ? "ssh-authentication" : "ssh";
  const what =
    reason === "ssh-authentication"
      ? `SSH login to ${describe} refused (check the key, agent or passphrase)`
      : `SSH connection to ${describe} failed`;
  return new PoolError("DOCKER_UNAVAILABLE", `${what}: ${error.message}`, {
    cause: error,
    details: { reason, ...(error.level ? { level: error.level } : {}) },
  });
}

/**
 * An HTTP agent that reaches a Docker engine over SSH as the `docker` CLI does for `ssh://` hosts: each Engine API
 * connection is a channel running `docker system dial-stdio` on the engine's host (whose `docker` CLI must reach
 * the engine there). Channels share SSH connections (up to `channelsPerConnection` each); a connection without
 * channels is closed after `idleMs`, and only connections with channels in use keep the process alive.
 */
export function createDockerSshAgent(options: DockerSshAgentOptions): Agent {
  const username = options.username ?? "root";
  const describe = `${username}@${options.host}:${options.port}`;
  const perConnection = options.channelsPerConnection ?? 8;
  const idleMs = options.idleMs ?? 10_000;
  const { privateKey, passphrase, agent, hostVerifier, readyTimeout } = options.sshOptions ?? {};
  const connections = new Set<SshConnection>();

  function refresh(connection: SshConnection): void {
    if (connection.opening > 0 || connection.referenced.size > 0) connection.tcp.ref();
    else connection.tcp.unref();
    clearTimeout(connection.idleTimer);
    connection.idleTimer = undefined;
    if (connection.channels === 0 && !connection.closed) {
      connection.idleTimer = setTimeout(() => {
        connection.closed = true; // no channel may start on it from now on
        connection.client.end();
      }, idleMs);
      connection.idleTimer.unref();
    }
  }

  function open(): SshConnection {
    const client = new SshClient();
    // Small frames (the agent's protocol) go out at once rather than waiting for an ACK (Nagle).
    const tcp = connectTcp({ host: options.host, port: options.port, noDelay: true });
    const connection: SshConnection = {
      client,
      tcp,
      ready: new Promise<void>((resolve, reject) => {
        client.once("ready", resolve);
        client.once("error", (error) => reject(sshError(error, describe)));
      }),
      channels: 0,
      opening: 0,
      referenced: new Set(),
      idleTimer: undefined,
      closed: false,
    };
    connection.ready.catch(() => undefined);
    const forget = () => {
      connection.closed = true;
      clearTimeout(connection.idleTimer);
      connections.delete(connection);
    };
    client.on("error", forget);
    client.on("close", forget);
    client.connect({
      sock: tcp,
      username,
      ...(privateKey !== undefined ? { privateKey } : {}),
      ...(passphrase !== undefined ? { passphrase } : {}),
      ...(agent !== undefined ? { agent } : {}),
      ...(hostVerifier !== undefined ? { hostVerifier } : {}),
      readyTimeout: readyTimeout ?? 20_000,
    });
    connections.add(connection);
    return connection;
  }

  /** A connection with room for one more channel (opened when none has), with that channel counted. */
  function claim(): SshConnection {
    let connection = [...connections].find((each) => !each.closed && each.channels < perConnection);
    connection ??= open();
    connection.channels += 1;
    connection.opening += 1;
    refresh(connection);
    return connection;
  }

  async function dial(): Promise<DialStdioSocket> {
    const connection = claim();
    let opened = false;
    const settle = () => {
      if (opened) return;
      opened = true;
      connection.opening -= 1;
    };
    let released = false;
    const release = () => {
      settle();
      if (released) return;
      released = true;
      connection.channels -= 1;
      refresh(connection);
    };
    try {
      await connection.ready;
      const channel = await new Promise<ClientChannel>((resolve, reject) => {
        try {
          connection.client.exec(DIAL_COMMAND, (error, stream) =>
            error ? reject(sshError(error, describe)) : resolve(stream),
          );
        } catch (error) {
          // The connection closed after it was ready ("Not connected").
          reject(sshError(error as Error, describe));
        }
      });
      const socket = new DialStdioSocket(channel, describe, (each, referenced) => {
        if (referenced) connection.referenced.add(each);
        else connection.referenced.delete(each);
        refresh(connection);
      });
      settle();
      socket.ref();
      socket.once("close", release);
      return socket;
    } catch (error) {
      release();
      throw error;
    }
  }

  const httpAgent = new Agent({ keepAlive: true, maxFreeSockets: 2, timeout: 5_000 });
  // Node's agent calls createConnection(options, callback) and takes the socket from the callback.
  (httpAgent as unknown as { createConnection: unknown }).createConnection = (
    _options: unknown,
    callback: (error: Error | null, socket?: Duplex) => void,
  ) => {
    dial().then(
      (socket) => callback(null, socket),
      (error: Error) => callback(error),
    );
    return undefined;
  };
  return httpAgent;
}
