import type { FacadeCalls } from "@pai/docker-binding";
import type { SandboxFacade } from "./sandbox-facade.ts";
import { exposeSandboxPort } from "./sandbox-preview.ts";

/**
 * The sandbox facade's members as a run's view reaches them (see `bindFacade`): which argument of each takes the
 * run's signal, that a spawned process's (or a terminal's) connections are the run's until it ends, and that
 * `exposePort` opens its previews through the run's scope.
 */
export const sandboxCalls: FacadeCalls<SandboxFacade> = {
  runCommand: { options: 0 },
  spawn: { options: 0, until: (process) => process.wait() },
  writeFiles: { options: 1 },
  readFile: { options: 1 },
  readTextFile: { options: 1 },
  listFiles: { options: 1 },
  stat: { options: 1 },
  removeFile: { options: 1 },
  uploadDirectory: { options: 2 },
  downloadDirectory: { options: 1 },
  info: {},
  createCodeContext: { options: 0 },
  listCodeContexts: { options: 0 },
  restartCodeContext: { options: 1 },
  removeCodeContext: { options: 1 },
  runCode: { options: 1 },
  exposePort: {
    options: 1,
    withScope:
      ({ previews }) =>
      (port, options) =>
        exposeSandboxPort(previews, port, options),
  },
  openTerminal: { options: 0, until: (terminal) => terminal.exit },
};
