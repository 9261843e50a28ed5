import type { Readable } from "node:stream";
import type { ExposePortOptions, PortPreview } from "@pai/core";
import type { CodeInterpreter } from "./code-interpreter/code-context.ts";

/** Why a command ended: by itself, or stopped by its timeout, an abort/kill, or the output limit. */
export type TerminationReason = "exit" | "timeout" | "abort" | "output-limit";

/** A signal a process can be sent, by name. */
export type SandboxSignal = "SIGTERM" | "SIGKILL" | "SIGINT" | "SIGHUP" | "SIGQUIT" | "SIGUSR1" | "SIGUSR2";

/** Options of {@link SandboxFacade.runCommand} and {@link SandboxFacade.spawn}. */
export interface RunCommandOptions {
  /**
   * A shell command line (run with the sandbox's shell, `bash -c` by default) when `args` is absent; the
   * program to execute directly (looked up in `PATH`, no shell) when `args` is given.
   */
  command: string;
  /** Arguments: when present, `command` is executed directly with them as its argv. */
  args?: readonly string[];
  /**
   * Working directory. Relative paths resolve against the workspace.
   * @default the workspace (`/workspace`)
   */
  cwd?: string;
  /** Extra environment variables, over the sandbox's own (`HOME=/workspace`, `PATH`, `LANG`). */
  env?: Readonly<Record<string, string>>;
  /** Written to the command's stdin, which is then closed. Without it the command reads EOF. */
  stdin?: string | Uint8Array;
  /** Kills the command's whole process group (TERM, then KILL) after this long; the result says `timeout`. */
  timeoutMs?: number;
  /**
   * Aborting kills the command's whole process group (TERM, then KILL); the result says `abort`. A signal that
   * is already aborted rejects the call with its reason (nothing runs).
   */
  signal?: AbortSignal;
  /** Every stdout chunk as it arrives (UTF-8 decoded across chunk boundaries), uncapped. */
  onStdout?: (chunk: string) => void;
  /** Every stderr chunk as it arrives (UTF-8 decoded across chunk boundaries), uncapped. */
  onStderr?: (chunk: string) => void;
  /**
   * Bytes kept per stream in the result: the first half and the last half, with `truncated` set.
   * @default the binding's `maxOutputBytes` (1 MiB)
   */
  maxOutputBytes?: number;
  /**
   * What happens when a stream outgrows `maxOutputBytes`: kill the command and report `output-limit`
   * (`'kill'`), or keep it running and drop the middle of the output (`'truncate'`).
   * @default "kill"
   */
  onOutputLimit?: "kill" | "truncate";
  /**
   * Grace between TERM and KILL when a timeout, abort or the output limit stops the command.
   * @default 2000
   */
  forceKillAfterMs?: number;
}

/** How a command ended. A non-zero exit code is a value, not an error. */
export interface CommandResult {
  /** Exit code; `128 + n` when signal `n` ended it (137 for SIGKILL, as a shell reports it). */
  exitCode: number;
  /** Kept stdout, UTF-8 decoded (head then tail when truncated). */
  stdout: string;
  /** Kept stderr, UTF-8 decoded (head then tail when truncated). */
  stderr: string;
  /** From the request to the end of the command, measured on the host. */
  durationMs: number;
  terminationReason: TerminationReason;
  /** Which streams outgrew `maxOutputBytes` and lost their middle. */
  truncated: { stdout: boolean; stderr: boolean };
  /** Bytes dropped from the middle of each stream. */
  omittedBytes: { stdout: number; stderr: number };
  /** True when the kernel's OOM killer ended the command (it hit the sandbox's memory limit). */
  oomKilled?: boolean;
}

