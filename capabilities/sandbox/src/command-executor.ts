import type { Duplex } from "node:stream";
import type { AgentProcessResult, AgentSpawnOptions, TerminalSize } from "@pai/container-agent";
import type { SandboxSignal } from "./sandbox-facade.ts";

/**
 * Options of {@link CommandExecutor.spawn}: the in-container agent's `spawn` options, less what only the agent
 * decides (user, group, environment inheritance, the extra pipe), so the agent executor is a pass-through.
 */
export type ExecutorSpawnOptions = Omit<AgentSpawnOptions, "uid" | "gid" | "inheritEnv" | "onPipe" | "pty">;

/** Options of {@link CommandExecutor.openTerminal}: a command on a pseudo-terminal of `pty`'s size. */
export type ExecutorTerminalOptions = Pick<AgentSpawnOptions, "argv" | "cwd" | "env" | "onStdout"> & {
  pty: TerminalSize;
};

/** A command running on a terminal of an executor (see {@link CommandExecutor.openTerminal}). */
export interface ExecutorTerminal {
  /** The command's pid inside the container (its session and process group id too). */
  readonly pid: Promise<number>;
  /** How it ended (`signal` by name); rejects with `SANDBOX_SPAWN_FAILED` when it could not start. */
  readonly exit: Promise<{ exitCode: number | null; signal: string | null }>;
  /** Types bytes on the terminal, resolving when the connection has taken them. */
  write(data: Uint8Array | string): Promise<void>;
  /** Changes the terminal's size (SIGWINCH to its foreground job). */
  resize(size: TerminalSize): void;
  /** Signals the command's process group; a terminating signal is followed by SIGKILL after the grace. */
  kill(signal: SandboxSignal, options?: { forceKillAfterMs?: number | undefined }): void;
}

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

/** One file for {@link CommandExecutor.writeFiles}. */
export interface ExecutorFile {
  /** Absolute, already inside the workspace lexically (`resolveWorkspacePath`). */
  path: string;
  content: Uint8Array;
  /** Permission bits. */
  mode: number;
}

/**
 * How commands and small files reach a sandbox container — the one contract both executors keep, with the same
 * results and the same errors for the same request: the in-container agent (`createAgentExecutor`: ~1 ms a
 * command, files in one frame each) and `docker exec` (`createDockerExecExecutor`: ~60 ms, the agent's
 * fallback, files through small scripts). Paths are resolved inside the container, symlinks followed, and one
 * that leaves the workspace is refused with `PATH_OUTSIDE_WORKSPACE`; other file operations are the facade's
 * scripts, and bulk files go through the engine's archive API.
 */
export interface CommandExecutor {
  /** `agent` or `docker-exec`: which path commands take now. */
  readonly kind: "agent" | "docker-exec";
  /** Starts a command (synchronously returns its handle; failures surface through `pid` and `wait`). */
  spawn(options: ExecutorSpawnOptions): ExecutorProcess;
  /**
   * A file's bytes, or `null` when it does not exist. A directory, a non-regular file or one larger than
   * `maxBytes` is `INVALID_ARGUMENT`.
   */
  readFile(
    path: string,
    options: { maxBytes: number; signal?: AbortSignal | undefined },
  ): Promise<Uint8Array | null>;
  /**
   * Writes files as the sandbox user, creating parent directories and replacing what is there (a symlink is
   * replaced, not written through). Every target is checked before any is written: one that leaves the
   * workspace or is a directory fails the whole call.
   */
  writeFiles(files: readonly ExecutorFile[], options: { signal?: AbortSignal | undefined }): Promise<void>;
  /**
   * A new connection to `port` on the container's loopback, through the agent. Rejects with the agent's
   * `SANDBOX_PORT_CLOSED` when nothing listens there, `AGENT_REQUIRED` without an agent.
   */
  openPort(port: number, options: { signal?: AbortSignal | undefined }): Promise<Duplex>;
  /**
   * Starts a command on a new pseudo-terminal, as the sandbox user, killing what is left of its session when it
   * ends. Throws `AGENT_REQUIRED` without an agent.
   */
  openTerminal(options: ExecutorTerminalOptions): ExecutorTerminal;
  /** Stops every command it started and frees its connections. */
  close(): Promise<void>;
}
