import { randomBytes } from "node:crypto";
import { SandboxError } from "../sandbox-error.ts";
import type { CommandResult, SandboxFacade, SandboxProcess } from "../sandbox-facade.ts";
import type { CodeLanguage } from "./code-context.ts";

/** An event of a running cell, as its driver sent it (see `interpreter/`). */
export type CodeDriverEvent =
  | { type: "stdout" | "stderr"; text: string }
  | { type: "display" | "result"; data: Record<string, unknown> }
  | { type: "error"; name: string; value: string; traceback: string };

/** How a cell ended in its driver: done (with the context's execution count), or the driver's process gone. */
export type CellOutcome = { type: "done"; executionCount: number } | { type: "exited"; exit: CommandResult };

/** A code context's process: the driver program of its language, running in the sandbox. */
export interface CodeDriver {
  /** Its pid inside the container. */
  readonly pid: number;
  /** Settles with the process's result once it ended (never rejects). */
  readonly exited: Promise<CommandResult>;
  /** Runs one cell (one at a time: the caller queues them), telling `onEvent` what it prints and displays. */
  execute(code: string, onEvent: (event: CodeDriverEvent) => void): Promise<CellOutcome>;
  /** Sends SIGINT to the driver (not its children): Python raises KeyboardInterrupt, Node breaks the cell off. */
  interrupt(): Promise<void>;
  /** Kills the driver's process group and waits for it to end. */
  kill(): Promise<void>;
}

/** Options of {@link startCodeDriver}. */
export interface StartCodeDriverOptions {
  /** The facade's own members: the driver runs as any command of the sandbox. */
  spawn: SandboxFacade["spawn"];
  runCommand: SandboxFacade["runCommand"];
  language: CodeLanguage;
  /** The driver program's source. */
  program: string;
  cwd: string;
  env?: Readonly<Record<string, string>> | undefined;
  /** What the driver writes to the sandbox's context registry (see `loadCodeContextRecords`). */
  record: object;
  /** Aborts the start (the process is killed). */
  signal?: AbortSignal | undefined;
  /** @default 60_000 */
  startTimeoutMs?: number;
}

type DriverMessage =
  | CodeDriverEvent
  | { type: "done"; executionCount: number }
  | { type: "ready"; pid: number }
  | { type: "fatal"; message: string }
  | { type: "warning"; message: string };

/** Splits the driver's stdout into event lines (after the marker) and text of the cell's child processes. */
function createLineParser(
  mark: string,
  onMessage: (message: DriverMessage) => void,
  onText: (text: string) => void,
) {
  let buffer = "";
  return (chunk: string) => {
    buffer += chunk;
    let newline = buffer.indexOf("\n");
    while (newline !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      newline = buffer.indexOf("\n");
      const at = line.indexOf(mark);
      if (at === -1) {
        onText(`${line}\n`);
        continue;
      }
      if (at > 0) onText(line.slice(0, at));
      try {
        onMessage(JSON.parse(line.slice(at + mark.length)) as DriverMessage);
      } catch {
        onText(`${line.slice(at)}\n`);
      }
    }
  };
}

const COMMANDS: Record<CodeLanguage, (program: string) => { command: string; args: string[] }> = {
  python: (program) => ({ command: "python3", args: ["-u", "-c", program] }),
  javascript: (program) => ({ command: "node", args: ["-e", program] }),
  typescript: (program) => ({ command: "node", args: ["-e", program] }),
};

function tail(text: string, max = 2000): string {
  return text.length > max ? `…${text.slice(-max)}` : text;
}

/**
 * Starts a code context's driver with the facade's `spawn` (so it runs as the sandbox user, under the sandbox's
 * limits, and dies with the container) and resolves once it is ready. Requests go as JSON lines to its stdin; events
 * come back as stdout lines that start with a marker of this process (`\x1ePAI<token>`), so what a child process
 * writes to the same stdout stays text.
 * @throws SandboxError `INTERPRETER_UNAVAILABLE` when the interpreter is missing or ends before it is ready
 */
