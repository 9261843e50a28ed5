import { PaiError } from "@pai/core";
import type { ContainerDriver, ExecSession } from "@pai/pool";
import { type AgentClient, type AgentProcess, createAgentClient } from "./agent/agent-client.ts";
import type { AgentHello } from "./agent/agent-protocol.ts";
import { SandboxAgentError } from "./agent/sandbox-agent-error.ts";
import type {
  CommandExecutor,
  ExecutorProcess,
  ExecutorProcessResult,
  ExecutorSpawnOptions,
} from "./command-executor.ts";
import { createDockerExecExecutor } from "./docker-exec-executor.ts";
import type { SandboxSignal } from "./sandbox-facade.ts";

/** Where `dockerSandbox` copies the agent binary (a per-container volume, populated before start). */
export const AGENT_DIRECTORY = "/opt/pai";
/** The agent's path inside a sandbox container. */
export const AGENT_PATH = `${AGENT_DIRECTORY}/pai-agent`;

/** Options of {@link createAgentExecutor}. */
export interface AgentExecutorOptions {
  driver: ContainerDriver;
  containerId: string;
  /** The agent binary inside the container. @default "/opt/pai/pai-agent" */
  agentPath?: string | undefined;
  /** `uid:gid` the agent (and the `docker exec` fallback) runs as. @default the container's user */
  user?: string | undefined;
  /** How long to wait for the agent's HELLO. @default 5000 */
  helloTimeoutMs?: number | undefined;
  /**
   * Fail when the agent cannot be started (`true`, for a fresh container: the pool retries the create), or
   * start on the `docker exec` fallback and keep trying to start the agent (`false`, for an adopted one).
   * @default true
   */
  requireAgent?: boolean | undefined;
  /** Least time between two attempts to restart a lost agent. @default 1000 */
  restartIntervalMs?: number | undefined;
  /** Aborts connecting. The live connection is not tied to it. */
  signal?: AbortSignal | undefined;
}

/** A {@link CommandExecutor} on the in-container agent, with `docker exec` as its fallback. */
export interface AgentExecutor extends CommandExecutor {
  /** `agent` while the agent is connected, `docker-exec` while commands go through the fallback. */
  readonly kind: "agent" | "docker-exec";
  /** True while the agent is connected. */
  readonly connected: boolean;
  /** The agent's HELLO (its pid inside the container, user, version), while connected. */
  readonly hello: AgentHello | undefined;
  /** Starts a fresh agent session (through `docker exec`) unless one is connected. */
  restart(options?: { signal?: AbortSignal | undefined }): Promise<void>;
  /** Round trip through the agent in milliseconds; rejects when it is not connected. */
  ping(options?: { signal?: AbortSignal | undefined }): Promise<number>;
}

interface Connection {
  client: AgentClient;
  session: ExecSession;
  hello: AgentHello;
}

const DEFAULT_HELLO_TIMEOUT_MS = 5000;
/** The largest file one agent frame carries. */
const MAX_AGENT_FILE_BYTES = 1024 * 1024;

function fileError(error: unknown): unknown {
  if (!SandboxAgentError.hasCode(error, "SANDBOX_FILE_FAILED")) return error;
  return new PaiError("SANDBOX_FILE_FAILED", error.message, { cause: error, details: error.details ?? {} });
}
const CLOSE_WAIT_MS = 250;

function withDeadline<T>(promise: Promise<T>, ms: number, signal: AbortSignal | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new PaiError("SANDBOX_PROTOCOL", `the sandbox agent did not say HELLO within ${ms} ms`)),
      ms,
    );
    const onAbort = () => reject(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    });
  });
}

/** A spawn the agent refused, as the result a shell would have given (127 not found, 126 not runnable, 2 bad cwd). */
function refusedSpawn(error: SandboxAgentError, startedAt: number): ExecutorProcessResult | undefined {
  const errnoName = error.details?.errnoName;
  const chdir = /: chdir /.test(error.message);
  const exec = /: exec /.test(error.message);
  let exitCode: number | undefined;
  if (chdir) exitCode = 2;
  else if (exec && (errnoName === "ENOENT" || errnoName === "ENOTDIR")) exitCode = 127;
  else if (exec && (errnoName === "EACCES" || errnoName === "ENOEXEC" || errnoName === "EISDIR"))
    exitCode = 126;
  if (exitCode === undefined) return undefined;
  return {
    exitCode,
    signal: null,
    stdout: new Uint8Array(0),
    stderr: Buffer.from(`${error.message}\n`),
    truncated: { stdout: false, stderr: false },
    omittedBytes: { stdout: 0, stderr: 0 },
    durationMs: Math.round((performance.now() - startedAt) * 100) / 100,
    terminationReason: "exit",
  };
}

