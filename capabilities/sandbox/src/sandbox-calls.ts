import type { FacadeCalls } from "@pai/docker-binding";
import type { SandboxFacade } from "./sandbox-facade.ts";

/**
 * The sandbox facade's members as a run's view reaches them (see `bindFacade`): which argument of each takes the
 * run's signal, and that a spawned process's connections are the run's until the process ends.
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
};
