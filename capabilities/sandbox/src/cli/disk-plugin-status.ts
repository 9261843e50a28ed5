import { diskPluginAnswers } from "./disk-plugin-answers.ts";
import type { DiskPluginFiles } from "./disk-plugin-files.ts";
import { diskPluginProcess } from "./disk-plugin-process.ts";

/** Whether the disk plugin serves on this machine, and how that was told. */
export interface DiskPluginStatus {
  running: boolean;
  /** `pai-disk answers on /run/docker/plugins/pai-disk.sock (pid 2874)`, `nothing answers on …`. */
  detail: string;
}

/**
 * Whether disk plugin `files.name` serves on this machine: it answers on its socket or, when its socket admits only
 * root and this user is not, its pid file names a live daemon serving that socket.
 */
export async function diskPluginStatus(options: {
  files: DiskPluginFiles;
  signal: AbortSignal;
}): Promise<DiskPluginStatus> {
  const { files, signal } = options;
  const [answer, pid] = await Promise.all([
    diskPluginAnswers(files.socket, { signal }),
    diskPluginProcess(files),
  ]);
  const pidNote = pid === undefined ? "" : ` (pid ${pid})`;
  if (answer === "answers")
    return { running: true, detail: `${files.name} answers on ${files.socket}${pidNote}` };
  if (answer === "no-access") {
    return pid === undefined
      ? {
          running: false,
          detail: `${files.socket} admits only root, and no ${files.name} daemon runs (${files.pidFile})`,
        }
      : { running: true, detail: `${files.name} runs${pidNote} on ${files.socket}, which admits only root` };
  }
  return { running: false, detail: `nothing answers on ${files.socket}` };
}
