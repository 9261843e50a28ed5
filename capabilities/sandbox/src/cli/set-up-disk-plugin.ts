import { execa } from "execa";
import type { CheckResult } from "./check-result.ts";
import type { DiskPluginFiles } from "./disk-plugin-files.ts";
import { diskPluginStatus } from "./disk-plugin-status.ts";
import { findExecutable } from "./find-executable.ts";
import type { EngineTarget } from "./inspect-engine.ts";
import { startDiskPlugin } from "./start-disk-plugin.ts";

const check = "disk plugin";
const unbounded = "or set limits: { diskBytes: null } for sandboxes without a disk bound";

/**
 * The step of `pai engine setup` that makes the disk volume plugin answer on the engine's host (this machine): it
 * is left alone when it answers, else started (`startDiskPlugin`). Docker finds its socket on first use, with no
 * engine restart; the plugin may start before the engine does.
 */
export async function setUpDiskPlugin(options: {
  engine: EngineTarget;
  root: boolean;
  files: DiskPluginFiles;
  signal: AbortSignal;
}): Promise<CheckResult> {
  const { engine, files, signal } = options;
  if (!engine.local) {
    return {
      check,
      status: "failed",
      message: `the engine runs on another host (${engine.info?.hostname}); the plugin must run there`,
      fix: `run \`npx pai engine setup\` as root on that host, ${unbounded}`,
    };
  }
  const status = await diskPluginStatus({ files, signal });
  if (status.running) return { check, status: "ok", message: status.detail };
  if (!options.root) {
    return {
      check,
      status: "failed",
      message: `${status.detail}, and starting ${files.name} needs root (it mounts loop devices)`,
      fix: `run \`sudo npx pai engine setup\`, ${unbounded}`,
    };
  }
  if ((await findExecutable("mkfs.ext4")) === undefined) {
    return {
      check,
      status: "failed",
      message: `mkfs.ext4 is missing: ${files.name} makes an ext4 filesystem per sandbox`,
      fix: "install e2fsprogs (Debian, Ubuntu: `apt-get install e2fsprogs`), then run `npx pai engine setup` again",
    };
  }
  const losetup = await findExecutable("losetup");
  const loop =
    losetup === undefined ? undefined : await execa(losetup, ["-f"], { reject: false, cancelSignal: signal });
  if (loop === undefined || loop.failed) {
    return {
      check,
      status: "failed",
      message: `no free loop device (losetup -f${loop === undefined ? " is missing" : `: ${loop.stderr.trim()}`}): ${files.name} loop-mounts a disk per sandbox`,
      fix: `load the loop module (\`modprobe loop\`; in a container, run it privileged), ${unbounded}`,
    };
  }
  try {
    const pid = await startDiskPlugin({ files, signal });
    return {
      check,
      status: "changed",
      message: `started ${files.name} (pid ${pid}) on ${files.socket}, state in ${files.stateDir}, log ${files.log}`,
    };
  } catch (error) {
    if (signal.aborted) throw error;
    return {
      check,
      status: "failed",
      message: error instanceof Error ? error.message : String(error),
      fix: `see ${files.log}, then run \`npx pai engine setup\` again`,
    };
  }
}
