import { readFile } from "node:fs/promises";
import { dockerSandbox } from "@pai/sandbox";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { containersMemory } from "./containers-memory.ts";

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
    ({ rssKiB, pssKiB, processes } = await containersMemory(ids));
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
