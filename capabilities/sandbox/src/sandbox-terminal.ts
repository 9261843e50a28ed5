import type { CommandExecutor } from "./command-executor.ts";
import { createOutputStream } from "./output-stream.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { OpenTerminalOptions, TerminalDimensions, TerminalSession } from "./sandbox-facade.ts";
import { resolveWorkingDirectory } from "./workspace-path.ts";

const DEFAULT_MAX_BUFFERED_BYTES = 1024 * 1024;
/** Between SIGHUP and SIGKILL when a session is closed. */
const CLOSE_GRACE_MS = 2000;
const encoder = new TextEncoder();

/** Checks a terminal size: integers from 1 to 65535, else `INVALID_ARGUMENT`. */
function checkSize(size: TerminalDimensions): TerminalDimensions {
  const { cols, rows } = size ?? {};
  for (const value of [cols, rows]) {
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 0xffff) {
      throw new SandboxError(
        "INVALID_ARGUMENT",
        `a terminal's cols and rows are integers from 1 to 65535, got ${String(cols)} x ${String(rows)}`,
      );
    }
  }
  return { cols, rows };
}

/** Options of {@link openSandboxTerminal}. */
export interface SandboxTerminalOptions {
  executor: CommandExecutor;
  workspace: string;
  /** argv prefix that runs `command`. */
  shell: readonly string[];
  terminal: OpenTerminalOptions;
}

/** `SandboxFacade.openTerminal`: the command on a new pseudo-terminal, once it runs. */
export async function openSandboxTerminal(options: SandboxTerminalOptions): Promise<TerminalSession> {
  const { executor, workspace, shell, terminal: request } = options;
  const size = checkSize(request);
  const { signal } = request;
  signal?.throwIfAborted();
  const output = createOutputStream(request.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES, {
    marker: (dropped) => encoder.encode(`\r\n[pai: ${dropped} bytes of terminal output dropped]\r\n`),
  });
  const running = executor.openTerminal({
    argv: request.command !== undefined ? [...shell, request.command] : ["bash", "-l"],
    cwd: request.cwd !== undefined ? resolveWorkingDirectory(request.cwd, workspace) : workspace,
    env: { TERM: "xterm-256color", ...request.env },
    pty: size,
    onStdout: (chunk) => output.push(chunk),
  });
  // The output ends with the command (the agent sends all of it before the exit).
  const exit = running.exit.finally(() => output.close());
  exit.catch(() => {});
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      running.kill("SIGHUP", { forceKillAfterMs: CLOSE_GRACE_MS });
      await exit.catch(() => undefined);
    })();
    return closing;
  };
  const onAbort = () => void close();
  signal?.addEventListener("abort", onAbort, { once: true });
  void exit.catch(() => undefined).then(() => signal?.removeEventListener("abort", onAbort));
  // No pid: it could not start, and `exit` says why (the sandbox's error).
  const pid = await running.pid.catch(async (error: unknown) => {
    await exit;
    throw error;
  });
  return {
    pid,
    write: (data) => running.write(data),
    async resize(newSize) {
      running.resize(checkSize(newSize));
    },
    async signal(name) {
      running.kill(name, { forceKillAfterMs: Number.POSITIVE_INFINITY });
    },
    output: output.stream,
    exit,
    close,
  };
}
