import { interpreterProgram } from "../interpreter-programs.ts";
import type { SandboxFacade } from "../sandbox-facade.ts";
import type { CodeLanguage } from "./code-context.ts";
import { type CodeDriver, startCodeDriver } from "./code-driver.ts";

/** A default context's driver started before any facade asked for it. */
export interface PrewarmedCodeDriver {
  language: CodeLanguage;
  driver: CodeDriver;
}

/** The default contexts started ahead of use in one container (see {@link prewarmCodeContexts}). */
export interface PrewarmedCodeContexts {
  /**
   * Hands the drivers still running to the facade that adopts them as the default contexts of their languages:
   * once (later calls get none), so two facades never share a driver.
   */
  take(): PrewarmedCodeDriver[];
}

/** Options of {@link prewarmCodeContexts}. */
export interface PrewarmCodeContextsOptions {
  /** The container's `spawn` and `runCommand` (the same executor the facade made over it uses). */
  spawn: SandboxFacade["spawn"];
  runCommand: SandboxFacade["runCommand"];
  /** The languages whose default context to start. */
  languages: readonly CodeLanguage[];
  /** The default contexts' working directory. */
  workspace: string;
  signal?: AbortSignal | undefined;
}

/**
 * Starts the default context of each language in a fresh container (`default-<language>` in the workspace, as the
 * first `runCode` of that language would), so the conversation that gets the container finds its interpreter
 * already running. Resolves once every start settled; a start that fails leaves nothing behind (the first `runCode`
 * then starts the context as usual, and reports why it cannot).
 */
export async function prewarmCodeContexts(
  options: PrewarmCodeContextsOptions,
): Promise<PrewarmedCodeContexts> {
  const { spawn, runCommand, workspace, signal } = options;
  const started = await Promise.allSettled(
    [...new Set(options.languages)].map(async (language): Promise<PrewarmedCodeDriver> => {
      const driver = await startCodeDriver({
        spawn,
        runCommand,
        language,
        program: await interpreterProgram(language),
        cwd: workspace,
        record: { id: `default-${language}`, language, cwd: workspace },
        signal,
      });
      return { language, driver };
    }),
  );
  let running = started.flatMap((outcome) => (outcome.status === "fulfilled" ? [outcome.value] : []));
  for (const prewarmed of running) {
    void prewarmed.driver.exited.then(() => {
      running = running.filter((other) => other !== prewarmed);
    });
  }
  return {
    take() {
      const taken = running;
      running = [];
      return taken;
    },
  };
}
