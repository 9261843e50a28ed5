import { randomUUID } from "node:crypto";
import { interpreterProgram } from "../interpreter-programs.ts";
import { SandboxError } from "../sandbox-error.ts";
import type { CommandResult, SandboxFacade } from "../sandbox-facade.ts";
import { resolveWorkingDirectory } from "../workspace-path.ts";
import type {
  CodeContext,
  CodeError,
  CodeInterpreter,
  CodeLanguage,
  CodeResult,
  RunCodeOptions,
  RunCodeResult,
} from "./code-context.ts";
import {
  CODE_CONTEXT_ID,
  type CodeContextRecord,
  loadCodeContextRecords,
  removeCodeContextRecord,
} from "./code-context-registry.ts";
import { type CellOutcome, type CodeDriver, startCodeDriver } from "./code-driver.ts";
import { stripTypeScript } from "./strip-typescript.ts";
import { toCodeResult } from "./to-code-result.ts";

/** Options of {@link createCodeContexts}. */
export interface CodeContextsOptions {
  /** The sandbox's own `spawn`: drivers run as its commands do. */
  spawn: SandboxFacade["spawn"];
  /** The sandbox's own `runCommand` (interrupts, the context registry). */
  runCommand: SandboxFacade["runCommand"];
  /** The workspace, which relative `cwd`s resolve against. */
  workspace: string;
}

const LANGUAGES: readonly CodeLanguage[] = ["python", "javascript", "typescript"];
const DEFAULT_FORCE_KILL_AFTER_MS = 2000;
const DEFAULT_MAX_LOG_LENGTH = 1_000_000;

/** A context of this sandbox, its driver while it runs, and why it must be started again when it does not. */
interface ContextState {
  context: CodeContext;
  env: Record<string, string> | undefined;
  driver: CodeDriver | undefined;
  /** The driver being started (one start at a time). */
  starting: Promise<CodeDriver> | undefined;
  /** Why the context's earlier process is gone: the next cell says it started again. */
  lostReason: string | undefined;
  /** The last queued cell: cells run one at a time, in call order. */
  queue: Promise<unknown>;
}

function checkLanguage(language: unknown): CodeLanguage {
  if (!LANGUAGES.includes(language as CodeLanguage)) {
    throw new SandboxError(
      "INVALID_ARGUMENT",
      `a code context's language is "python", "javascript" or "typescript", not ${JSON.stringify(language)}`,
    );
  }
  return language as CodeLanguage;
}

function describeExit(exit: CommandResult): string {
  if (exit.oomKilled) return "killed by the kernel's OOM killer: the sandbox's memory limit";
  if (exit.exitCode === 137) return "killed";
  if (exit.exitCode > 128) return `ended by signal ${exit.exitCode - 128}`;
  return `exited with code ${exit.exitCode}`;
}

/**
 * The code-context members of a sandbox's facade (see {@link CodeInterpreter}) over its `spawn` and `runCommand`:
 * each context is a driver process in the sandbox (IPython for Python, a Node REPL context for JavaScript and
 * TypeScript) speaking JSON lines. The contexts belong to the facade, which lives as long as its container runs;
 * the drivers record themselves in the sandbox's `/tmp`, so a facade made after a wake (or by a runtime that
 * reattached the sandbox) knows the contexts and starts each again, empty, on its next cell, saying so.
 *
 * A context whose process dies (out of memory, killed after ignoring an interrupt) ends the running cell with
 * `terminationReason: "context-exited"` and an `error` named `ContextExited`; its next cell starts it again.
 */