/** Options of {@link SandboxFacade.spawn}: those of `runCommand`, with stdin that can stay open. */
export interface SpawnCommandOptions extends Omit<RunCommandOptions, "stdin"> {
  /**
   * Stdin: text or bytes to send and then close, or `'pipe'` to keep it open for
   * {@link SandboxProcess.writeStdin}.
   * @default nothing (the command reads EOF)
   */
  stdin?: string | Uint8Array | "pipe";
  /**
   * Unread bytes `stdout`/`stderr` streams buffer each; chunks past it are dropped from the stream (they still
   * reach the callbacks and the result).
   * @default 1048576
   */
  maxBufferedBytes?: number;
  /**
   * Output limit policy; background processes are usually long-lived, so they keep running by default.
   * @default "truncate"
   */
  onOutputLimit?: "kill" | "truncate";
}

/** A command running in the background; see {@link SandboxFacade.spawn}. */
export interface SandboxProcess {
  /** The command's pid inside the container (its process group id too), when the executor reports one. */
  readonly pid: number | undefined;
  /** Its stdout from the start, as bytes (a web stream, also async iterable). */
  readonly stdout: ReadableStream<Uint8Array>;
  /** Its stderr from the start, as bytes. */
  readonly stderr: ReadableStream<Uint8Array>;
  /** The output kept so far (capped like the result). */
  output(): { stdout: string; stderr: string };
  /** Resolves when the command ends. */
  wait(): Promise<CommandResult>;
  /**
   * Signals the command's whole process group (also after the command itself exited, reaching what it left
   * running); a terminating signal is followed by SIGKILL after `forceKillAfterMs`. Resolves once the command
   * has ended (or at once for a non-terminating signal).
   * @default signal "SIGTERM"
   */
  kill(signal?: SandboxSignal, options?: { forceKillAfterMs?: number }): Promise<void>;
  /** Sends bytes to stdin (needs `stdin: 'pipe'`), waiting for the connection to take them. */
  writeStdin(data: string | Uint8Array): Promise<void>;
  /** Closes stdin after what was written. */
  closeStdin(): Promise<void>;
}

/** One file for {@link SandboxFacade.writeFiles}. */
export interface WriteFileEntry {
  /** Relative to the workspace, or absolute inside it. */
  path: string;
  content: string | Uint8Array;
  /** Permission bits. @default 0o644 */
  mode?: number;
}

/** The type of a file system entry. */
export type SandboxFileType = "file" | "directory" | "symlink" | "other";

/** One row of {@link SandboxFacade.listFiles}. */
export interface SandboxFileEntry {
  /** Absolute path inside the container, e.g. `/workspace/src/index.ts`. */
  path: string;
  /** The last path element. */
  name: string;
  /** Symbolic links are reported as `symlink` and not followed. */
  type: SandboxFileType;
  /** Size in bytes (a symlink's is the length of its target). */
  size: number;
}

/** What {@link SandboxFacade.stat} reports (symbolic links followed). */
export interface SandboxFileStat {
  /** The resolved absolute path. */
  path: string;
  type: Exclude<SandboxFileType, "symlink">;
  size: number;
  /** Permission bits, e.g. `0o644`. */
  mode: number;
  /** Last modification, in milliseconds since the epoch. */
  mtimeMs: number;
}

/** Common options of the file methods. */
export interface SandboxFileOptions {
  signal?: AbortSignal;
}

/** Options of {@link SandboxFacade.readFile}. */
export interface ReadFileOptions extends SandboxFileOptions {
  /**
   * Largest file accepted; a larger one fails with `INVALID_ARGUMENT` (use `downloadDirectory` for bulk).
   * @default 67108864 (64 MiB)
   */
  maxBytes?: number;
}

/** What {@link SandboxFacade.uploadDirectory} reports. */
export interface UploadResult {
  /** Entries written (files, directories and symlinks). */
  entries: number;
  /** Bytes of file content written. */
  bytes: number;
}

/** About the sandbox behind a facade. */
export interface SandboxInfo {
  /** The container id. */
  id: string;
  /** The workspace directory, `/workspace`. */
  workspace: string;
  /** The image the container runs. */
  image: string;
  /** How commands reach the container: `docker-exec` (or `agent`). */
  executor: string;
}

