import type { AgentProcessResult, AgentSpawnOptions } from "@pai/container-agent";
import type { SandboxSignal } from "./sandbox-facade.ts";

/**
 * Options of {@link CommandExecutor.spawn}: the in-container agent's `spawn` options, less what only the agent
 * decides (user, group, environment inheritance, the extra pipe), so the agent executor is a pass-through.
 */
export type ExecutorSpawnOptions = Omit<AgentSpawnOptions, "uid" | "gid" | "inheritEnv" | "onPipe">;

/**
 * How a command ended, the same from both executors: `exitCode` as a shell reports it (`128 + n` when signal
 * `n` ended it), the kept output, and why it ended.
 */
export type ExecutorProcessResult = Omit<AgentProcessResult, "exitCode" | "signal"> & { exitCode: number };

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
 * How commands reach a sandbox container — the one contract both executors keep, with the same results for the
 * same command: the in-container agent (`createAgentExecutor`, ~1 ms a command) and `docker exec`
 * (`createDockerExecExecutor`, ~60 ms, the agent's fallback). File operations are commands too (the facade's
 * scripts), and bulk files go through the engine's archive API, so an executor only runs commands.
 */
export interface CommandExecutor {
  /** `agent` or `docker-exec`: which path commands take now. */
  readonly kind: "agent" | "docker-exec";
  /** Starts a command (synchronously returns its handle; failures surface through `pid` and `wait`). */
  spawn(options: ExecutorSpawnOptions): ExecutorProcess;
  /** Stops every command it started and frees its connections. */
  close(): Promise<void>;
}
