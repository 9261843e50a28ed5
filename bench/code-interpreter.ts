import { createDockerDriver, poolLabels } from "@pai/pool";
import { type DockerSandboxBinding, dockerSandbox, type SandboxFacade } from "@pai/sandbox";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { containersMemory } from "./containers-memory.ts";
import { sideBySide, summarize, time } from "./stats.ts";

const signal = new AbortController().signal;

/** Resolves once the binding's pool holds `count` warm containers. */
async function warmed(binding: DockerSandboxBinding, count: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (((await binding.metrics())?.available ?? 0) < count) {
    if (Date.now() > deadline) throw new Error(`the pool ${binding.poolId} did not warm ${count} containers`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** PSS per warm container of the binding's pool, in MiB, with how many containers and processes it was read over. */
async function pssPerContainer(binding: DockerSandboxBinding) {
  const list = await createDockerDriver().list({ labels: { [poolLabels.pool]: binding.poolId ?? "" } });
  const memory = await containersMemory(list.map((row) => row.id));
  const containers = Math.max(1, list.length);
  return {
    pssMiB: memory.pssKiB / 1024 / containers,
    rssMiB: memory.rssKiB / 1024 / containers,
    containers: list.length,
    processes: memory.processes,
  };
}

/** `1 + 1` through `runCode`, checked. */
async function onePlusOne(box: SandboxFacade): Promise<void> {
  const { results, error } = await box.runCode("1 + 1");
  if (error || results[0]?.text !== "2")
    throw new Error(`runCode("1 + 1") gave ${JSON.stringify({ results, error })}`);
}

/**
 * The code interpreter, side by side in one run:
 *
 * - `runCode("1 + 1")` on a warm context vs `runCommand("python3 -c 'print(1 + 1)'")` in the same sandbox (a fresh
 *   interpreter per call), alternating;
 * - the first `runCode` of a new conversation: a sandbox from a pool with `codeInterpreter: { prewarm: ["python"] }`
 *   (IPython already running) vs one from a pool without (IPython starts on that call), alternating, each on a
 *   container the pool had warm;
 * - host memory (PSS, the containers' processes and shims) per warm container of each of the two pools.
 */
export async function benchCodeInterpreter(options: {
  rounds: number;
  conversations: number;
  memoryCount: number;
}): Promise<BenchRow[]> {
  const image = await benchImage();
  const pool = { min: options.memoryCount, max: options.memoryCount + 2 };
  const poolTuning = { maxConcurrentCreates: 2 };
  const cold = dockerSandbox({ image, poolId: benchPoolId("interpreter-cold"), pool, poolTuning });
  const prewarmed = dockerSandbox({
    image,
    poolId: benchPoolId("interpreter-prewarmed"),
    pool,
    poolTuning,
    codeInterpreter: { prewarm: ["python"] },
  });
  try {
    await Promise.all([cold.start?.(), prewarmed.start?.()]);
    await Promise.all([warmed(cold, options.memoryCount), warmed(prewarmed, options.memoryCount)]);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // let the fresh processes settle
    const memoryCold = await pssPerContainer(cold);
    const memoryPrewarmed = await pssPerContainer(prewarmed);

    // The first cell of a new conversation, each on a container its pool had warm.
    const first = { cold: [] as number[], prewarmed: [] as number[] };
    let conversation = 0;
    const firstRunCode = async (binding: DockerSandboxBinding, samples: number[]) => {
      // both pools full: no container is being created (and its kernel started) beside the measured call
      await Promise.all([warmed(cold, options.memoryCount), warmed(prewarmed, options.memoryCount)]);
      const resource = await binding.provision({
        leaseKey: `bench:interpreter-${conversation++}`,
        lifetime: "thread",
        signal,
      });
      try {
        samples.push(await time(() => onePlusOne(resource.facade)));
      } finally {
        await resource.release();
      }
    };
    for (let i = 0; i < options.conversations; i++) {
      const order = i % 2 === 0 ? ([cold, prewarmed] as const) : ([prewarmed, cold] as const);
      for (const binding of order)
        await firstRunCode(binding, binding === cold ? first.cold : first.prewarmed);
    }

    // A warm context against a fresh interpreter per call, in one sandbox.
    const resource = await cold.provision({ leaseKey: "bench:interpreter-warm", lifetime: "thread", signal });
    let warm: Awaited<ReturnType<typeof sideBySide>>;
    try {
      const box = resource.facade;
      warm = await sideBySide(
        () => onePlusOne(box),
        async () => {
          const result = await box.runCommand({ command: "python3 -c 'print(1 + 1)'" });
          if (result.stdout !== "2\n") throw new Error(`python3 -c printed ${JSON.stringify(result.stdout)}`);
        },
        { rounds: options.rounds, warmup: 5 },
      );
    } finally {
      await resource.release();
    }

    const speedup = warm.b.p50 / warm.a.p50;
    const prewarmedFirst = summarize(first.prewarmed);
    const coldFirst = summarize(first.cold);
    const kernelMiB = memoryPrewarmed.pssMiB - memoryCold.pssMiB;
    return [
      {
        name: "runCode(`1 + 1`) on a warm context vs runCommand(`python3 -c 'print(1 + 1)'`)",
        subject: warm.a,
        baseline: warm.b,
        ratio: warm.a.p50 / warm.b.p50,
        target: "≥ 5× faster (p50)",
        met: speedup >= 5,
        note: `${speedup.toFixed(1)}× faster than a fresh python3 per call`,
      },
      {
        name: "first runCode of a new conversation: prewarmed kernel vs cold kernel start",
        subject: prewarmedFirst,
        baseline: coldFirst,
        ratio: prewarmedFirst.p50 / coldFirst.p50,
        target: "prewarmed p50 ≤ 100 ms",
        met: prewarmedFirst.p50 <= 100,
        note: `${options.conversations} conversations each; ${(coldFirst.p50 / prewarmedFirst.p50).toFixed(1)}× faster prewarmed`,
      },
      {
        name: "host memory per warm sandbox with a prewarmed Python kernel (PSS)",
        value: memoryPrewarmed.pssMiB,
        unit: "MiB",
        note: `${memoryCold.pssMiB.toFixed(1)} MiB without (the kernel adds ${kernelMiB.toFixed(1)} MiB); RSS ${memoryPrewarmed.rssMiB.toFixed(1)} vs ${memoryCold.rssMiB.toFixed(1)} MiB; over ${memoryPrewarmed.containers} and ${memoryCold.containers} warm containers`,
      },
    ];
  } finally {
    await Promise.all([cold.close(), prewarmed.close()]);
  }
}
