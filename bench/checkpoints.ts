import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createFileCheckpointStore } from "@pai/core";
import { dockerSandbox, type ProvisionedSandbox } from "@pai/sandbox";
import { execa } from "execa";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { benchRewindAndFork } from "./checkpoint-rewinds.ts";
import { summarize } from "./stats.ts";

const files = 1000;
const fileBytes = Math.ceil((100 * 2 ** 20) / 1000);
const totalMiB = (files * fileBytes) / 2 ** 20;

/** Rewrites file `index` of the workspace with new random bytes of the same size. */
async function changeOne(sandbox: ProvisionedSandbox, index: number, signal: AbortSignal): Promise<void> {
  const result = await sandbox
    .bind({ signal })
    .runCommand({ command: `head -c ${fileBytes} /dev/urandom > /workspace/d${index % 10}/f${index}.bin` });
  if (result.exitCode !== 0) throw new Error(`changing a file failed: ${result.stderr}`);
}

/**
 * Checkpoints of a workspace of 1,000 files (100 MiB) where one file changed since the last one: the time to take
 * one and the bytes it adds to the store, and a rewind (restore) of one changed file, each against copying the whole
 * workspace with `docker cp` out of the container (for a checkpoint) and into it (for a rewind), in alternating
 * rounds; then, on the same workspace through a runtime, a rewind and a fork to their first command
 * ({@link benchRewindAndFork}).
 */
export async function benchCheckpoints(options: { rounds: number }): Promise<BenchRow[]> {
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("checkpoints"),
    pool: { min: 0, max: 2 },
  });
  const signal = new AbortController().signal;
  const directory = await mkdtemp(join(tmpdir(), "pai-bench-checkpoints-"));
  const copies = await mkdtemp(join(tmpdir(), "pai-bench-docker-cp-"));
  const store = createFileCheckpointStore({ directory });
  const take: number[] = [];
  const added: number[] = [];
  const restore: number[] = [];
  const copyOut: number[] = [];
  const copyIn: number[] = [];
  try {
    const sandbox = await binding.provision({ leaseKey: "thread:checkpoints", lifetime: "thread", signal });
    // The baseline copies into a second sandbox: `docker cp` in replaces files (new inodes), which would make the
    // next checkpoint of the first hash them all again.
    const target = await binding.provision({
      leaseKey: "thread:checkpoints-copy",
      lifetime: "thread",
      signal,
    });
    const checkpoints = sandbox.checkpoints;
    if (!checkpoints) throw new Error("the sandbox has no checkpoints");
    const made = await sandbox.bind({ signal }).runCommand({
      command: `for d in $(seq 0 9); do mkdir -p /workspace/d$d; done; for i in $(seq 0 ${files - 1}); do head -c ${fileBytes} /dev/urandom > /workspace/d$((i % 10))/f$i.bin; done`,
    });
    if (made.exitCode !== 0) throw new Error(`making the workspace failed: ${made.stderr}`);
    await checkpoints.take({ store, signal });

    for (let round = -1; round < options.rounds; round++) {
      await changeOne(sandbox, round + 1, signal);
      const taken = await checkpoints.take({ store, signal });
      await changeOne(sandbox, round + 500, signal);
      const restored = await checkpoints.restore(taken.manifestDigest, { store, signal });
      if (restored.written !== 1) throw new Error(`a rewind of one changed file wrote ${restored.written}`);

      let startedAt = performance.now();
      await execa("docker", ["cp", `${sandbox.resourceId}:/workspace`, join(copies, "out")]);
      const out = performance.now() - startedAt;
      startedAt = performance.now();
      await execa("docker", ["cp", `${join(copies, "out")}/.`, `${target.resourceId}:/workspace`]);
      const into = performance.now() - startedAt;
      await rm(join(copies, "out"), { recursive: true, force: true });
      if (round < 0) continue;
      take.push(taken.durationMs);
      added.push(taken.bytesAdded);
      restore.push(restored.durationMs);
      copyOut.push(out);
      copyIn.push(into);
    }
    await sandbox.release();
    await target.release();
  } finally {
    await binding.close();
    await rm(directory, { recursive: true, force: true });
    await rm(copies, { recursive: true, force: true });
  }
  const taking = summarize(take);
  const copyingOut = summarize(copyOut);
  const bytes = summarize(added);
  const rewinding = summarize(restore);
  const copyingIn = summarize(copyIn);
  const workspace = `${files} files / ${totalMiB.toFixed(0)} MiB`;
  const allowed = 2 * fileBytes + 64 * 1024;
  // Half as many rounds: each rewinds, forks a 100 MiB workspace and copies it out and in.
  const rewinds = await benchRewindAndFork({
    rounds: Math.max(4, Math.ceil(options.rounds / 2)),
    files,
    fileBytes,
  });
  return [
    {
      name: `checkpoint of a workspace of ${workspace}, one file changed (vs docker cp out)`,
      subject: taking,
      baseline: copyingOut,
      ratio: taking.p50 / copyingOut.p50,
      target: "p50 ≤ 150 ms",
      met: taking.p50 <= 150,
      note: `${options.rounds} rounds; the program in the sandbox walks the workspace (stat, hashing only changed files), the host fetches and stores the one new blob and the manifest (file store on a temp directory); baseline: docker cp of /workspace to a host directory`,
    },
    {
      name: `bytes stored per checkpoint, one ${fileBytes}-byte file changed`,
      value: bytes.p50,
      unit: "bytes",
      target: "≤ 2× the changed bytes + 64 KiB",
      met: bytes.p95 <= allowed,
      note: `p50 ${bytes.p50}, p95 ${bytes.p95} (the new blob, the manifest chunk holding it and the manifest root; the manifest has ${files + 10} entries); a full copy is ${files * fileBytes} bytes`,
    },
    {
      name: `rewind of one changed file in a workspace of ${workspace} (vs docker cp in)`,
      subject: rewinding,
      baseline: copyingIn,
      ratio: rewinding.p50 / copyingIn.p50,
      note: "restore: the program compares the workspace with the manifest (stat, cached hashes) and gets the one file from the store; baseline: docker cp of the whole workspace (as copied out) into a second sandbox (its files then root's: a real rewind by copy would still have to give them back to the sandbox user)",
    },
    ...rewinds,
  ];
}