function fromAgentProcess(
  process: AgentProcess,
  startedAt: number,
  signalGroupAfterExit: (signal: SandboxSignal, pgid: number) => void,
): ExecutorProcess {
  let exited = false;
  const result = process.wait().catch((error: unknown) => {
    if (SandboxAgentError.hasCode(error, "SANDBOX_SPAWN_FAILED")) {
      const refused = refusedSpawn(error, startedAt);
      if (refused) return refused;
      throw new PaiError("SANDBOX_SPAWN_FAILED", error.message, {
        cause: error,
        details: error.details ?? {},
      });
    }
    throw error;
  });
  result.then(
    () => {
      exited = true;
    },
    () => {},
  );
  return {
    pid: process.pid,
    wait: () => result,
    kill(signal = "SIGTERM", options) {
      if (!exited) return process.kill(signal, options);
      // The command is gone; what it left in its group still gets the signal.
      void process.pid.then((pgid) => signalGroupAfterExit(signal, pgid)).catch(() => {});
    },
    writeStdin: (data) => process.writeStdin(data),
    closeStdin: () => process.closeStdin(),
  };
}

/**
 * Starts `pai-agent` inside a running container (one `docker exec` session, waiting for its HELLO) and runs
 * commands and small file operations through it: ~1 ms per command instead of `docker exec`'s ~60 ms. When the
 * agent is gone (killed, or its session broke) commands fall back to `docker exec` while a fresh agent is
 * started in the background.
 *
 * @example
 * const executor = await createAgentExecutor({ driver, containerId });
 * const result = await executor.run({ argv: ["true"], timeoutMs: 5_000 });
 */
