import { interpreterProgram } from "../interpreter-programs.ts";
import { SandboxError } from "../sandbox-error.ts";
import type { CommandResult, SandboxFacade } from "../sandbox-facade.ts";
import type { CodeContext } from "./code-context.ts";
import type { CodeContextRecord } from "./code-context-registry.ts";
import { type CodeDriver, startCodeDriver } from "./code-driver.ts";

/** A context of a sandbox, its driver while it runs, and why it must be started again when it does not. */
export interface CodeContextState {
  readonly context: CodeContext;
  readonly env: Record<string, string> | undefined;
  driver: CodeDriver | undefined;
  /** The driver being started (one start at a time). */
  starting: Promise<CodeDriver> | undefined;
  /** Why the context's earlier process is gone: the next cell says it started again. */
  lostReason: string | undefined;
  /** The last queued cell: cells run one at a time, in call order. */
  queue: Promise<unknown>;
  /** Set once the context is removed: a driver that was starting is killed. */
  removed: boolean;
}

/** A context's state with no driver yet; `lostReason` when an earlier process of it is gone. */
export function createCodeContextState(
  context: CodeContext,
  env: Record<string, string> | undefined,
  lostReason?: string,
): CodeContextState {
  return {
    context,
    env,
    driver: undefined,
    starting: undefined,
    lostReason,
    queue: Promise.resolve(),
    removed: false,
  };
}

/** Why a driver's process ended, for a person. */
export function describeExit(exit: CommandResult): string {
  if (exit.oomKilled) return "killed by the kernel's OOM killer: the sandbox's memory limit";
  if (exit.exitCode === 137) return "killed";
  if (exit.exitCode > 128) return `ended by signal ${exit.exitCode - 128}`;
  return `exited with code ${exit.exitCode}`;
}

/** What starting a driver needs of the sandbox. */
export interface DriverStarter {
  spawn: SandboxFacade["spawn"];
  runCommand: SandboxFacade["runCommand"];
}

/** Makes `driver` the context's process: when it ends, the state forgets it and records why. */
export function attachCodeContextDriver(state: CodeContextState, driver: CodeDriver): void {
  state.driver = driver;
  void driver.exited.then((exit) => {
    if (state.driver !== driver) return;
    state.driver = undefined;
    state.lostReason ??= `the context's process ended (${describeExit(exit)})`;
  });
}

/**
 * The context's running driver, started when it has none (one start at a time). When it ends, the state forgets it
 * and records why, for the next cell to say.
 */
export function codeContextDriver(
  state: CodeContextState,
  sandbox: DriverStarter,
  signal: AbortSignal | undefined,
): Promise<CodeDriver> {
  if (state.driver) return Promise.resolve(state.driver);
  state.starting ??= (async () => {
    const { context, env } = state;
    const record: CodeContextRecord = { ...context, ...(env ? { env } : {}) };
    const driver = await startCodeDriver({
      spawn: sandbox.spawn,
      runCommand: sandbox.runCommand,
      language: context.language,
      program: await interpreterProgram(context.language),
      cwd: context.cwd,
      env,
      record,
      signal,
    });
    if (state.removed) {
      await driver.kill();
      throw new SandboxError("NOT_FOUND", `the code context ${context.id} was removed`);
    }
    attachCodeContextDriver(state, driver);
    return driver;
  })().finally(() => {
    state.starting = undefined;
  });
  return state.starting;
}

/** Kills the context's driver (or the one starting), if any. */
export async function stopCodeContextDriver(state: CodeContextState): Promise<void> {
  const driver = state.driver ?? (await state.starting?.catch(() => undefined));
  state.driver = undefined;
  await driver?.kill();
}
