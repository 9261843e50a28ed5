import { readdir, readFile } from "node:fs/promises";
import { dockerSandbox } from "@pai/sandbox";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";

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

/**
 * Host memory per idle warm sandbox: the RSS of every process in the container's cgroup (init, the main
 * process, the agent) plus its containerd shim, read from /proc, over `count` idle containers of a warm pool.
 * RSS counts the shared pages of the shim's binary once per shim; PSS (shared pages split) is reported beside it.
 */
export async function benchIdleSandboxMemory(options: { count: number }): Promise<BenchRow[]> {
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("memory"),
    pool: { min: options.count, max: options.count },
    poolTuning: { maxConcurrentCreates: 4 },
  });
  let rssKiB = 0;
  let pssKiB = 0;
  let processes = 0;
  let containers = 0;
  const availableBefore = await memAvailableKiB();
  let availableAfter = availableBefore;
  try {
    await binding.start?.();
    await new Promise((resolve) => setTimeout(resolve, 1000)); // let the fresh processes settle
    availableAfter = await memAvailableKiB();
    const rows = await binding.metrics();
    if (!rows || rows.available < options.count) throw new Error("the pool did not warm");
    const { createDockerDriver, poolLabels } = await import("@pai/pool");
    const list = await createDockerDriver().list({ labels: { [poolLabels.pool]: binding.poolId ?? "" } });
    const ids = list.map((row) => row.id);
    containers = ids.length;
    for (const [, pids] of await processesOf(ids)) {
      for (const pid of pids) {
        const memory = await memoryOf(pid).catch(() => undefined);
        if (!memory) continue;
        processes++;
        rssKiB += memory.rssKiB;
        pssKiB += memory.pssKiB ?? memory.rssKiB;
      }
    }
  } finally {
    await binding.close();
  }
  const rssMiB = rssKiB / 1024 / Math.max(1, containers);
  const pssMiB = pssKiB / 1024 / Math.max(1, containers);
  const deltaMiB = (availableBefore - availableAfter) / 1024 / Math.max(1, containers);
  return [
    {
      // PSS splits each shared page among the processes sharing it (the shims share one binary and libc), so
      // its sum over N sandboxes is what they cost the host together; RSS counts every shared page N times.
      name: "host memory per idle warm sandbox (container + shim + agent, PSS)",
      value: pssMiB,
      unit: "MiB",
      target: "≤ 8 MiB",
      met: pssMiB <= 8,
      note: `${containers} idle containers, ${processes} processes; RSS ${rssMiB.toFixed(2)} MiB per sandbox (shared pages counted once per process); MemAvailable fell ${deltaMiB.toFixed(2)} MiB per sandbox (includes the engine's own bookkeeping)`,
    },
  ];
}

/** The kernel's estimate of memory available for new work, in KiB. */
async function memAvailableKiB(): Promise<number> {
  const meminfo = await readFile("/proc/meminfo", "utf8");
  return Number(/MemAvailable:\s+(\d+)/.exec(meminfo)?.[1] ?? 0);
}