/** Options of {@link SandboxFacade.exposePort}. */
export interface SandboxExposePortOptions extends ExposePortOptions {
  /** A signal already aborted rejects the call with its reason. */
  signal?: AbortSignal;
}

/** A terminal's size in character cells. */
export interface TerminalDimensions {
  /** Columns, 1–65535. */
  cols: number;
  /** Rows, 1–65535. */
  rows: number;
}

/** Options of {@link SandboxFacade.openTerminal}. */
export interface OpenTerminalOptions extends TerminalDimensions {
  /**
   * A command line to run on the terminal (with the sandbox's shell, `bash -c` by default).
   * @default the user's login shell, `bash -l`
   */
  command?: string;
  /**
   * Working directory. Relative paths resolve against the workspace.
   * @default the workspace (`/workspace`)
   */
  cwd?: string;
  /** Extra environment variables, over the sandbox's own and `TERM=xterm-256color`. */
  env?: Readonly<Record<string, string>>;
  /** Aborting closes the session (as `close()` does). A signal already aborted rejects the call. */
  signal?: AbortSignal;
  /**
   * Unread output bytes `output` buffers. Past it, output is dropped (the terminal's output is not flow-controlled
   * end to end) and, once the reader catches up, a line `[pai: N bytes of terminal output dropped]` marks the gap.
   * @default 1048576
   */
  maxBufferedBytes?: number;
}

/** A shell (or another command) on a pseudo-terminal in the sandbox; see {@link SandboxFacade.openTerminal}. */
export interface TerminalSession {
  /** The command's pid inside the container (its session and process group id too). */
  readonly pid: number;
  /** Types on the terminal: keystrokes as text or bytes (`"\x03"` is Ctrl-C, `"\x04"` Ctrl-D at an empty line). */
  write(data: string | Uint8Array): Promise<void>;
  /** Changes the terminal's size; its foreground program gets SIGWINCH. */
  resize(size: TerminalDimensions): Promise<void>;
  /** Sends a signal to the command's process group (no SIGKILL follows). */
  signal(signal: SandboxSignal): Promise<void>;
  /**
   * Everything the terminal shows, as bytes (escape sequences included, `\r\n` line ends): a web stream that ends
   * when the command exits. Bounded: see `maxBufferedBytes`.
   */
  readonly output: ReadableStream<Uint8Array>;
  /** How the command ended: its exit code, or the name of the signal that killed it. */
  readonly exit: Promise<{ exitCode: number | null; signal: string | null }>;
  /**
   * Ends the session: SIGHUP to the command's process group, SIGKILL after a short grace (2 s), and every process
   * left in its session killed; resolves once the command has exited.
   */
  close(): Promise<void>;
}

/**
 * What tools see at `ctx.capabilities.sandbox`: a Linux container with a writable `/workspace`, no network by
 * default, running as a non-root user. Every member is an async method (the runtime provisions the container
 * on the first call).
 *
 * Paths: relative paths resolve against the workspace; a path that leaves it — `..`, an absolute path
 * elsewhere, or a symlink in the workspace pointing out — is refused with `SandboxError('PATH_OUTSIDE_WORKSPACE')`.
 * Symlinks are resolved inside the container.
 *
 * Code contexts (`createCodeContext`, `runCode`, ...; see {@link CodeInterpreter}) keep a Python, JavaScript or
 * TypeScript interpreter alive between calls and return rich results (charts as PNG, tables as HTML).
 *
 * Present it to AI SDK tools with `toSandboxSession(facade)`.
 */
