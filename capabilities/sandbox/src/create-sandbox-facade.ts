import type { ContainerDriver } from "@pai/pool";
import { createCodeContexts } from "./code-interpreter/create-code-contexts.ts";
import type { PrewarmedCodeContexts } from "./code-interpreter/prewarm-code-contexts.ts";
import type { CommandExecutor } from "./command-executor.ts";
import { type FileScriptRunner, runFileScript } from "./run-file-script.ts";
import { createSandboxArchives } from "./sandbox-archives.ts";
import { createSandboxCommands } from "./sandbox-commands.ts";
import type { SandboxFacade, SandboxInfo } from "./sandbox-facade.ts";
import { createSandboxFiles } from "./sandbox-files.ts";
import { exposeSandboxPort } from "./sandbox-preview.ts";
import { openSandboxTerminal } from "./sandbox-terminal.ts";

/** Options of {@link createSandboxFacade}. */
export interface SandboxFacadeOptions {
  /** How commands reach the container. */
  executor: CommandExecutor;
  /** The engine, for the archive API (`uploadDirectory`, `downloadDirectory`). */
  driver: ContainerDriver;
  containerId: string;
  image: string;
  /** @default "/workspace" */
  workspace?: string;
  /**
   * argv prefix that runs a command line when `runCommand` gets no `args`.
   * @default ["bash", "-c"]
   */
  shell?: readonly string[];
  /** Default of `maxOutputBytes`. @default 1048576 */
  maxOutputBytes?: number;
  /** Default code contexts started in the container before the facade (adopted on the first code-context call). */
  prewarmed?: PrewarmedCodeContexts | undefined;
  /** Owner of uploaded files. @default 1000 */
  uid?: number;
  /** Group of uploaded files. @default 1000 */
  gid?: number;
}

const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;

/**
 * The {@link SandboxFacade} over one container: commands, `readFile` and `writeFiles` through `executor` (the
 * agent's frames, or `docker exec`), the other file methods through small scripts that resolve paths inside the
 * container, directory upload and download through the archive API, code contexts as driver processes it spawns,
 * terminals on the executor's pseudo-terminals and ports previewed through the run's scope.
 */
export function createSandboxFacade(options: SandboxFacadeOptions): SandboxFacade {
  const { executor, driver, containerId, image } = options;
  const workspace = options.workspace ?? "/workspace";
  const script: FileScriptRunner = (source, args, extra) =>
    runFileScript((spawnOptions) => executor.spawn(spawnOptions), workspace, source, args, extra);
  const shell = options.shell ?? ["bash", "-c"];
  const commands = createSandboxCommands({
    executor,
    workspace,
    shell,
    maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
  });
  return {
    ...commands,
    ...createSandboxFiles({ executor, script, workspace }),
    ...createSandboxArchives({
      script,
      driver,
      containerId,
      workspace,
      uid: options.uid ?? 1000,
      gid: options.gid ?? 1000,
    }),
    async info(): Promise<SandboxInfo> {
      return { id: containerId, workspace, image, executor: executor.kind };
    },
    // Outside a runtime there are no previews: PREVIEWS_UNAVAILABLE. A run's view gets its own (see sandboxCalls).
    exposePort: (port, exposeOptions) => exposeSandboxPort(undefined, port, exposeOptions),
    openTerminal: (terminal) => openSandboxTerminal({ executor, workspace, shell, terminal }),
    ...createCodeContexts({
      spawn: commands.spawn,
      runCommand: commands.runCommand,
      workspace,
      prewarmed: options.prewarmed,
    }),
  };
}
