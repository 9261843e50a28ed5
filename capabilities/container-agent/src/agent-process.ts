import type { AgentSignal, TerminalSize } from "./agent-protocol.ts";

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
  /**
   * Runs the command on a new pseudo-terminal of this size instead of pipes: its stdin, stdout and stderr, with the
   * command leading a session of its own (a shell gets job control). Everything it writes arrives as stdout (with
   * the terminal's `\r\n`); {@link AgentProcess.writeStdin} types on it (byte 0x03 is Ctrl-C, which the terminal
   * turns into SIGINT for its foreground job); {@link AgentProcess.resize} changes its size. Closing stdin only
   * stops the typing. When the command exits, the terminal is hung up.
   */
  pty?: TerminalSize | undefined;
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
  /**
   * Changes the size of the command's terminal (needs `pty`); the kernel sends SIGWINCH to its foreground job.
   * Throws `INVALID_ARGUMENT` for a size outside 1–65535 or a command without a terminal; does nothing once it
   * has ended.
   */
  resize(size: TerminalSize): void;
}

/** The output kept per stream when `maxOutputBytes` is not given. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