export interface SandboxFacade extends CodeInterpreter {
  /**
   * Runs a command to its end. A non-zero exit code, a timeout, an abort and the output limit are values
   * (`terminationReason`), not errors; a timeout or abort kills the command's whole process group. When the
   * command exits, whatever it left running in the background of its process group is killed too (a fork bomb
   * does not outlive it): start long-lived processes with {@link SandboxFacade.spawn}.
   * @example
   * const { exitCode, stdout } = await sandbox.runCommand({ command: "ls -la" });
   * await sandbox.runCommand({ command: "python3", args: ["main.py"], timeoutMs: 10_000, signal });
   */
  runCommand(options: RunCommandOptions): Promise<CommandResult>;
  /**
   * Starts a command in the background and returns its handle once it runs. Its `wait()` resolves when the
   * command exits; processes it started keep running (`kill()` still reaches its process group).
   */
  spawn(options: SpawnCommandOptions): Promise<SandboxProcess>;
  /** Writes files (creating parent directories, replacing existing files). */
  writeFiles(files: readonly WriteFileEntry[], options?: SandboxFileOptions): Promise<void>;
  /** A file's bytes, or `null` when it does not exist. */
  readFile(path: string, options?: ReadFileOptions): Promise<Uint8Array | null>;
  /** A file's text (UTF-8), or `null` when it does not exist. */
  readTextFile(path: string, options?: ReadFileOptions): Promise<string | null>;
  /**
   * The entries of a directory (of its whole tree with `recursive`), or `null` when it does not exist.
   * Symlinks are listed, not followed.
   */
  listFiles(
    directory: string,
    options?: SandboxFileOptions & { recursive?: boolean },
  ): Promise<SandboxFileEntry[] | null>;
  /** Type, size, mode and mtime of a path (symlinks followed), or `null` when it does not exist. */
  stat(path: string, options?: SandboxFileOptions): Promise<SandboxFileStat | null>;
  /**
   * Deletes a file or symlink (a directory only with `recursive`). Resolves `false` when nothing was there.
   */
  removeFile(path: string, options?: SandboxFileOptions & { recursive?: boolean }): Promise<boolean>;
  /**
   * Extracts a directory into `targetDirectory` (created if missing): a host directory path, or a tar stream.
   * Entries are checked (no absolute names, no `..`, no writing through symlinks, only files, directories and
   * symlinks) and written as the sandbox user.
   * @default targetDirectory the workspace
   */
  uploadDirectory(
    source: string | Readable,
    targetDirectory?: string,
    options?: SandboxFileOptions,
  ): Promise<UploadResult>;
  /** A tar stream of a directory's contents (entry names relative to it). */
  downloadDirectory(directory: string, options?: SandboxFileOptions): Promise<Readable>;
  /** The container id, workspace, image and executor. */
  info(): Promise<SandboxInfo>;
  /**
   * Opens a preview of a server listening on `port` inside the sandbox: a URL a browser opens, on an origin of its
   * own, whose requests (HTTP, streaming, WebSocket upgrades) reach the server over the sandbox's agent connection
   * (the container keeps no network). Served by the runtime's HTTP handler (`createPaiHandler`); ends with the
   * lease, on `close()` and at `expiresAt`.
   * @throws SandboxError `INVALID_ARGUMENT` for a port outside 1–65535; `PREVIEWS_UNAVAILABLE` where no runtime
   * serves previews (the facade used outside a runtime, or a runtime without the handler)
   * @example
   * await sandbox.spawn({ command: "python3 -m http.server 8000" });
   * const { url } = await sandbox.exposePort(8000);
   */
  exposePort(port: number, options?: SandboxExposePortOptions): Promise<PortPreview>;
  /**
   * Opens a terminal in the sandbox: a login shell (or `command`) on a new pseudo-terminal, as the sandbox user with
   * its limits and environment, in the workspace. Needs the agent executor (`AGENT_REQUIRED` on `docker-exec`).
   * @example
   * const terminal = await sandbox.openTerminal({ cols: 80, rows: 24 });
   * await terminal.write("echo hi\n");
   * await terminal.close();
   */
  openTerminal(options: OpenTerminalOptions): Promise<TerminalSession>;
}
