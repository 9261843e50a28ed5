import { type ContainerDriver, type ContainerSpec, createDockerDriver } from "@pai/pool";
import { benchImage, benchLabels } from "./bench-containers.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { type Summary, summarize } from "./stats.ts";

interface Variant {
  name: string;
  driver: ContainerDriver;
  spec: Partial<ContainerSpec>;
  create: number[];
  remove: number[];
}

/**
 * Cold start — create + start + the first command (`docker exec true`), the container removed untimed — of one
 * container per variant, the variants taking turns in every round so they see the same machine. Each variant adds
 * one change to the previous one: today's path (runc, the engine's network setup for `none`, plain volumes), crun,
 * no engine network setup (`skipNoneNetworkSetup`), the 2 GiB disk bound (the `pai-disk` plugin) — the default.
 * Removal is timed too (it is engine work a churning pool pays).
 */
export async function benchColdStart(options: { rounds: number }): Promise<BenchRow[]> {
  const image = await benchImage();
  const variants: Variant[] = [
    {
      name: "today: runc, engine network, plain volumes",
      driver: createDockerDriver({ preferredRuntime: null, skipNoneNetworkSetup: false }),
      spec: { limits: { diskBytes: null } },
    },
    {
      name: "+ crun",
      driver: createDockerDriver({ skipNoneNetworkSetup: false }),
      spec: { limits: { diskBytes: null } },
    },
    {
      name: "+ no engine network setup",
      driver: createDockerDriver(),
      spec: { limits: { diskBytes: null } },
    },
    { name: "+ 2 GiB disk (default)", driver: createDockerDriver(), spec: {} },
  ].map((variant) => ({ ...variant, create: [], remove: [] }));
  const once = async (variant: Variant) => {
    const startedAt = performance.now();
    const { driver } = variant;
    const { id } = await driver.create({ image, ...variant.spec }, benchLabels);
    try {
      await driver.start(id);
      const result = await driver.exec(id, { cmd: ["true"] });
      if (result.exitCode !== 0) throw new Error(`first command exited ${result.exitCode}`);
      variant.create.push(performance.now() - startedAt);
    } finally {
      const removeAt = performance.now();
      await driver.remove(id);
      variant.remove.push(performance.now() - removeAt);
    }
  };
  for (const variant of variants) await once(variant); // warm-up: image cache, the plugin's template
  for (const variant of variants) variant.create.length = variant.remove.length = 0;
  for (let round = 0; round < options.rounds; round++) {
    // Rotate the order so no variant always follows another's removal.
    for (let i = 0; i < variants.length; i++) await once(variants[(round + i) % variants.length]!);
  }
  const [today, crun, network, disk] = variants.map((variant) => summarize(variant.create)) as [
    Summary,
    Summary,
    Summary,
    Summary,
  ];
  const removal = variants
    .map((variant) => `${variant.name} ${summarize(variant.remove).p50.toFixed(0)} ms`)
    .join("; ");
  return [
    ratioRow({
      name: "cold start (create+start+exec): crun vs runc",
      subject: crun,
      baseline: today,
    }),
    ratioRow({
      name: "cold start: no engine network setup for none (crun)",
      subject: network,
      baseline: crun,
    }),
    ratioRow({
      name: "cold start: 2 GiB disk bound (pai-disk) vs plain volumes",
      subject: disk,
      baseline: network,
      note: `remove p50: ${removal}`,
    }),
    ratioRow({
      name: "cold start: default vs today's runc path",
      subject: disk,
      baseline: today,
      target: "≤ 0.6 (issue 11)",
    }),
  ];
}
