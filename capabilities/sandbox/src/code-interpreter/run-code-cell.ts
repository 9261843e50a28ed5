import { SandboxError } from "../sandbox-error.ts";
import type { CodeError, CodeResult, RunCodeOptions, RunCodeResult } from "./code-context.ts";
import {
  type CodeContextState,
  codeContextDriver,
  type DriverStarter,
  describeExit,
} from "./code-context-state.ts";
import type { CellOutcome } from "./code-driver.ts";
import { stripTypeScript } from "./strip-typescript.ts";
import { toCodeResult } from "./to-code-result.ts";

const DEFAULT_FORCE_KILL_AFTER_MS = 2000;
const DEFAULT_MAX_LOG_LENGTH = 1_000_000;

/** Options of {@link runCodeCell}. */
export interface RunCodeCellOptions {
  state: CodeContextState;
  code: string;
  options: RunCodeOptions;
  sandbox: DriverStarter;
}

/**
 * Runs one cell in a context (the caller queues a context's cells): strips TypeScript's types, starts the context's
 * driver when it has none (saying why it started again), streams what the cell prints and displays, interrupts it at
 * its timeout or abort (killing the driver when it does not stop within `forceKillAfterMs`), and keeps at most
 * `maxLogLength` characters of each stream.
 */
export async function runCodeCell(options: RunCodeCellOptions): Promise<RunCodeResult> {
  const { state, code, sandbox, options: runOptions } = options;
  const startedAt = performance.now();
  const { signal } = runOptions;
  signal?.throwIfAborted();
  const { context } = state;
  const results: CodeResult[] = [];
  const logs = { stdout: [] as string[], stderr: [] as string[] };
  const maxLogLength = runOptions.maxLogLength ?? DEFAULT_MAX_LOG_LENGTH;
  const logged = { stdout: 0, stderr: 0 };
  const dropped = { stdout: 0, stderr: 0 };
  const log = (stream: "stdout" | "stderr", text: string) => {
    const room = maxLogLength - logged[stream];
    if (text.length <= room) {
      logs[stream].push(text);
      logged[stream] += text.length;
      return;
    }
    if (room > 0) logs[stream].push(text.slice(0, room));
    logged[stream] = maxLogLength;
    dropped[stream] += text.length - Math.max(room, 0);
  };
  const finish = (
    fields: Pick<RunCodeResult, "executionCount" | "terminationReason"> & { error?: CodeError },
  ): RunCodeResult => {
    for (const stream of ["stdout", "stderr"] as const) {
      if (dropped[stream] > 0) logs[stream].push(`\n…(${dropped[stream]} more characters not kept)`);
    }
    return {
      results,
      logs,
      ...(fields.error ? { error: fields.error } : {}),
      executionCount: fields.executionCount,
      context,
      terminationReason: fields.terminationReason,
      ...(restartReason !== undefined ? { restarted: true, restartReason } : {}),
      durationMs: performance.now() - startedAt,
    };
  };

  let restartReason: string | undefined;
  let source = code;
  if (context.language === "typescript") {
    try {
      source = stripTypeScript(code);
    } catch (error) {
      if (SandboxError.isInstance(error)) throw error;
      // the parser's message only: its stack is the host's
      const failure = error as Error;
      return finish({
        executionCount: 0,
        terminationReason: "completed",
        error: {
          name: failure.name,
          value: failure.message,
          traceback: `${failure.name}: ${failure.message}`,
        },
      });
    }
  }

  if (!state.driver && state.lostReason !== undefined) {
    restartReason = `${state.lostReason}, so the context was started again, empty`;
  }
  const driver = await codeContextDriver(state, sandbox, signal);
  state.lostReason = undefined;

  let error: CodeError | undefined;
  let stopped: "timeout" | "abort" | undefined;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  /** The SIGINT on its way: awaited before the next cell may start, which it must not reach. */
  let interrupting: Promise<void> | undefined;
  const interrupt = (reason: "timeout" | "abort") => {
    if (stopped) return;
    stopped = reason;
    interrupting = driver.interrupt();
    killTimer = setTimeout(() => {
      if (state.driver === driver) {
        state.driver = undefined;
        state.lostReason = `the context's process was killed after a ${reason}: it did not stop when interrupted`;
      }
      void driver.kill();
    }, runOptions.forceKillAfterMs ?? DEFAULT_FORCE_KILL_AFTER_MS);
  };
  const onAbort = () => interrupt("abort");
  const timeout =
    runOptions.timeoutMs !== undefined
      ? setTimeout(() => interrupt("timeout"), runOptions.timeoutMs)
      : undefined;
  signal?.addEventListener("abort", onAbort, { once: true });
  let outcome: CellOutcome;
  try {
    outcome = await driver.execute(source, (event) => {
      switch (event.type) {
        case "stdout":
          log("stdout", event.text);
          runOptions.onStdout?.(event.text);
          return;
        case "stderr":
          log("stderr", event.text);
          runOptions.onStderr?.(event.text);
          return;
        case "display":
        case "result": {
          const result = toCodeResult(event.data, event.type === "result");
          results.push(result);
          runOptions.onResult?.(result);
          return;
        }
        case "error":
          error = { name: event.name, value: event.value, traceback: event.traceback };
      }
    });
  } finally {
    clearTimeout(timeout);
    clearTimeout(killTimer);
    signal?.removeEventListener("abort", onAbort);
    await interrupting;
  }

  if (outcome.type === "exited") {
    const why = state.lostReason ?? `the context's process ended (${describeExit(outcome.exit)})`;
    if (state.driver === driver) state.driver = undefined;
    // unless a restart already replaced the process
    if (!state.driver && !state.starting) state.lostReason = why;
    return finish({
      executionCount: 0,
      terminationReason: stopped ?? "context-exited",
      error: {
        name: "ContextExited",
        value: `${why}; the next call starts the context again, empty`,
        traceback: "",
      },
    });
  }
  return finish({
    executionCount: outcome.executionCount,
    terminationReason: stopped ?? "completed",
    ...(error ? { error } : {}),
  });
}