export async function createAgentExecutor(options: AgentExecutorOptions): Promise<AgentExecutor> {
  const { driver, containerId } = options;
  const agentPath = options.agentPath ?? "/opt/pai/pai-agent";
  const helloTimeoutMs = options.helloTimeoutMs ?? DEFAULT_HELLO_TIMEOUT_MS;
  const restartIntervalMs = options.restartIntervalMs ?? 1000;
  let connection: Connection | undefined;
  let connecting: Promise<void> | undefined;
  let lastAttemptAt = Number.NEGATIVE_INFINITY;
  let restartTimer: ReturnType<typeof setTimeout> | undefined;
  let fallback: CommandExecutor | undefined;
  let closed = false;

  async function connect(signal: AbortSignal | undefined): Promise<Connection> {
    signal?.throwIfAborted();
    const session = await driver.execDuplex(containerId, {
      cmd: [agentPath],
      ...(options.user !== undefined ? { user: options.user } : {}),
    });
    session.stream.on("error", () => {});
    session.stderr.resume(); // the agent's log
    let current: Connection | undefined;
    const client = createAgentClient({
      stream: { readable: session.stdout, writable: session.stdin },
      // Bulk stdin (uploads through tar) needs more than the default 256 KiB in flight to keep the pipe full.
      stdinWindowBytes: 4 * 1024 * 1024,
      onClose: () => {
        session.close();
        if (current && connection === current) {
          // Lost (killed, or its session broke): commands go through docker exec while a fresh agent starts.
          connection = undefined;
          if (!closed) setTimeout(() => agent(), 0).unref();
        }
      },
    });
    try {
      const hello = await withDeadline(client.hello, helloTimeoutMs, signal);
      current = { client, session, hello };
      return current;
    } catch (error) {
      await Promise.race([client.close(), new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS))]);
      session.close();
      if (signal?.aborted) throw signal.reason;
      throw PaiError.isInstance(error)
        ? error
        : new PaiError("SANDBOX_PROTOCOL", `the sandbox agent did not start in ${containerId}`, {
            cause: error,
          });
    }
  }

  function restart(restartOptions: { signal?: AbortSignal | undefined } = {}): Promise<void> {
    if (closed)
      return Promise.reject(new PaiError("CAPABILITY_UNAVAILABLE", "the sandbox executor is closed"));
    if (connection && !connection.client.closed) return Promise.resolve();
    connecting ??= (async () => {
      lastAttemptAt = performance.now();
      try {
        const live = await connect(restartOptions.signal);
        if (closed) {
          void live.client.close();
          return;
        }
        connection = live;
      } finally {
        connecting = undefined;
      }
    })();
    return connecting;
  }

  /** The live agent, or undefined (and a background restart, paced) when it is gone. */
  function agent(): AgentClient | undefined {
    if (connection && !connection.client.closed) return connection.client;
    connection = undefined;
    if (closed || connecting || restartTimer) return undefined;
    const wait = lastAttemptAt + restartIntervalMs - performance.now();
    if (wait <= 0) {
      restart().catch(() => {});
    } else {
      // Paced: try again once the interval has passed, whether or not another command comes.
      restartTimer = setTimeout(() => {
        restartTimer = undefined;
        agent();
      }, wait);
      restartTimer.unref();
    }
    return undefined;
  }

  function viaFallback(): CommandExecutor {
    fallback ??= createDockerExecExecutor({
      driver,
      containerId,
      ...(options.user !== undefined ? { user: options.user } : {}),
    });
    return fallback;
  }

  try {
    await restart(options.signal ? { signal: options.signal } : {});
  } catch (error) {
    if (options.requireAgent ?? true) throw error;
  }

  /** A file larger than one frame, streamed through `cat`. */
  async function readByCommand(path: string, maxBytes: number, signal: AbortSignal | undefined) {
    const result = await spawn({
      argv: ["sh", "-c", '[ -e "$1" ] || exit 4; [ -f "$1" ] || exit 3; exec cat -- "$1"', "sh", path],
      maxOutputBytes: maxBytes,
      onOutputLimit: "kill",
      signal,
    }).wait();
    if (result.terminationReason === "abort") throw signal?.reason ?? new Error("aborted");
    if (result.exitCode === 4) return null;
    if (result.terminationReason === "output-limit" || result.exitCode !== 0) {
      throw new PaiError("SANDBOX_FILE_FAILED", `reading ${path} failed: ${Buffer.from(result.stderr)}`, {
        details: { path, maxBytes, exitCode: result.exitCode },
      });
    }
    return result.stdout;
  }

  function spawn(spawnOptions: ExecutorSpawnOptions): ExecutorProcess {
    const client = agent();
    if (!client) return viaFallback().spawn(spawnOptions);
    const startedAt = performance.now();
    return fromAgentProcess(
      client.spawn({
        argv: spawnOptions.argv,
        cwd: spawnOptions.cwd,
        env: spawnOptions.env,
        stdin: spawnOptions.stdin,
        onStdout: spawnOptions.onStdout,
        onStderr: spawnOptions.onStderr,
        signal: spawnOptions.signal,
        timeoutMs: spawnOptions.timeoutMs,
        maxOutputBytes: spawnOptions.maxOutputBytes,
        onOutputLimit: spawnOptions.onOutputLimit,
        forceKillAfterMs: spawnOptions.forceKillAfterMs,
        killGroupOnExit: spawnOptions.killGroupOnExit,
      }),
      startedAt,
      (signal, pgid) => {
        void spawn({ argv: ["sh", "-c", 'kill -s "$1" -- "-$2"', "sh", signal.slice(3), String(pgid)] })
          .wait()
          .catch(() => {});
      },
    );
  }

  return {
    get kind() {
      return connection && !connection.client.closed ? "agent" : "docker-exec";
    },
    get connected() {
      return connection !== undefined && !connection.client.closed;
    },
    get hello() {
      return connection && !connection.client.closed ? connection.hello : undefined;
    },
    spawn,
    run: (spawnOptions) => spawn(spawnOptions).wait(),
    async readFile(path, readOptions = {}) {
      const client = agent();
      if (!client) return viaFallback().readFile(path, readOptions);
      const maxBytes = readOptions.maxBytes ?? MAX_AGENT_FILE_BYTES;
      if (maxBytes > MAX_AGENT_FILE_BYTES) return readByCommand(path, maxBytes, readOptions.signal);
      try {
        return await client.readFile(path, { maxBytes, signal: readOptions.signal });
      } catch (error) {
        throw fileError(error);
      }
    },
    async writeFile(path, content, writeOptions = {}) {
      const client = agent();
      const size = typeof content === "string" ? Buffer.byteLength(content) : content.length;
      if (!client || size > MAX_AGENT_FILE_BYTES - 4096)
        return viaFallback().writeFile(path, content, writeOptions);
      try {
        await client.writeFile(path, content, { mode: writeOptions.mode, signal: writeOptions.signal });
      } catch (error) {
        throw fileError(error);
      }
    },
    restart,
    ping(pingOptions = {}) {
      const client = agent();
      if (!client)
        return Promise.reject(new PaiError("SANDBOX_PROTOCOL", "the sandbox agent is not connected"));
      return client.ping(pingOptions);
    },
    async close() {
      if (closed) return;
      closed = true;
      if (restartTimer) clearTimeout(restartTimer);
      const live = connection;
      connection = undefined;
      await Promise.all([
        live
          ? Promise.race([
              live.client.close(),
              new Promise((resolve) => setTimeout(resolve, CLOSE_WAIT_MS)),
            ]).then(() => live.session.close())
          : undefined,
        fallback?.close(),
      ]);
    },
  };
}
