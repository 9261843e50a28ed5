import { readFile } from "node:fs/promises";

/** The name the kernel gives process `pid` (`/proc/<pid>/stat`), or `undefined` when it is gone or a zombie. */
async function processName(pid: number): Promise<string | undefined> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  // "PID (COMM) STATE ...": COMM may hold spaces and parentheses, so it ends at the last ") ".
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(") ");
  if (open < 0 || close < open) return undefined;
  const state = stat.slice(close + 2, close + 3);
  return state === "Z" || state === "X" || state === "x" ? undefined : stat.slice(open + 1, close);
}

/** Whether process `pid`'s arguments include `argument` (`/proc/<pid>/cmdline`). */
async function hasArgument(pid: number, argument: string): Promise<boolean> {
  try {
    return (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0").includes(argument);
  } catch {
    return false;
  }
}

/**
 * The pid a pid file names when it is a live process with one of `names` (its kernel name: `dockerd`; Node names
 * its main thread `MainThread`, older versions `node`) and, when given, `argument` among its arguments;
 * `undefined` for a missing file, a dead process, or a pid reused by another program (pid files outlive reboots
 * where /run is not a tmpfs).
 */
export async function liveProcessFromPidFile(
  pidFile: string,
  options: { names: readonly string[]; argument?: string },
): Promise<number | undefined> {
  let text: string;
  try {
    text = await readFile(pidFile, "utf8");
  } catch {
    return undefined;
  }
  const pid = Number.parseInt(text.trim(), 10);
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const name = await processName(pid);
  if (name === undefined || !options.names.includes(name)) return undefined;
  return options.argument === undefined || (await hasArgument(pid, options.argument)) ? pid : undefined;
}
