import { readdir, readFile } from "node:fs/promises";

interface ProcessMemory {
  pid: number;
  rssKiB: number;
  pssKiB: number | undefined;
}

async function memoryOf(pid: number): Promise<ProcessMemory> {
  const status = await readFile(`/proc/${pid}/status`, "utf8");
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8").catch(() => "");
  const pss = /Pss:\s+(\d+)/.exec(rollup)?.[1];
  return { pid, rssKiB, pssKiB: pss === undefined ? undefined : Number(pss) };
}

/** Host pids whose cgroup names the container, and the containerd shim that runs it (`-id <container>`). */
async function processesOf(containerIds: readonly string[]) {
  const byContainer = new Map<string, number[]>(containerIds.map((id) => [id, []]));
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const [cgroup, cmdline] = await Promise.all([
      readFile(`/proc/${pid}/cgroup`, "utf8").catch(() => ""),
      readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => ""),
    ]);
    for (const id of containerIds) {
      const isShim = cmdline.includes("containerd-shim") && cmdline.split("\0").includes(id);
      if (isShim || cgroup.includes(id)) byContainer.get(id)?.push(pid);
    }
  }
  return byContainer;
}

/** What the processes of some containers hold of the host's memory, summed. */
export interface ContainersMemory {
  rssKiB: number;
  /** Shared pages split among the processes sharing them (RSS where the kernel gives no PSS). */
  pssKiB: number;
  processes: number;
}

/**
 * The memory of every process in the containers' cgroups (init, the main process, the agent, what they started)
 * and their containerd shims, read from /proc.
 */
export async function containersMemory(containerIds: readonly string[]): Promise<ContainersMemory> {
  const total: ContainersMemory = { rssKiB: 0, pssKiB: 0, processes: 0 };
  for (const [, pids] of await processesOf(containerIds)) {
    for (const pid of pids) {
      const memory = await memoryOf(pid).catch(() => undefined);
      if (!memory) continue;
      total.processes++;
      total.rssKiB += memory.rssKiB;
      total.pssKiB += memory.pssKiB ?? memory.rssKiB;
    }
  }
  return total;
}
