import type { DiskPluginFiles } from "./disk-plugin-files.ts";
import { liveProcessFromPidFile } from "./live-process.ts";

/**
 * The pid of the plugin's daemon its pid file names, when that is a live Node process serving the plugin's
 * socket (not a reused pid); `undefined` otherwise.
 */
export function diskPluginProcess(files: DiskPluginFiles): Promise<number | undefined> {
  return liveProcessFromPidFile(files.pidFile, { names: ["MainThread", "node"], argument: files.socket });
}
