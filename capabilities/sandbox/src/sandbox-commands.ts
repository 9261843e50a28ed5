import type { CommandExecutor, ExecutorSpawnOptions } from "./command-executor.ts";
import { createCommandResults } from "./command-results.ts";
import { SandboxError } from "./sandbox-error.ts";
import type { SandboxFacade, SpawnCommandOptions } from "./sandbox-facade.ts";
import { startSandboxProcess } from "./sandbox-process.ts";
import { traceCommand } from "./sandbox-spans.ts";
import { streamingDecoder } from "./streaming-decoder.ts";
import { resolveWorkingDirectory } from "./workspace-path.ts";

/** Options of {@link createSandboxCommands}. */
export interface SandboxCommandsOptions {
  executor: CommandExecutor;
  workspace: string;
  /** argv prefix that runs a command line without `args`. */
  shell: readonly string[];
  /** Default of a command's `maxOutputBytes`. */
  maxOutputBytes: number;
}

/** The sandbox facade's commands: `runCommand` (to its end) and `spawn` (in the background). */
export function createSandboxCommands(
  options: SandboxCommandsOptions,
): Pick<SandboxFacade, "runCommand" | "spawn"> {
  const { executor, workspace, shell } = options;
  const toResult = createCommandResults(executor);

  /** What the executor runs for a command: argv, working directory and limits (`defaultLimit` past the output cap). */
  function commandSpec(command: SpawnCommandOptions, defaultLimit: "kill" | "truncate") {
    if (typeof command?.command !== "string" || command.command === "") {
      throw new SandboxError("INVALID_ARGUMENT", "runCommand needs a non-empty `command` string");
    }
    const argv = command.args ? [command.command, ...command.args] : [...shell, command.command];
    return {
      argv,
      cwd: command.cwd !== undefined ? resolveWorkingDirectory(command.cwd, workspace) : undefined,
      env: command.env,
      signal: command.signal,
      timeoutMs: command.timeoutMs,
      maxOutputBytes: command.maxOutputBytes ?? options.maxOutputBytes,
      onOutputLimit: command.onOutputLimit ?? defaultLimit,
      forceKillAfterMs: command.forceKillAfterMs,
      stdin: command.stdin,
    } satisfies ExecutorSpawnOptions;
  }

  return {
    async runCommand(command) {
      const spec = commandSpec(command, "kill");
      spec.signal?.throwIfAborted();
      return traceCommand(command, async () => {
        const onStdout = streamingDecoder(command.onStdout);
        const onStderr = streamingDecoder(command.onStderr);
        const result = await executor
          .spawn({ ...spec, killGroupOnExit: true, onStdout: onStdout?.push, onStderr: onStderr?.push })
          .wait();
        onStdout?.flush();
        onStderr?.flush();
        return toResult(result);
      });
    },

    async spawn(command) {
      const spec = commandSpec(command, "truncate");
      spec.signal?.throwIfAborted();
      return startSandboxProcess({
        spawn: (output) => executor.spawn({ ...spec, ...output }),
        command,
        maxOutputBytes: spec.maxOutputBytes,
        toResult,
      });
    },
  };
}
