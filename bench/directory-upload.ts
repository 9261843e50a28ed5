import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { dockerSandbox } from "@pai/sandbox";
import { execa } from "execa";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { createSourceTree } from "./source-tree.ts";
import { summarize, time } from "./stats.ts";

const MIB = 1024 * 1024;

/** `tar -c <directory> | docker cp - <container>:<target>`, owned by the sandbox user like an upload. */
async function tarDockerCp(directory: string, containerId: string, target: string): Promise<void> {
  await execa(
    "bash",
    [
      "-o",
      "pipefail",
      "-c",
      'tar -c --owner=1000 --group=1000 -C "$1" . | docker cp -q - "$2"',
      "bash",
      directory,
      `${containerId}:${target}`,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
}

/**
 * Uploading a host directory: `uploadDirectory(path)` vs `tar -c | docker cp -` into the same container,
 * alternating round by round. Two trees: a source tree (1,250 source-like files, 20 MiB in nested packages, a
 * few symlinks) and a directory holding one 100 MiB file.
 */
export async function benchDirectoryUpload(options: { rounds: number }): Promise<BenchRow[]> {
  const tree = createSourceTree({ files: 1250, megabytes: 20 });
  const single = mkdtempSync(join(tmpdir(), "pai-bench-single-"));
  writeFileSync(join(single, "big.bin"), Buffer.alloc(100 * MIB, 7));
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("upload"),
    pool: { min: 1, max: 1 },
    limits: { fsizeBytes: 200 * MIB },
  });
  try {
    const { facade, resourceId, release } = await binding.provision({
      leaseKey: "bench:upload",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    try {
      const info = await facade.info();
      /** Alternates the two uploads round by round; only the transfers are timed, not the cleanup. */
      const compare = async (directory: string, bytes: number) => {
        const viaFacade = async (target: string) => {
          const result = await facade.uploadDirectory(directory, target);
          if (result.bytes !== bytes) throw new Error(`uploaded ${result.bytes} bytes, not ${bytes}`);
        };
        const viaDockerCp = async (target: string) => {
          await tarDockerCp(directory, resourceId, `${info.workspace}/${target}`);
        };
        const pai: number[] = [];
        const cp: number[] = [];
        for (let round = -1; round < options.rounds; round++) {
          await facade.runCommand({ command: "mkdir", args: ["cp"] });
          const order = round % 2 === 0 ? ["pai", "cp"] : ["cp", "pai"];
          for (const which of order) {
            const took = await time(() => (which === "pai" ? viaFacade("pai") : viaDockerCp("cp")));
            if (round >= 0) (which === "pai" ? pai : cp).push(took); // round -1 warms up
          }
          await facade.removeFile("pai", { recursive: true });
          await facade.removeFile("cp", { recursive: true });
        }
        return { a: summarize(pai), b: summarize(cp) };
      };
      const sourceTree = await compare(tree.directory, tree.bytes);
      const oneFile = await compare(single, 100 * MIB);
      return [
        ratioRow({
          name: `upload a source tree (${tree.files} files, ${Math.round(tree.bytes / MIB)} MiB): uploadDirectory vs tar | docker cp`,
          subject: sourceTree.a,
          baseline: sourceTree.b,
          target: "≤ 1.3",
        }),
        ratioRow({
          name: "upload a directory with one 100 MiB file: uploadDirectory vs tar | docker cp",
          subject: oneFile.a,
          baseline: oneFile.b,
          target: "≤ 1.3",
        }),
      ];
    } finally {
      await release();
    }
  } finally {
    await binding.close();
    tree.close();
    rmSync(single, { recursive: true, force: true });
  }
}
