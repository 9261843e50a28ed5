import { readdir, readFile } from "node:fs/promises";
import { type DockerSandboxBinding, dockerSandbox, type ProvisionedSandbox } from "@pai/sandbox";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { summarize } from "./stats.ts";

/** Polls `condition` every 20 ms, up to `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Hibernates every one of `resources` (idle; the pool stops them at its next pass) and waits until it did. */
async function hibernateAll(binding: DockerSandboxBinding, resources: readonly ProvisionedSandbox[]) {
  const before = binding.metrics()?.hibernated ?? 0;
  for (const resource of resources) resource.hibernation?.idle();
  await until(() => (binding.metrics()?.hibernated ?? 0) >= before + resources.length, "hibernation");
}

/** Runs `true` through the resource's facade (wakes it first, as the runtime does). */
async function firstCommand(resource: ProvisionedSandbox, signal: AbortSignal): Promise<void> {
  await resource.hibernation?.wake(signal);
  const result = await resource.bind({ signal }).runCommand({ command: "true", args: [] });
  if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
}

/**
 * Waking a hibernated sandbox (start, agent reconnected) to its first command done, against a cold sandbox
 * (create, start, agent, first command) from the same binding with no warm container, in alternating rounds.
 */
export async function benchWake(options: { rounds: number }): Promise<BenchRow[]> {
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("wake"),
    pool: { min: 0, max: 4, hibernateAfterMs: 0 },
  });
  const signal = new AbortController().signal;
  const wake: number[] = [];
  const cold: number[] = [];
  try {
    await binding.start?.();
    const sleeper = await binding.provision({ leaseKey: "thread:wake", lifetime: "thread", signal });
    for (let round = -1; round < options.rounds; round++) {
      await hibernateAll(binding, [sleeper]);
      let startedAt = performance.now();
      await firstCommand(sleeper, signal);
      if (round >= 0) wake.push(performance.now() - startedAt);
      startedAt = performance.now();
      const fresh = await binding.provision({ leaseKey: `thread:cold-${round}`, lifetime: "thread", signal });
      await firstCommand(fresh, signal);
      if (round >= 0) cold.push(performance.now() - startedAt);
      await fresh.release();
    }
    await sleeper.release();
  } finally {
    await binding.close();
  }
  const subject = summarize(wake);
  const baseline = summarize(cold);
  return [
    {
      name: "wake a hibernated sandbox to its first command (vs a cold sandbox)",
      subject,
      baseline,
      ratio: subject.p50 / baseline.p50,
      target: "p50 ≤ 250 ms",
      met: subject.p50 <= 250,
      note: `${options.rounds} rounds, alternating; wake = docker start + agent reconnect + \`true\`; cold = create + start + agent + \`true\` (no warm container)`,
    },
  ];
}

/** PSS in KiB of one process (`/proc/<pid>/smaps_rollup`); 0 when it is gone. */
async function pssKiB(pid: number | "self"): Promise<number> {
  const rollup = await readFile(`/proc/${pid}/smaps_rollup`, "utf8").catch(() => "");
  return Number(/^Pss:\s+(\d+)/m.exec(rollup)?.[1] ?? 0);
}

/**
 * The host memory that the engine serving `/var/run/docker.sock` and this process hold, PSS in KiB: dockerd (its
 * pid file), its containerd (`--config /var/run/docker/containerd/…`), the containerd shims of `containerIds`,
 * the processes in those containers' cgroups, and this Node process.
 */