export function createCodeContexts(options: CodeContextsOptions): CodeInterpreter {
  const { spawn, runCommand, workspace } = options;
  const contexts = new Map<string, ContextState>();
  let loaded: Promise<void> | undefined;

  /** Reads once what earlier connections left in the sandbox. */
  function load(signal: AbortSignal | undefined): Promise<void> {
    loaded ??= loadCodeContextRecords(runCommand, signal).then(
      ({ records, killed }) => {
        for (const record of records) {
          if (contexts.has(record.id)) continue;
          contexts.set(record.id, {
            context: { id: record.id, language: record.language, cwd: record.cwd },
            env: record.env,
            driver: undefined,
            starting: undefined,
            lostReason: killed.has(record.id)
              ? "PAI connected to this sandbox anew (its runtime restarted) and cannot take over the context's running process"
              : "the sandbox's processes stopped (it hibernated while idle, or was restarted)",
            queue: Promise.resolve(),
          });
        }
      },
      (error: unknown) => {
        loaded = undefined;
        throw error;
      },
    );
    return loaded;
  }

  function stateOf(context: CodeContext | string): ContextState | undefined {
    const id = typeof context === "string" ? context : context?.id;
    if (typeof id !== "string")
      throw new SandboxError("INVALID_ARGUMENT", "a code context or its id is needed");
    return contexts.get(id);
  }

  function requireState(context: CodeContext | string): ContextState {
    const state = stateOf(context);
    if (!state) {
      const id = typeof context === "string" ? context : context.id;
      throw new SandboxError("NOT_FOUND", `this sandbox has no code context ${id}`, { details: { id } });
    }
    return state;
  }

  function addState(context: CodeContext, env: Record<string, string> | undefined): ContextState {
    const state: ContextState = {
      context,
      env,
      driver: undefined,
      starting: undefined,
      lostReason: undefined,
      queue: Promise.resolve(),
    };
    contexts.set(context.id, state);
    return state;
  }

  /** The context's running driver, started when it has none. */
  function driverOf(state: ContextState, signal: AbortSignal | undefined): Promise<CodeDriver> {
    if (state.driver) return Promise.resolve(state.driver);
    state.starting ??= (async () => {
      const { context, env } = state;
      const record: CodeContextRecord = { ...context, ...(env ? { env } : {}) };
      const driver = await startCodeDriver({
        spawn,
        runCommand,
        language: context.language,
        program: await interpreterProgram(context.language),
        cwd: context.cwd,
        env,
        record,
        signal,
      });
      if (contexts.get(context.id) !== state) {
        // removed while it started
        await driver.kill();
        throw new SandboxError("NOT_FOUND", `the code context ${context.id} was removed`);
      }
      state.driver = driver;
      void driver.exited.then((exit) => {
        if (state.driver !== driver) return;
        state.driver = undefined;
        state.lostReason ??= `the context's process ended (${describeExit(exit)})`;
      });
      return driver;
    })().finally(() => {
      state.starting = undefined;
    });
    return state.starting;
  }

  async function stopDriver(state: ContextState): Promise<void> {
    const driver = state.driver ?? (await state.starting?.catch(() => undefined));
    state.driver = undefined;
    await driver?.kill();
  }

  /** Runs one cell of `state`'s context (the caller queues cells). */
  async function runCell(
    state: ContextState,
    code: string,
    runOptions: RunCodeOptions,
  ): Promise<RunCodeResult> {
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
    const driver = await driverOf(state, signal);
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

  function enqueue<T>(state: ContextState, work: () => Promise<T>): Promise<T> {
    const run = state.queue.then(work, work);
    state.queue = run.catch(() => undefined);
    return run;
  }

  return {
    async createCodeContext(createOptions = {}) {
      const { signal } = createOptions;
      signal?.throwIfAborted();
      const language = checkLanguage(createOptions.language ?? "python");
      const cwd = resolveWorkingDirectory(createOptions.cwd ?? ".", workspace);
      await load(signal);
      const directory = await runCommand({
        command: "test",
        args: ["-d", cwd],
        ...(signal ? { signal } : {}),
      });
      if (directory.exitCode !== 0) {
        throw new SandboxError("NOT_FOUND", `no directory ${cwd} in the sandbox for the code context`, {
          details: { cwd },
        });
      }
      const context: CodeContext = { id: `ctx-${randomUUID()}`, language, cwd };
      const state = addState(context, createOptions.env ? { ...createOptions.env } : undefined);
      try {
        await driverOf(state, signal);
      } catch (error) {
        contexts.delete(context.id);
        throw error;
      }
      return { ...context };
    },

    async listCodeContexts(listOptions = {}) {
      listOptions.signal?.throwIfAborted();
      await load(listOptions.signal);
      return [...contexts.values()].map((state) => ({ ...state.context }));
    },

    async restartCodeContext(context, restartOptions = {}) {
      const { signal } = restartOptions;
      signal?.throwIfAborted();
      await load(signal);
      const state = requireState(context);
      await stopDriver(state);
      state.lostReason = undefined;
      await driverOf(state, signal);
      return { ...state.context };
    },

    async removeCodeContext(context, removeOptions = {}) {
      const { signal } = removeOptions;
      signal?.throwIfAborted();
      await load(signal);
      const state = stateOf(context);
      if (!state) return false;
      contexts.delete(state.context.id);
      await stopDriver(state);
      await removeCodeContextRecord(runCommand, state.context.id, signal);
      return true;
    },

    async runCode(code, runOptions = {}) {
      if (typeof code !== "string")
        throw new SandboxError("INVALID_ARGUMENT", "runCode needs a string of code");
      const { signal } = runOptions;
      signal?.throwIfAborted();
      const language = runOptions.language === undefined ? undefined : checkLanguage(runOptions.language);
      if (runOptions.context !== undefined) {
        const id = typeof runOptions.context === "string" ? runOptions.context : runOptions.context?.id;
        if (typeof id !== "string" || !CODE_CONTEXT_ID.test(id)) {
          throw new SandboxError("INVALID_ARGUMENT", "runCode's `context` is a code context or its id");
        }
      }
      await load(signal);
      let state: ContextState;
      if (runOptions.context !== undefined) {
        state = requireState(runOptions.context);
        if (language && language !== state.context.language) {
          throw new SandboxError(
            "INVALID_ARGUMENT",
            `the code context ${state.context.id} runs ${state.context.language}, not ${language}`,
          );
        }
      } else {
        const defaultLanguage = language ?? "python";
        const id = `default-${defaultLanguage}`;
        state = contexts.get(id) ?? addState({ id, language: defaultLanguage, cwd: workspace }, undefined);
      }
      return enqueue(state, () => runCell(state, code, runOptions));
    },
  };
}
