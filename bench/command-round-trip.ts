import { spawn } from "node:child_process";
import { dockerSandbox } from "@pai/sandbox";
import { benchDriver, benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { summarize, time } from "./stats.ts";

function hostTrue(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn("true", [], { stdio: "ignore" });
    child.on("error", reject);
    child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`true exited ${code}`))));
  });
}

/**
 * Round trip of `true`: through the sandbox facade (the in-container agent) vs `docker exec` on the same
 * container (the engine's exec API) vs `child_process.spawn` on the host. The three alternate round by round.
 */
export async function benchCommandRoundTrip(options: { rounds: number }): Promise<BenchRow[]> {
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("rtt"),
    pool: { min: 1, max: 1 },
  });
  const agent: number[] = [];
  const exec: number[] = [];
  const host: number[] = [];
  try {
    const { facade, resourceId, release } = await binding.provision({
      leaseKey: "bench:rtt",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    try {
      const viaFacade = async () => {
        const result = await facade.runCommand({ command: "true", args: [] });
        if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
      };
      const viaExec = async () => {
        const result = await benchDriver.exec(resourceId, { cmd: ["true"] });
        if (result.exitCode !== 0) throw new Error(`docker exec true exited ${result.exitCode}`);
      };
      for (let i = 0; i < 20; i++) {
        await viaFacade();
        await hostTrue();
      }
      for (let i = 0; i < 3; i++) await viaExec();
      // docker exec costs ~50x more: every round runs the two fast paths several times.
      for (let i = 0; i < options.rounds; i++) {
        exec.push(await time(viaExec));
        for (let j = 0; j < 4; j++) {
          agent.push(await time(viaFacade));
          host.push(await time(hostTrue));
        }
      }
    } finally {
      await release();
    }
  } finally {
    await binding.close();
  }
  const subject = summarize(agent);
  const dockerExec = summarize(exec);
  const hostSpawn = summarize(host);
  const speedup = dockerExec.p50 / subject.p50;
  return [
    {
      name: "round trip `true`: facade (agent) vs docker exec",
      subject,
      baseline: dockerExec,
      ratio: subject.p50 / dockerExec.p50,
      target: "p50 ≤ 2 ms, ≥ 20× faster",
      met: subject.p50 <= 2 && speedup >= 20,
      note: `${speedup.toFixed(1)}× faster than docker exec`,
    },
    {
      name: "round trip `true`: facade (agent) vs host child_process.spawn",
      subject,
      baseline: hostSpawn,
      ratio: subject.p50 / hostSpawn.p50,
    },
  ];
}