async function hostMemoryKiB(containerIds: readonly string[]): Promise<{ total: number; parts: string }> {
  const dockerd = Number((await readFile("/var/run/docker.pid", "utf8")).trim());
  const pids = new Map<string, number[]>([
    ["dockerd", [dockerd]],
    ["containerd", []],
    ["shims", []],
    ["containers", []],
  ]);
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const [cmdline, cgroup] = await Promise.all([
      readFile(`/proc/${name}/cmdline`, "utf8").catch(() => ""),
      readFile(`/proc/${name}/cgroup`, "utf8").catch(() => ""),
    ]);
    const argv = cmdline.split("\0");
    if (argv[0] === "containerd" && cmdline.includes("/var/run/docker/containerd/containerd.toml")) {
      pids.get("containerd")?.push(Number(name));
    } else if (argv[0]?.includes("containerd-shim") && containerIds.some((id) => argv.includes(id))) {
      pids.get("shims")?.push(Number(name));
    } else if (containerIds.some((id) => cgroup.includes(id))) {
      pids.get("containers")?.push(Number(name));
    }
  }
  (globalThis as { gc?: () => void }).gc?.();
  const node = await pssKiB("self");
  let total = node;
  const parts: string[] = [`node ${(node / 1024).toFixed(1)}`];
  for (const [group, list] of pids) {
    let sum = 0;
    for (const pid of list) sum += await pssKiB(pid);
    total += sum;
    parts.push(`${group} ${(sum / 1024).toFixed(1)} (${list.length})`);
  }
  return { total, parts: parts.join(", ") };
}

/**
 * {@link hostMemoryKiB} sampled three times, a second apart: the sample with the median total. dockerd's and
 * containerd's heaps move by megabytes between two garbage collections, more than a hibernated sandbox holds.
 */
async function settledHostMemoryKiB(
  containerIds: readonly string[],
): Promise<{ total: number; parts: string }> {
  const samples: Array<{ total: number; parts: string }> = [];
  for (let i = 0; i < 3; i++) {
    if (i > 0) await new Promise((resolve) => setTimeout(resolve, 1000));
    samples.push(await hostMemoryKiB(containerIds));
  }
  return samples.sort((a, b) => a.total - b.total)[1]!;
}

/**
 * Host memory per hibernated sandbox: PSS of the engine (dockerd, containerd, the sandboxes' shims and processes)
 * and of this Node process, before the sandboxes exist and after `count` of them were provisioned, used and
 * hibernated, divided by `count`. The engine is shared: other containers coming and going move dockerd's and
 * containerd's figures too (the note lists every part).
 */
export async function benchHibernatedMemory(options: { count: number }): Promise<BenchRow[]> {
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("hibernated-memory"),
    pool: { min: 0, max: options.count, hibernateAfterMs: 0, acquireTimeoutMs: 120_000 },
    poolTuning: { maxConcurrentCreates: 4 },
  });
  const signal = new AbortController().signal;
  const resources: ProvisionedSandbox[] = [];
  let before = { total: 0, parts: "" };
  let running = { total: 0, parts: "" };
  let after = { total: 0, parts: "" };
  try {
    await binding.start?.();
    before = await settledHostMemoryKiB([]);
    for (let i = 0; i < options.count; i++) {
      resources.push(await binding.provision({ leaseKey: `thread:m${i}`, lifetime: "thread", signal }));
    }
    for (const resource of resources) await firstCommand(resource, signal);
    const ids = resources.map((resource) => resource.resourceId);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // let the fresh processes settle
    running = await settledHostMemoryKiB(ids);
    await hibernateAll(binding, resources);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    after = await settledHostMemoryKiB(ids);
    await Promise.all(resources.map((resource) => resource.release()));
  } finally {
    await binding.close();
  }
  // Signed: the daemons' heaps can end lower than they began (the note lists every part).
  const perHibernatedMiB = (after.total - before.total) / 1024 / options.count;
  const perRunningMiB = (running.total - before.total) / 1024 / options.count;
  return [
    {
      name: "host memory per hibernated sandbox (engine + shim + Node, PSS)",
      value: perHibernatedMiB,
      unit: "MiB",
      target: "≤ 0.5 MiB",
      met: perHibernatedMiB <= 0.5,
      note:
        `${options.count} sandboxes; ${perRunningMiB.toFixed(2)} MiB each while running idle. MiB before: ${before.parts}; ` +
        `running: ${running.parts}; hibernated: ${after.parts}`,
    },
  ];
}