export async function startCodeDriver(options: StartCodeDriverOptions): Promise<CodeDriver> {
  const { language, signal } = options;
  signal?.throwIfAborted();
  const token = randomBytes(12).toString("hex");
  const mark = `\x1ePAI${token}`;
  let stderrTail = "";
  let cell: { onEvent: (event: CodeDriverEvent) => void; done: (outcome: CellOutcome) => void } | undefined;
  let ready: { resolve: (pid: number) => void; reject: (error: Error) => void } | undefined;
  const readyPid = new Promise<number>((resolve, reject) => {
    ready = { resolve, reject };
  });
  readyPid.catch(() => {});

  const parse = createLineParser(
    mark,
    (message) => {
      switch (message.type) {
        case "ready":
          ready?.resolve(message.pid);
          return;
        case "fatal":
          ready?.reject(new SandboxError("INTERPRETER_UNAVAILABLE", message.message));
          return;
        case "warning":
          return;
        case "done":
          cell?.done({ type: "done", executionCount: message.executionCount });
          return;
        default:
          cell?.onEvent(message);
      }
    },
    (text) => cell?.onEvent({ type: "stdout", text }),
  );

  const { command, args } = COMMANDS[language](options.program);
  let driverProcess: SandboxProcess;
  try {
    driverProcess = await options.spawn({
      command,
      args,
      cwd: options.cwd,
      env: { ...options.env, PAI_CODE_TOKEN: token, PAI_CODE_CONTEXT: JSON.stringify(options.record) },
      stdin: "pipe",
      // events reach the parser through onStdout; nothing is buffered for the streams, little is kept
      maxBufferedBytes: 0,
      maxOutputBytes: 64 * 1024,
      onOutputLimit: "truncate",
      onStdout: parse,
      onStderr: (text) => {
        stderrTail = tail(stderrTail + text, 4000);
        cell?.onEvent({ type: "stderr", text });
      },
    });
  } catch (error) {
    if (SandboxError.hasCode(error, "SANDBOX_SPAWN_FAILED")) {
      throw new SandboxError(
        "INTERPRETER_UNAVAILABLE",
        `cannot start the ${language} context: ${command} did not start in the sandbox (${(error as Error).message})`,
        { cause: error },
      );
    }
    throw error;
  }

  const exited = driverProcess.wait().catch(
    (error: unknown): CommandResult => ({
      exitCode: -1,
      stdout: "",
      stderr: error instanceof Error ? error.message : String(error),
      durationMs: 0,
      terminationReason: "abort",
      truncated: { stdout: false, stderr: false },
      omittedBytes: { stdout: 0, stderr: 0 },
    }),
  );
  void exited.then((exit) => {
    ready?.reject(
      new SandboxError(
        "INTERPRETER_UNAVAILABLE",
        `the ${language} context's process (${command} in ${options.cwd}) ended before it was ready ` +
          `(exit code ${exit.exitCode})${stderrTail ? `: ${tail(stderrTail)}` : ""}`,
      ),
    );
    cell?.done({ type: "exited", exit });
  });

  let groupLeader: number | undefined;
  const kill = async () => {
    await driverProcess.kill("SIGKILL").catch(() => undefined);
    await exited;
    // One kill of the process group misses children forked while it ran (a fork bomb in a cell): kill the group
    // again until it is empty. The driver leads its group (the agent starts each process in a group of its own).
    if (groupLeader !== undefined) {
      await options
        .runCommand({
          command: "sh",
          args: [
            "-c",
            'while kill -s KILL -- "-$1" 2>/dev/null; do sleep 0.05; done',
            "sh",
            String(groupLeader),
          ],
          timeoutMs: 10_000,
        })
        .catch(() => undefined);
    }
  };

  const startTimeoutMs = options.startTimeoutMs ?? 60_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onAbort = () => ready?.reject(signal?.reason as Error);
  try {
    signal?.addEventListener("abort", onAbort, { once: true });
    timer = setTimeout(
      () =>
        ready?.reject(
          new SandboxError(
            "INTERPRETER_UNAVAILABLE",
            `the ${language} context was not ready after ${startTimeoutMs} ms`,
          ),
        ),
      startTimeoutMs,
    );
    const pid = await readyPid;
    groupLeader = pid;
    return {
      pid,
      exited,
      execute(code, onEvent) {
        return new Promise<CellOutcome>((resolve) => {
          const done = (outcome: CellOutcome) => {
            if (cell?.done !== done) return;
            cell = undefined;
            resolve(outcome);
          };
          cell = { onEvent, done };
          const request = `${JSON.stringify({ type: "execute", id: token, code })}\n`;
          driverProcess.writeStdin(request).catch(() => {
            // the process is gone: `exited` settles the cell
          });
        });
      },
      async interrupt() {
        await options
          .runCommand({
            command: "sh",
            args: ["-c", 'kill -s INT "$1"', "sh", String(pid)],
            timeoutMs: 10_000,
          })
          .catch(() => undefined);
      },
      kill,
    };
  } catch (error) {
    await kill();
    throw error;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
    ready = undefined;
  }
}
