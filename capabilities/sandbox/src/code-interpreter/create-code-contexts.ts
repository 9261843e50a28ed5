import { randomUUID } from "node:crypto";
import { SandboxError } from "../sandbox-error.ts";
import type { SandboxFacade } from "../sandbox-facade.ts";
import { resolveWorkingDirectory } from "../workspace-path.ts";
import type { CodeContext, CodeInterpreter, CodeLanguage } from "./code-context.ts";
import { CODE_CONTEXT_ID, loadCodeContextRecords, removeCodeContextRecord } from "./code-context-registry.ts";
import {
  attachCodeContextDriver,
  type CodeContextState,
  codeContextDriver,
  createCodeContextState,
  stopCodeContextDriver,
} from "./code-context-state.ts";
import type { PrewarmedCodeContexts } from "./prewarm-code-contexts.ts";
import { runCodeCell } from "./run-code-cell.ts";

/** Options of {@link createCodeContexts}. */
export interface CodeContextsOptions {
  /** The sandbox's own `spawn`: drivers run as its commands do. */
  spawn: SandboxFacade["spawn"];
  /** The sandbox's own `runCommand` (interrupts, the context registry). */
  runCommand: SandboxFacade["runCommand"];
  /** The workspace, which relative `cwd`s resolve against. */
  workspace: string;
  /**
   * Default contexts started in a fresh container before this facade, where nothing else ran
   * (`dockerSandbox`'s `codeInterpreter.prewarm`): adopted on the first call, with no records to read.
   */
  prewarmed?: PrewarmedCodeContexts | undefined;
}

const LANGUAGES: readonly CodeLanguage[] = ["python", "javascript", "typescript"];
function checkLanguage(language: unknown): CodeLanguage {
  if (!LANGUAGES.includes(language as CodeLanguage)) {
    throw new SandboxError(
      "INVALID_ARGUMENT",
      `a code context's language is "python", "javascript" or "typescript", not ${JSON.stringify(language)}`,
    );
  }
  return language as CodeLanguage;
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
  const contexts = new Map<string, CodeContextState>();
  const sandbox = { spawn, runCommand };
  let loaded: Promise<void> | undefined;

  /** Reads once what earlier connections left in the sandbox. */
  function load(signal: AbortSignal | undefined): Promise<void> {
    // Prewarmed default contexts become this facade's; their fresh container holds no other records to read.
    const prewarmed = options.prewarmed?.take() ?? [];
    for (const { language, driver } of prewarmed) {
      attachCodeContextDriver(
        addState({ id: `default-${language}`, language, cwd: workspace }, undefined),
        driver,
      );
    }
    if (prewarmed.length > 0) loaded ??= Promise.resolve();
    loaded ??= loadCodeContextRecords(runCommand, signal).then(
      ({ records, killed }) => {
        for (const record of records) {
          if (contexts.has(record.id)) continue;
          const context: CodeContext = { id: record.id, language: record.language, cwd: record.cwd };
          const lostReason = killed.has(record.id)
            ? "PAI connected to this sandbox anew (its runtime restarted) and cannot take over the context's running process"
            : "the sandbox's processes stopped (it hibernated while idle, or was restarted)";
          contexts.set(record.id, createCodeContextState(context, record.env, lostReason));
        }
      },
      (error: unknown) => {
        loaded = undefined;
        throw error;
      },
    );
    return loaded;
  }

  function stateOf(context: CodeContext | string): CodeContextState | undefined {
    const id = typeof context === "string" ? context : context?.id;
    if (typeof id !== "string")
      throw new SandboxError("INVALID_ARGUMENT", "a code context or its id is needed");
    return contexts.get(id);
  }

  function requireState(context: CodeContext | string): CodeContextState {
    const state = stateOf(context);
    if (!state) {
      const id = typeof context === "string" ? context : context.id;
      throw new SandboxError("NOT_FOUND", `this sandbox has no code context ${id}`, { details: { id } });
    }
    return state;
  }

  function addState(context: CodeContext, env: Record<string, string> | undefined): CodeContextState {
    const state = createCodeContextState(context, env);
    contexts.set(context.id, state);
    return state;
  }

  function enqueue<T>(state: CodeContextState, work: () => Promise<T>): Promise<T> {
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
        await codeContextDriver(state, sandbox, signal);
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
      await stopCodeContextDriver(state);
      state.lostReason = undefined;
      await codeContextDriver(state, sandbox, signal);
      return { ...state.context };
    },

    async removeCodeContext(context, removeOptions = {}) {
      const { signal } = removeOptions;
      signal?.throwIfAborted();
      await load(signal);
      const state = stateOf(context);
      if (!state) return false;
      contexts.delete(state.context.id);
      state.removed = true;
      await stopCodeContextDriver(state);
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
      let state: CodeContextState;
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
      return enqueue(state, () => runCodeCell({ state, code, options: runOptions, sandbox }));
    },
  };
}
