import { dockerSandbox } from "@pai/sandbox";
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

/**
 * A burst of `conversations` new conversations at once through createAgentRuntime (pool `min` 10, `max` big
 * enough for all), each running `true` in its own sandbox. The physical bound is the engine's create+start rate,
 * measured in the same run: (conversations − min) containers must be made.
 */
export async function benchConversationBurst(options: {
  conversations: number;
  min: number;
  maxConcurrentCreates: number;
}): Promise<BenchRow[]> {
  const image = await benchImage();
  const { conversations, min, maxConcurrentCreates } = options;
  // The engine's rate is measured right before and right after the burst (same concurrency), and averaged:
  // one short sample swings by ±20% on a busy 2-core machine.
  const sample = Math.min(30, conversations);
  const rateBefore = await measureCreateRate(image, sample, maxConcurrentCreates);
  const binding = dockerSandbox({
    image,
    poolId: benchPoolId("burst"),
    pool: { min, max: conversations + min, acquireTimeoutMs: 120_000 },
    poolTuning: { maxConcurrentCreates },
  });
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
  const rateAfter = await measureCreateRate(image, sample, maxConcurrentCreates);
  const createRate = (rateBefore + rateAfter) / 2;
  const boundMs = ((conversations - min) / createRate) * 1000;
  const ratio = wallMs / boundMs;
  const succeeded = conversations - failures;
  return [
    {
      name: `burst of ${conversations} new conversations (pool min ${min}): time to first command`,
      subject: summarize(ttfc),
      value: ratio,
      unit: "× create-rate bound",
      ratio,
      target: `${conversations}/${conversations}, wall ≤ 1.3× bound`,
      met: succeeded === conversations && ratio <= 1.3,
      note:
        `${succeeded}/${conversations} succeeded; wall ${wallMs.toFixed(0)} ms vs bound ${boundMs.toFixed(0)} ms ` +
        `(${conversations - min} containers at the engine's ${createRate.toFixed(2)} create+start/s — ${rateBefore.toFixed(2)} before, ${rateAfter.toFixed(2)} after — ` +
        `${maxConcurrentCreates} at once)${firstError ? `; first failure: ${String(firstError)}` : ""}`,
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
  rows.sort((a, b) => (a.ratio ?? Number.POSITIVE_INFINITY) - (b.ratio ?? Number.POSITIVE_INFINITY));
  const median = rows[Math.floor(rows.length / 2)]!;
  if (rows.length === 1) return [median];
  return [
    {
      ...median,
      note: `median of ${rows.length} bursts (ratios ${rows.map((row) => row.ratio?.toFixed(2)).join(", ")}); ${median.note ?? ""}`,
    },
  ];
}
