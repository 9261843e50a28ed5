import { dockerSandbox } from "@pai/sandbox";
import { benchDriver, benchImage, benchLabels, benchPoolId } from "./bench-containers.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { createFirstCommandRuntime } from "./sandbox-runtime.ts";
import { summarize } from "./stats.ts";

/**
 * Time to first command on a warm pool — the first `ctx.capabilities.sandbox` access in a new thread through
 * createAgentRuntime and a scripted model, then `true` — vs a cold container: create + start + `docker exec true`.
 * Rounds alternate; before each warm round the pool is refilled (untimed), so every warm round finds it warm.
 */
export async function benchTimeToFirstCommand(options: { rounds: number }): Promise<BenchRow[]> {
  const image = await benchImage();
  const binding = dockerSandbox({
    image,
    poolId: benchPoolId("ttfc"),
    pool: { min: 2, max: 4 },
    lifetime: "run",
  });
  const { runtime, converse } = createFirstCommandRuntime(binding);
  const warm: number[] = [];
  const cold: number[] = [];
  try {
    await binding.start?.();
    const waitWarm = async () => {
      while ((binding.metrics()?.available ?? 0) < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    };
    const coldOnce = async () => {
      const startedAt = performance.now();
      const { id } = await benchDriver.create({ image }, benchLabels);
      try {
        await benchDriver.start(id);
        const result = await benchDriver.exec(id, { cmd: ["true"] });
        if (result.exitCode !== 0) throw new Error(`cold exec exited ${result.exitCode}`);
        return performance.now() - startedAt;
      } finally {
        await benchDriver.remove(id);
      }
    };
    for (let i = 0; i < 3; i++) {
      await waitWarm();
      await converse(`warmup-${i}`);
    }
    await coldOnce();
    for (let i = 0; i < options.rounds; i++) {
      await waitWarm();
      warm.push(await converse(`ttfc-${i}`));
      if (i % 3 === 0) cold.push(await coldOnce());
    }
  } finally {
    await runtime.close();
    await binding.close();
  }
  const subject = summarize(warm);
  const baseline = summarize(cold);
  const met = subject.p50 <= 5 && subject.p99 <= 25;
  return [
    {
      ...ratioRow({
        name: "time to first command: warm (runtime) vs cold create+start+exec",
        subject,
        baseline,
      }),
      target: "p50 ≤ 5 ms, p99 ≤ 25 ms",
      met,
    },
  ];
}
