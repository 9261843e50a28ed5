import { createDockerDriver } from "@pai/pool";
import { type DockerSandboxBinding, dockerSandbox } from "@pai/sandbox";
import { benchDriver, benchImage, benchLabels, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { createFirstCommandRuntime } from "./sandbox-runtime.ts";
import { summarize } from "./stats.ts";

/**
 * The engine's create+start rate: `count` containers of the sandbox image, `concurrency` at a time, removed
 * afterwards (untimed). Containers per second.
 */
async function measureCreateRate(image: string, count: number, concurrency: number): Promise<number> {
  const ids: string[] = [];
  let next = 0;
  const startedAt = performance.now();
  try {
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (next < count) {
          next++;
          const { id } = await benchDriver.create({ image }, benchLabels);
          ids.push(id);
          await benchDriver.start(id);
        }
      }),
    );
    return count / ((performance.now() - startedAt) / 1000);
  } finally {
    await Promise.all(ids.map((id) => benchDriver.remove(id).catch(() => undefined)));
  }
}

/** One burst of `conversations` new conversations at once on `binding`: each one's time to first command. */
async function burst(
  binding: DockerSandboxBinding,
  conversations: number,
): Promise<{ ttfc: number[]; wallMs: number; failures: number; firstError: unknown }> {
  const { runtime, converse } = createFirstCommandRuntime(binding);
  const ttfc: number[] = [];
  let failures = 0;
  let firstError: unknown;
  let wallMs = 0;
  try {
    await binding.start?.();
    const startedAt = performance.now();
    await Promise.all(
      Array.from({ length: conversations }, async (_, i) => {
        const t = performance.now();
        try {
          await converse(`burst-${i}`);
          ttfc.push(performance.now() - t);
        } catch (error) {
          failures++;
          firstError ??= error;
        }
      }),
    );
    wallMs = performance.now() - startedAt;
  } finally {
    await runtime.close();
    await binding.close();
  }
  return { ttfc, wallMs, failures, firstError };
}

/**
 * A burst of `conversations` new conversations at once through createAgentRuntime (pool `min` 10, `max` big
 * enough for all), each running `true` in its own sandbox, on today's default path (crun, no engine network
 * setup, the disk bound) and, side by side, on the path before it (runc, the engine's network setup, plain
 * volumes) with the same pool. The physical bound is the engine's create+start rate on the default path,
 * measured in the same run: (conversations − min) containers must be made.
 */
export async function benchConversationBurst(options: {
  conversations: number;
  min: number;
  maxConcurrentCreates: number;
}): Promise<BenchRow[]> {
  const image = await benchImage();
  const { conversations, min, maxConcurrentCreates } = options;
  const pool = { min, max: conversations + min, acquireTimeoutMs: 120_000 };
  // The engine's rate is measured right before and right after the burst (same concurrency), and averaged:
  // one short sample swings by ±20% on a busy 2-core machine.
  const sample = Math.min(30, conversations);
  const rateBefore = await measureCreateRate(image, sample, maxConcurrentCreates);
  const current = await burst(
    dockerSandbox({ image, poolId: benchPoolId("burst"), pool, poolTuning: { maxConcurrentCreates } }),
    conversations,
  );
  const rateAfter = await measureCreateRate(image, sample, maxConcurrentCreates);
  const before = await burst(
    dockerSandbox({
      image,
      poolId: benchPoolId("burst-runc"),
      pool,
      poolTuning: { maxConcurrentCreates },
      driver: createDockerDriver({ preferredRuntime: null, skipNoneNetworkSetup: false }),
      limits: { diskBytes: null },
    }),
    conversations,
  );
  const createRate = (rateBefore + rateAfter) / 2;
  const boundMs = ((conversations - min) / createRate) * 1000;
  const wallRatio = current.wallMs / boundMs;
  const succeeded = conversations - current.failures;
  const subject = summarize(current.ttfc);
  const baseline = summarize(before.ttfc);
  const p95Ratio = subject.p95 / baseline.p95;
  return [
    {
      name: `burst of ${conversations} new conversations (pool min ${min}): time to first command vs runc path`,
      subject,
      baseline,
      ratio: p95Ratio,
      value: wallRatio,
      unit: "× create-rate bound",
      target: `${conversations}/${conversations}, wall ≤ 1.2× bound, p95 ≤ 0.5× runc path`,
      met: succeeded === conversations && wallRatio <= 1.2 && p95Ratio <= 0.5,
      note:
        `ratio is p95/p95; ${succeeded}/${conversations} succeeded (runc path ${conversations - before.failures}); wall ${current.wallMs.toFixed(0)} ms ` +
        `(runc path ${before.wallMs.toFixed(0)} ms) vs bound ${boundMs.toFixed(0)} ms ` +
        `(${conversations - min} containers at the engine's ${createRate.toFixed(2)} create+start/s — ${rateBefore.toFixed(2)} before, ${rateAfter.toFixed(2)} after — ` +
        `${maxConcurrentCreates} at once)` +
        `${current.firstError ? `; first failure: ${String(current.firstError)}` : ""}`,
    },
  ];
}

/** Runs the burst `repeats` times and reports the median one (the rows' ratios are listed in its note). */
export async function benchConversationBursts(options: {
  repeats: number;
  conversations: number;
  min: number;
  maxConcurrentCreates: number;
}): Promise<BenchRow[]> {
  const rows: BenchRow[] = [];
  for (let i = 0; i < options.repeats; i++) rows.push(...(await benchConversationBurst(options)));
  rows.sort((a, b) => (a.value ?? Number.POSITIVE_INFINITY) - (b.value ?? Number.POSITIVE_INFINITY));
  const median = rows[Math.floor(rows.length / 2)]!;
  if (rows.length === 1) return [median];
  return [
    {
      ...median,
      note: `median of ${rows.length} bursts by wall/bound (${rows.map((row) => row.value?.toFixed(2)).join(", ")}); ${median.note ?? ""}`,
    },
  ];
}
