import type { SandboxFacade } from "./sandbox-facade.ts";

function merge(bound: AbortSignal, own: AbortSignal | undefined): AbortSignal {
  return own ? AbortSignal.any([bound, own]) : bound;
}

/**
 * A view of `facade` whose every command and file operation is also aborted by `signal` (e.g. the run's, so
 * a user's Stop kills the command's process group even when the tool passed no signal of its own). A signal
 * the caller passes still works alongside it.
 *
 * @example
 * const forThisRun = bindSandboxFacade(facade, runSignal);
 * await forThisRun.runCommand({ command: "sleep 60" }); // Stop → terminationReason "abort"
 */
export function bindSandboxFacade(facade: SandboxFacade, signal: AbortSignal): SandboxFacade {
  return {
    runCommand: (options) => facade.runCommand({ ...options, signal: merge(signal, options.signal) }),
    spawn: (options) => facade.spawn({ ...options, signal: merge(signal, options.signal) }),
    writeFiles: (files, options = {}) =>
      facade.writeFiles(files, { ...options, signal: merge(signal, options.signal) }),
    readFile: (path, options = {}) =>
      facade.readFile(path, { ...options, signal: merge(signal, options.signal) }),
    readTextFile: (path, options = {}) =>
      facade.readTextFile(path, { ...options, signal: merge(signal, options.signal) }),
    listFiles: (directory, options = {}) =>
      facade.listFiles(directory, { ...options, signal: merge(signal, options.signal) }),
    stat: (path, options = {}) => facade.stat(path, { ...options, signal: merge(signal, options.signal) }),
    removeFile: (path, options = {}) =>
      facade.removeFile(path, { ...options, signal: merge(signal, options.signal) }),
    uploadDirectory: (source, targetDirectory, options = {}) =>
      facade.uploadDirectory(source, targetDirectory, { ...options, signal: merge(signal, options.signal) }),
    downloadDirectory: (directory, options = {}) =>
      facade.downloadDirectory(directory, { ...options, signal: merge(signal, options.signal) }),
    info: () => facade.info(),
  };
}
