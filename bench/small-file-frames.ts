import { dockerSandbox } from "@pai/sandbox";
import { benchImage, benchPoolId } from "./bench-containers.ts";
import type { BenchRow } from "./bench-row.ts";
import { ratioRow } from "./bench-row.ts";
import { sideBySide } from "./stats.ts";

/**
 * A 4 KiB file read and written through the facade (the agent's READ_FILE/WRITE_FILE frames) against the same
 * operation as the facade did it before, a script through the same agent (`realpath -m` + `cat`, a tar for the
 * write), side by side on one sandbox.
 */
export async function benchSmallFileFrames(options: { rounds: number }): Promise<BenchRow[]> {
  const binding = dockerSandbox({
    image: await benchImage(),
    poolId: benchPoolId("frames"),
    pool: { min: 1, max: 1 },
  });
  const content = "x".repeat(4096);
  try {
    const { facade, release } = await binding.provision({
      leaseKey: "bench:frames",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    try {
      await facade.writeFiles([{ path: "f.txt", content }]);
      const read = await sideBySide(
        () => facade.readFile("f.txt"),
        () =>
          facade.runCommand({
            command: "sh",
            args: [
              "-c",
              'r=$(realpath -m -- "$1") && [ -f "$r" ] && exec cat -- "$r"',
              "sh",
              "/workspace/f.txt",
            ],
          }),
        { rounds: options.rounds, warmup: 10 },
      );
      const write = await sideBySide(
        () => facade.writeFiles([{ path: "g.txt", content }]),
        () =>
          facade.runCommand({
            command: "sh",
            args: [
              "-c",
              'r=$(realpath -m -- "$1") && mkdir -p "$(dirname "$r")" && cat > "$r"',
              "sh",
              "/workspace/h.txt",
            ],
            stdin: content,
          }),
        { rounds: options.rounds, warmup: 10 },
      );
      return [
        ratioRow({
          name: "read 4 KiB: agent frame vs script through the agent",
          subject: read.a,
          baseline: read.b,
          target: "ratio ≤ 0.5",
        }),
        ratioRow({
          name: "write 4 KiB: agent frame vs script through the agent",
          subject: write.a,
          baseline: write.b,
          target: "ratio ≤ 0.5",
        }),
      ];
    } finally {
      await release();
    }
  } finally {
    await binding.close();
  }
}
