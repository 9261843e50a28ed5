import { dockerSandbox, type ProvisionedSandbox } from "@pai/sandbox";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { summarize } from "./stats.ts";

const SANDBOXES = 8;
const IN_FLIGHT_PER_SANDBOX = 2;

/** Commands (`true`) per second through the facade across 8 sandboxes at once, each with 2 commands in flight. */
export async function benchCommandsPerSecond(options: { seconds: number }): Promise<BenchRow[]> {
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("cps"),
    pool: { min: SANDBOXES, max: SANDBOXES },
    poolTuning: { maxConcurrentCreates: 4 },
  });
  const leases: ProvisionedSandbox[] = [];
  const latencies: number[] = [];
  let completed = 0;
  let elapsedMs = 0;
  try {
    await binding.start?.();
    for (let i = 0; i < SANDBOXES; i++) {
      leases.push(
        await binding.provision({
          leaseKey: `bench:cps:${i}`,
          lifetime: "thread",
          signal: new AbortController().signal,
        }),
      );
    }
    for (const lease of leases) await lease.facade.runCommand({ command: "true", args: [] });
    const startedAt = performance.now();
    const deadline = startedAt + options.seconds * 1000;
    const worker = async (lease: ProvisionedSandbox) => {
      while (performance.now() < deadline) {
        const t = performance.now();
        const result = await lease.facade.runCommand({ command: "true", args: [] });
        if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
        latencies.push(performance.now() - t);
        completed++;
      }
    };
    await Promise.all(
      leases.flatMap((lease) => Array.from({ length: IN_FLIGHT_PER_SANDBOX }, () => worker(lease))),
    );
    elapsedMs = performance.now() - startedAt;
  } finally {
    await Promise.all(leases.map((lease) => lease.release()));
    await binding.close();
  }
  const rate = completed / (elapsedMs / 1000);
  return [
    {
      name: `commands/s across ${SANDBOXES} sandboxes (${IN_FLIGHT_PER_SANDBOX} in flight each)`,
      subject: summarize(latencies),
      value: rate,
      unit: "commands/s",
      target: "≥ 500/s",
      met: rate >= 500,
      note: `${completed} commands in ${(elapsedMs / 1000).toFixed(2)} s; the latency column is per command`,
    },
  ];
}
