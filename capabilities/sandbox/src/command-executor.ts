import type { AgentProcessResult, AgentSpawnOptions } from "./agent/agent-client.ts";
import type { SandboxSignal } from "./sandbox-facade.ts";

/**
 * Options of {@link CommandExecutor.spawn}: the in-container agent client's `spawn` options, less what only
 * the agent decides (user, group, environment inheritance), so an agent-backed executor is a pass-through.
 */
export type ExecutorSpawnOptions = Omit<AgentSpawnOptions, "uid" | "gid" | "inheritEnv">;

/**
 * How an executor's command ended: the agent's result shape, which the `docker exec` executor reproduces
 * (`exitCode` is `null` when a signal ended it and the executor knows; `docker exec` reports 128 + n).
 */
export type ExecutorProcessResult = AgentProcessResult;

/** A running command of an executor. */
export interface ExecutorProcess {
  /** The command's pid inside the container (also its process group id). */
  readonly pid: Promise<number>;
  /** Resolves when the command ends; rejects when it could not be run at all (container gone). */
  wait(): Promise<ExecutorProcessResult>;
  /**
   * Signals the process group; terminating signals escalate to SIGKILL after the grace. After the command has
   * exited, the signal still goes to what is left of its group.
   */
  kill(signal?: SandboxSignal, options?: { forceKillAfterMs?: number | undefined }): void;
  /** Writes to stdin (`stdin: 'pipe'`), resolving when the connection has taken the bytes. */
  writeStdin(data: Uint8Array | string): Promise<void>;
  /** Closes stdin. */
  closeStdin(): Promise<void>;
}

/**
 * How commands reach a sandbox container. `createDockerExecExecutor` uses `docker exec`; an executor on the
 * in-container agent has the same interface.
 */
export interface CommandExecutor {
  /** `docker-exec` or `agent`. */
  readonly kind: string;
  /** Starts a command (synchronously returns its handle; failures surface through `pid` and `wait`). */
  spawn(options: ExecutorSpawnOptions): ExecutorProcess;
  /** Spawns and waits. */
  run(options: ExecutorSpawnOptions): Promise<ExecutorProcessResult>;
  /** A small file's bytes, or `null` when it does not exist. No workspace check: callers resolve paths first. */
  readFile(
    path: string,
    options?: { maxBytes?: number | undefined; signal?: AbortSignal | undefined },
  ): Promise<Uint8Array | null>;
  /** Writes a file, creating parent directories. No workspace check: callers resolve paths first. */
  writeFile(
    path: string,
    content: Uint8Array | string,
    options?: { mode?: number | undefined; signal?: AbortSignal | undefined },
  ): Promise<void>;
  /** Stops every command it started and frees its connections. */
  close(): Promise<void>;
}
