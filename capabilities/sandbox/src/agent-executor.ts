import type { Duplex } from "node:stream";
import {
  AGENT_PATH,
  type AgentClient,
  type AgentDialBack,
  type AgentHello,
  type AgentProcess,
  type ContainerAgentConnection,
  ContainerAgentError,
  connectContainerAgent,
  MAX_FRAME_PAYLOAD_BYTES,
  signalName,
} from "@pai/container-agent";
import type { ContainerDriver } from "@pai/pool";
import type {
  CommandExecutor,
  ExecutorFile,
  ExecutorProcess,
  ExecutorProcessResult,
  ExecutorSpawnOptions,
  ExecutorTerminal,
  ExecutorTerminalOptions,
} from "./command-executor.ts";
import { createDockerExecExecutor } from "./docker-exec-executor.ts";
import {
  invalidTarget,
  outsideWorkspace,
  overLimit,
  readFileByScript,
  writeFilesByScript,
} from "./run-file-script.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxSignal } from "./sandbox-facade.ts";

/** Options of {@link createAgentExecutor}. */
export interface AgentExecutorOptions {
  driver: ContainerDriver;
  containerId: string;
  /** The agent binary inside the container (on the engine's shared read-only volume). @default "/opt/pai/pai-agent" */
  agentPath?: string | undefined;
  /**
   * `uid:gid` commands run as on the `docker exec` fallback; the agent itself runs as the container's user (root
   * in a container made with `agentSupervisorSpec`) and runs commands as its default user, `SANDBOX_USER`.
   * @default "1000:1000" (`SANDBOX_USER`)
   */
  user?: string | undefined;
  /** The directory file operations are confined to. @default "/workspace" */
  workspace?: string | undefined;
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
  /**
   * Runs on every new agent connection before it serves commands (e.g. to make it listen for the egress
   * proxy). A failure fails that connection.
   */
  onConnect?: ((client: AgentClient, signal: AbortSignal | undefined) => Promise<unknown>) | undefined;
  /**
   * The connection of the container's own agent, which dials the host as the container starts (see
   * `prepareAgentDial`): used for the first connection instead of a `docker exec`. When it fails, the agent is
   * started with `docker exec` as usual; so is every later one.
   */
  dialled?: ((signal: AbortSignal | undefined) => Promise<Duplex>) | undefined;
  /**
   * A fresh way back to this host for one port connection (see `AgentDial.dialBack`), in a container that mounts
   * this process's dial socket: `openPort` then has the agent relay the connection there instead of carrying it in
   * frames. Whoever started the agent (it dialled in, or `docker exec`), the mount is the container's.
   */
  dialBack?: (() => AgentDialBack) | undefined;
  /** Aborts connecting. The live connection is not tied to it. */
  signal?: AbortSignal | undefined;
}

/** A {@link CommandExecutor} on the in-container agent, with `docker exec` as its fallback. */
export interface AgentExecutor extends CommandExecutor {
  /** True while the agent is connected. */
  readonly connected: boolean;
  /** The agent's HELLO (its pid inside the container, user, version), while connected. */
  readonly hello: AgentHello | undefined;
  /** Starts a fresh agent session (through `docker exec`) unless one is connected. */
  restart(options?: { signal?: AbortSignal | undefined }): Promise<void>;
  /** Round trip through the agent in milliseconds; rejects when it is not connected. */
  ping(options?: { signal?: AbortSignal | undefined }): Promise<number>;
}

/** The largest file one frame carries (a little under the 1 MiB payload, for the paths). */
const FRAME_FILE_BYTES = MAX_FRAME_PAYLOAD_BYTES - 8192;

/** An agent's file error as the script path reports the same case. */
function fileError(error: unknown, path: string, workspace: string): unknown {
  if (!ContainerAgentError.hasCode(error, "SANDBOX_FILE_FAILED")) return error;
  switch (error.details?.errnoName) {
    case "EXDEV":
      return outsideWorkspace(path, error.message, workspace);
    case "EISDIR":
      return invalidTarget(path, "is a directory");
    case "EINVAL":
      return invalidTarget(path, "is not a regular file");
    case "EFBIG":
      return overLimit(path);
    default:
      return new SandboxError(
        "CONTAINER_FAILED",
        `sandbox file operation on ${path} failed: ${error.message}`,
        {
          cause: error,
          details: { path, errnoName: error.details?.errnoName },
        },
      );
  }
}

