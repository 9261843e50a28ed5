import type { AgentProcessResult } from "./agent/agent-client.ts";
import type { SandboxSignal } from "./sandbox-facade.ts";

/**
 * Options of {@link CommandExecutor.spawn}. The same shape as the in-container agent client's `spawn`
 * (`createAgentClient` in `./agent/`), so an agent-backed executor is a thin pass-through.
 */
export interface ExecutorSpawnOptions {
  /** Program and arguments; the program is looked up in `PATH`. No shell unless argv runs one. */
  argv: readonly string[];
  /** Absolute working directory. @default the container's working directory */
  cwd?: string | undefined;
  /** Environment variables over the container's own. */
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /**
   * Bytes or text to send and then close, or `'pipe'` to keep stdin open for `writeStdin`.
   * @default nothing (the command reads EOF)
   */
  stdin?: Uint8Array | string | "pipe" | undefined;
  /** Every stdout chunk as it arrives, uncapped. */
  onStdout?: ((chunk: Uint8Array) => void) | undefined;
  /** Every stderr chunk as it arrives, uncapped. */
  onStderr?: ((chunk: Uint8Array) => void) | undefined;
  /** Aborting kills the command's process group (TERM, then KILL); the result says `abort`. */
  signal?: AbortSignal | undefined;
  /** Kill the process group after this long (TERM, then KILL); the result says `timeout`. */
  timeoutMs?: number | undefined;
  /** Bytes kept per stream: head and tail halves, the middle dropped. @default 1048576 */
  maxOutputBytes?: number | undefined;
  /** Outgrowing `maxOutputBytes`: keep running (`'truncate'`) or kill and report `output-limit`. @default "truncate" */
  onOutputLimit?: "truncate" | "kill" | undefined;
  /** Grace between TERM and KILL. @default 2000 */
  forceKillAfterMs?: number | undefined;
  /**
   * SIGKILL what is left of the command's process group once the command itself has exited (processes it put
   * in the background), so nothing outlives it. Processes that made their own session escape.
   * @default false
   */
  killGroupOnExit?: boolean | undefined;
}

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
