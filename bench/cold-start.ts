import type { ContainerSpec } from "@pai/pool";
import { benchDriver, benchImage, benchLabels } from "./bench-containers.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { type Summary, summarize } from "./stats.ts";

interface Variant {
  name: string;
  spec: Partial<ContainerSpec>;
  create: number[];
  remove: number[];
}

/**
 * Cold start — create + start + the first command (`docker exec true`), the container removed untimed — of one
 * container per variant, the variants taking turns in every round so they see the same machine: today's path
 * (runc, plain volumes), crun, the disk bound (`limits.diskBytes` on the `pai-disk` plugin) on each runtime.
 * Removal is timed too (it is engine work a churning pool pays).
 */
export async function benchColdStart(options: { rounds: number }): Promise<BenchRow[]> {
  const image = await benchImage();
  const variants: Variant[] = [
    { name: "runc, plain volumes (today)", spec: { runtime: "runc", limits: { diskBytes: null } } },
    { name: "crun, plain volumes", spec: { runtime: "crun", limits: { diskBytes: null } } },
    { name: "runc, 2 GiB disk", spec: { runtime: "runc" } },
    { name: "crun, 2 GiB disk (default)", spec: { runtime: "crun" } },
  ].map((variant) => ({ ...variant, create: [], remove: [] }));
  const once = async (variant: Variant) => {
    const startedAt = performance.now();
    const { id } = await benchDriver.create({ image, ...variant.spec }, benchLabels);
    try {
      await benchDriver.start(id);
      const result = await benchDriver.exec(id, { cmd: ["true"] });
      if (result.exitCode !== 0) throw new Error(`first command exited ${result.exitCode}`);
      variant.create.push(performance.now() - startedAt);
    } finally {
      const removeAt = performance.now();
      await benchDriver.remove(id);
      variant.remove.push(performance.now() - removeAt);
    }
  };
  for (const variant of variants) await once(variant); // warm-up: image cache, the plugin's template
  for (const variant of variants) variant.create.length = variant.remove.length = 0;
  for (let round = 0; round < options.rounds; round++) {
    // Rotate the order so no variant always follows another's removal.
    for (let i = 0; i < variants.length; i++) await once(variants[(round + i) % variants.length]!);
  }
  const [today, crun, runcDisk, crunDisk] = variants.map((variant) => ({
    create: summarize(variant.create),
    remove: summarize(variant.remove),
  })) as [Timings, Timings, Timings, Timings];
  const removal = variants
    .map((variant) => `${variant.name} ${summarize(variant.remove).p50.toFixed(0)} ms`)
    .join(", ");
  return [
    ratioRow({
      name: "cold start: crun vs runc (create+start+exec, plain volumes)",
      subject: crun.create,
      baseline: today.create,
      note: `remove p50: ${removal}`,
    }),
    ratioRow({
      name: "cold start: 2 GiB disk bound (pai-disk) vs plain volumes, on crun",
      subject: crunDisk.create,
      baseline: crun.create,
      note: `the same on runc: ${fmtRatio(runcDisk.create, today.create)}`,
    }),
    ratioRow({
      name: "cold start: default (crun + 2 GiB disk) vs today's runc path",
      subject: crunDisk.create,
      baseline: today.create,
      target: "≤ 0.6 (issue 11)",
    }),
  ];
}

interface Timings {
  create: Summary;
  remove: Summary;
}

function fmtRatio(subject: Summary, baseline: Summary): string {
  return `${subject.p50.toFixed(0)} / ${baseline.p50.toFixed(0)} ms p50 = ${(subject.p50 / baseline.p50).toFixed(3)}`;
}