/** A spawn the agent refused, as the result a shell would have given (127 not found, 126 not runnable, 2 bad cwd). */
function refusedSpawn(error: ContainerAgentError, startedAt: number): ExecutorProcessResult | undefined {
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
    stdout: new Uint8Array(0),
    stderr: Buffer.from(`${error.message}\n`),
    truncated: { stdout: false, stderr: false },
    omittedBytes: { stdout: 0, stderr: 0 },
    durationMs: Math.round((performance.now() - startedAt) * 100) / 100,
    terminationReason: "exit",
  };
}

/** The agent's refusal to start a command, as the sandbox reports it (`SANDBOX_SPAWN_FAILED`); other errors as they are. */
function spawnError(error: unknown): unknown {
  if (!ContainerAgentError.hasCode(error, "SANDBOX_SPAWN_FAILED")) return error;
  return new SandboxError("SANDBOX_SPAWN_FAILED", error.message, {
    cause: error,
    details: error.details ?? {},
  });
}

/** What a call that needs the agent gets while a lost one is being restarted. */
function notConnected(): SandboxError {
  return new SandboxError("SANDBOX_PROTOCOL", "the sandbox agent is not connected (it is being restarted)");
}

function fromAgentProcess(
  process: AgentProcess,
  startedAt: number,
  signalGroupAfterExit: (signal: SandboxSignal, pgid: number) => void,
): ExecutorProcess {
  let exited = false;
  const result = process.wait().then(
    ({ exitCode, signal, ...rest }): ExecutorProcessResult => ({
      ...rest,
      // A command that never started (aborted before) has neither; -1 says so, as docker exec would not run it.
      exitCode: exitCode ?? (signal !== null ? 128 + signal : -1),
    }),
    (error: unknown) => {
      if (ContainerAgentError.hasCode(error, "SANDBOX_SPAWN_FAILED")) {
        const refused = refusedSpawn(error, startedAt);
        if (refused) return refused;
      }
      throw spawnError(error);
    },
  );
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
 * Starts `pai-agent` inside a running container (one `docker exec` session, see `connectContainerAgent`; or
 * takes the connection of the agent that dialled in as the container's main process) and runs commands through it: ~1 ms per command instead of `docker exec`'s ~60 ms; files up to a frame's size are
 * one READ_FILE/WRITE_FILE frame each (larger ones go through the scripts). When the agent is gone
 * (killed, or its session broke) commands fall back to `docker exec` while a fresh agent is started in the
 * background; both paths give the same results.
 *
 * @example
 * const executor = await createAgentExecutor({ driver, containerId });
 * const result = await executor.spawn({ argv: ["true"], timeoutMs: 5_000 }).wait();
 */
export async function createAgentExecutor(options: AgentExecutorOptions): Promise<AgentExecutor> {
  const { driver, containerId } = options;
  const restartIntervalMs = options.restartIntervalMs ?? 1000;
  let connection: ContainerAgentConnection | undefined;
  let connecting: Promise<void> | undefined;
  let lastAttemptAt = Number.NEGATIVE_INFINITY;
  let restartTimer: ReturnType<typeof setTimeout> | undefined;
  let fallback: CommandExecutor | undefined;
  let closed = false;
  let dial = options.dialled;

  /** The dialled agent's connection, once; `undefined` (start one with docker exec) when there is none. */
  async function takeDialled(signal: AbortSignal | undefined): Promise<Duplex | undefined> {
    const dialled = dial;
    dial = undefined;
    try {
      return await dialled?.(signal);
    } catch (error) {
      if (signal?.aborted) throw error;
      return undefined;
    }
  }

  async function connect(signal: AbortSignal | undefined): Promise<ContainerAgentConnection> {
    let live: ContainerAgentConnection | undefined;
    const connected = await connectContainerAgent({
      driver,
      containerId,
      agentPath: options.agentPath ?? AGENT_PATH,
      helloTimeoutMs: options.helloTimeoutMs,
      dialled: await takeDialled(signal),
      signal,
      onClose: () => {
        if (live && connection === live) {
          // Lost (killed, or its session broke): commands go through docker exec while a fresh agent starts.
          connection = undefined;
          if (!closed) setTimeout(() => agent(), 0).unref();
        }
      },
    });
    try {
      await options.onConnect?.(connected.client, signal);
    } catch (error) {
      await connected.close();
      throw error;
    }
    live = connected;
    return connected;
  }

  function restart(restartOptions: { signal?: AbortSignal | undefined } = {}): Promise<void> {
    if (closed)
      return Promise.reject(new SandboxError("CAPABILITY_UNAVAILABLE", "the sandbox executor is closed"));
    if (connection && !connection.client.closed) return Promise.resolve();
    connecting ??= (async () => {
      lastAttemptAt = performance.now();
      try {
        const live = await connect(restartOptions.signal);
        if (closed) {
          void live.close();
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
      workspace: options.workspace,
      ...(options.user !== undefined ? { user: options.user } : {}),
    });
    return fallback;
  }

  try {
    await restart(options.signal ? { signal: options.signal } : {});
  } catch (error) {
    if (options.requireAgent ?? true) throw error;
  }

  function spawn(spawnOptions: ExecutorSpawnOptions): ExecutorProcess {
    const client = agent();
    if (!client) return viaFallback().spawn(spawnOptions);
    const startedAt = performance.now();
    return fromAgentProcess(client.spawn(spawnOptions), startedAt, (signal, pgid) => {
      void spawn({ argv: ["sh", "-c", 'kill -s "$1" -- "-$2"', "sh", signal.slice(3), String(pgid)] })
        .wait()
        .catch(() => {});
    });
  }

  const workspace = options.workspace ?? "/workspace";

  async function readFile(
    path: string,
    readOptions: { maxBytes: number; signal?: AbortSignal | undefined },
  ): Promise<Uint8Array | null> {
    const client = agent();
    if (!client) return viaFallback().readFile(path, readOptions);
    try {
      return await client.readFile(path, {
        root: workspace,
        maxBytes: Math.min(readOptions.maxBytes, MAX_FRAME_PAYLOAD_BYTES),
        signal: readOptions.signal,
      });
    } catch (error) {
      // Larger than a frame but within the caller's limit: stream it through `cat`.
      if (
        readOptions.maxBytes > MAX_FRAME_PAYLOAD_BYTES &&
        ContainerAgentError.hasCode(error, "SANDBOX_FILE_FAILED") &&
        error.details?.errnoName === "EFBIG"
      ) {
        return readFileByScript(spawn, workspace, path, readOptions);
      }
      throw fileError(error, path, workspace);
    }
  }

  async function writeFiles(
    files: readonly ExecutorFile[],
    writeOptions: { signal?: AbortSignal | undefined },
  ): Promise<void> {
    const client = agent();
    if (!client) return viaFallback().writeFiles(files, writeOptions);
    if (files.some((file) => file.content.length > FRAME_FILE_BYTES)) {
      return writeFilesByScript(spawn, workspace, files, writeOptions);
    }
    const each = (checkOnly: boolean) =>
      Promise.all(
        files.map((file) =>
          client
            .writeFile(file.path, file.content, {
              root: workspace,
              mode: file.mode,
              checkOnly,
              signal: writeOptions.signal,
            })
            .catch((error: unknown) => {
              throw fileError(error, file.path, workspace);
            }),
        ),
      );
    // Every target is checked before any is written, as the script does.
    if (files.length > 1) await each(true);
    await each(false);
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
    readFile,
    writeFiles,
    openPort(port, portOptions) {
      const client = agent();
      if (!client) return Promise.reject(notConnected());
      const hostSocket = options.dialBack?.();
      return hostSocket
        ? client.connect(port, { ...portOptions, hostSocket })
        : client.connect(port, portOptions);
    },
    openTerminal(terminalOptions: ExecutorTerminalOptions): ExecutorTerminal {
      const client = agent();
      if (!client) throw notConnected();
      const process = client.spawn({
        ...terminalOptions,
        stdin: "pipe",
        maxOutputBytes: 0,
        killGroupOnExit: true,
      });
      const exit = process.wait().then(
        ({ exitCode, signal }) => ({ exitCode, signal: signal === null ? null : signalName(signal) }),
        (error: unknown) => {
          throw spawnError(error);
        },
      );
      return {
        pid: process.pid,
        exit,
        write: (data) => process.writeStdin(data),
        resize: (size) => process.resize(size),
        kill: (signal, killOptions) => process.kill(signal, killOptions),
      };
    },
    restart,
    ping(pingOptions = {}) {
      const client = agent();
      if (!client) return Promise.reject(notConnected());
      return client.ping(pingOptions);
    },
    async close() {
      if (closed) return;
      closed = true;
      if (restartTimer) clearTimeout(restartTimer);
      const live = connection;
      connection = undefined;
      await Promise.all([live?.close(), fallback?.close()]);
    },
  };
}
