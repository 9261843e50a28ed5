import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, open, readFile, writeFile } from "node:fs/promises";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { diskVolumePluginEntryPath } from "@pai/pool";
import { diskPluginAnswers } from "./disk-plugin-answers.ts";
import type { DiskPluginFiles } from "./disk-plugin-files.ts";
import { diskPluginProcess } from "./disk-plugin-process.ts";
import { findExecutable } from "./find-executable.ts";

/** How long a started daemon may take to answer. */
const startTimeoutMs = 30_000;

/** Whether process `pid` exists (a zombie counts: it is not reaped yet). */
function exists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Stops process `pid`: SIGTERM, then SIGKILL when it is still there after 5 s. */
async function stop(pid: number, signal: AbortSignal): Promise<void> {
  process.kill(pid, "SIGTERM");
  for (let waited = 0; waited < 5_000 && exists(pid); waited += 100) await sleep(100, undefined, { signal });
  if (exists(pid)) process.kill(pid, "SIGKILL");
}

/** The last lines of the daemon's log, to explain a failed start. */
async function logTail(log: string): Promise<string> {
  const text = await readFile(log, "utf8").catch(() => "");
  return text.trimEnd().split("\n").slice(-15).join("\n");
}

/**
 * What the daemon keeps of root's privileges: only `CAP_SYS_ADMIN` (mounting loop devices; mkfs works on the image
 * file it owns) in its bounding set, none inheritable, and no_new_privs — with `setpriv` (util-linux), which runs it
 * under them. Without `setpriv` it runs with root's.
 */
const DAEMON_PRIVILEGES = ["--no-new-privs", "--inh-caps=-all", "--bounding-set=-all,+sys_admin"];

/**
 * The daemon, in a session of its own (no terminal's signals reach it), its output written straight to the open
 * file `logFd`, with the privileges above when `setpriv` is at hand. `node:child_process` rather than execa: the
 * point is a raw process that outlives this one, with no pipe to it and no handle holding this process (execa's
 * types allow neither a file descriptor nor `unref`).
 */
function spawnDaemon(files: DiskPluginFiles, logFd: number, setpriv: string | undefined): ChildProcess {
  const daemon = [
    process.execPath,
    diskVolumePluginEntryPath,
    "--socket",
    files.socket,
    "--state-dir",
    files.stateDir,
  ];
  const [command, ...args] = setpriv ? [setpriv, ...DAEMON_PRIVILEGES, "--", ...daemon] : daemon;
  return spawn(command!, args, { cwd: "/", detached: true, stdio: ["ignore", logFd, logFd] });
}

/**
 * Starts the disk volume plugin's daemon (`diskVolumePluginEntryPath`, on this Node) detached from this process,
 * in a session of its own with `/` as its folder, output appended to its log and its pid in its pid file, and
 * waits until it answers on its socket: it keeps serving after the command line exits. A daemon of an earlier
 * start that no longer answers is stopped first. Needs root (the daemon mounts loop devices).
 *
 * @returns the daemon's pid
 * @throws Error naming what went wrong (with the end of its log) when the daemon exits or does not answer within
 * 30 s; it is stopped then.
 */
export async function startDiskPlugin(options: {
  files: DiskPluginFiles;
  signal: AbortSignal;
}): Promise<number> {
  const { files, signal } = options;
  const stale = await diskPluginProcess(files);
  if (stale !== undefined) await stop(stale, signal);
  await Promise.all([
    mkdir(dirname(files.socket), { recursive: true }),
    mkdir(files.stateDir, { recursive: true }),
    mkdir(dirname(files.log), { recursive: true }),
  ]);
  const log = await open(files.log, "a");
  let daemon: ChildProcess;
  try {
    const setpriv = await findExecutable("setpriv");
    await log.write(
      `=== ${new Date().toISOString()} pai engine setup starting the disk plugin ${files.name}` +
        (setpriv ? " (bounding set: sys_admin; no_new_privs)\n" : " (no setpriv: with root's privileges)\n"),
    );
    daemon = spawnDaemon(files, log.fd, setpriv);
  } finally {
    await log.close();
  }
  let exited = false;
  daemon.once("exit", () => {
    exited = true;
  });
  const spawnFailed = new Promise<Error>((resolve) => daemon.once("error", resolve));
  const pid = daemon.pid;
  if (pid === undefined)
    throw new Error(`could not start ${process.execPath}: ${(await spawnFailed).message}`);
  try {
    await writeFile(files.pidFile, `${pid}\n`);
    const deadline = Date.now() + startTimeoutMs;
    while ((await diskPluginAnswers(files.socket, { signal })) !== "answers") {
      if (exited) throw new Error(`the disk plugin exited as it started:\n${await logTail(files.log)}`);
      if (Date.now() > deadline) {
        throw new Error(
          `the disk plugin did not answer within ${startTimeoutMs / 1000} s:\n${await logTail(files.log)}`,
        );
      }
      await sleep(200, undefined, { signal });
    }
  } catch (error) {
    if (!exited) await stop(pid, AbortSignal.timeout(10_000)).catch(() => undefined);
    throw error;
  }
  daemon.unref();
  return pid;
}
