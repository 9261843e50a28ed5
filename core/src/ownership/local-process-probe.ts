import { readFileSync, readlinkSync } from "node:fs";
import { readFile } from "node:fs/promises";

/** Where a process runs, as another process on the same machine can check it (see `OwnerRecord`). */
export interface ProcessPlace {
  /** The machine's boot (`/proc/sys/kernel/random/boot_id`). */
  bootId: string;
  /** The process's pid namespace (`readlink /proc/self/ns/pid`). */
  pidNamespace: string;
  /** When the process started, in clock ticks since the boot (field 22 of `/proc/<pid>/stat`). */
  processStartTicks: number;
}

/** What an owner record says of where its process runs. */
export interface RecordedProcess {
  pid: number;
  bootId?: string | undefined;
  pidNamespace?: string | undefined;
  processStartTicks?: number | undefined;
}

/** Tells, on this machine, whether another process that recorded its place is gone. */
export interface LocalProcessProbe {
  /** This process's place; `undefined` where `/proc` cannot tell it (not Linux). */
  readonly place: ProcessPlace | undefined;
  /**
   * True only when `process` ran on this machine's current boot, in this process's pid namespace, and no process
   * has its pid any more, or the one that has it is a zombie or started at another time (a later process that got
   * the pid). False whenever that cannot be known for certain: another machine or namespace, a record without a
   * place, a `/proc` that is not this namespace's (a pid namespace without its own `/proc` mount).
   */
  isGone(process: RecordedProcess): Promise<boolean>;
}

/** State and start time (ticks since boot) of a `/proc/<pid>/stat` line; the name may hold spaces and parentheses. */
function parseStat(stat: string): { state: string; startTicks: number } | undefined {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // fields[0] is field 3 (state), so field 22 (starttime) is fields[19].
  const startTicks = Number(fields[19]);
  return fields[0] && Number.isSafeInteger(startTicks) ? { state: fields[0], startTicks } : undefined;
}

/** This process's place, read once; `undefined` where `/proc` does not tell it. */
function ownPlace(): ProcessPlace | undefined {
  try {
    const stat = parseStat(readFileSync("/proc/self/stat", "utf8"));
    if (!stat) return undefined;
    return {
      bootId: readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim(),
      pidNamespace: readlinkSync("/proc/self/ns/pid"),
      processStartTicks: stat.startTicks,
    };
  } catch {
    return undefined;
  }
}

/** Whether `/proc` shows this process's own pid namespace: its `self` is this process's pid there. */
function procIsOwnNamespace(): boolean {
  try {
    return readlinkSync("/proc/self") === String(process.pid);
  } catch {
    return false;
  }
}

/**
 * The probe of this process (Linux `/proc`): its place to record on its owner record, and whether a process another
 * owner record names is gone. Liveness on other machines, or in other pid namespaces (two containers with one host
 * name), is never decided here: their heartbeats tell it.
 */
export function createLocalProcessProbe(): LocalProcessProbe {
  const place = ownPlace();
  const canProbe = place !== undefined && procIsOwnNamespace();
  return {
    place,
    async isGone(recorded) {
      if (!canProbe || !place) return false;
      if (recorded.bootId !== place.bootId || recorded.pidNamespace !== place.pidNamespace) return false;
      if (recorded.processStartTicks === undefined || !(recorded.pid > 0)) return false;
      let stat: string;
      try {
        stat = await readFile(`/proc/${recorded.pid}/stat`, "utf8");
      } catch (error) {
        return (error as NodeJS.ErrnoException).code === "ENOENT";
      }
      const parsed = parseStat(stat);
      if (!parsed) return false;
      return parsed.state === "Z" || parsed.state === "X" || parsed.startTicks !== recorded.processStartTicks;
    },
  };
}
