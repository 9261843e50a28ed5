// Quick measurements of the sandbox facade on the real engine (docker exec executor):
// `node capabilities/sandbox/scripts/measure-sandbox.ts [image] [rounds]`. Prints JSON. Not a benchmark suite
// (bench/ is); it answers "what does a command or a file operation cost here".
import { randomBytes } from "node:crypto";
import { dockerSandbox } from "../src/index.ts";

const image = process.argv[2] ?? "pai/sandbox:latest";
const rounds = Number(process.argv[3] ?? 40);

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return (
    Math.round((sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0) * 10) / 10
  );
};
const summary = (values: number[]) => ({
  p50: percentile(values, 50),
  p95: percentile(values, 95),
  n: values.length,
});

async function time(times: number[], action: () => Promise<unknown>) {
  const started = performance.now();
  await action();
  times.push(performance.now() - started);
}

const binding = dockerSandbox({
  image,
  poolId: `measure-sandbox-${randomBytes(3).toString("hex")}`,
  pool: { min: 2, max: 4 },
});
const signal = new AbortController().signal;
const startedAt = performance.now();
await binding.start?.();
const startMs = performance.now() - startedAt;
const provision: number[] = [];
const release: number[] = [];
for (let i = 0; i < 3; i++) {
  await new Promise((resolve) => setTimeout(resolve, 1500)); // let the pool refill
  let resource: Awaited<ReturnType<typeof binding.provision>> | undefined;
  await time(provision, async () => {
    resource = await binding.provision({ leaseKey: `thread:m${i}`, lifetime: "thread", signal });
  });
  await time(release, () => resource!.release());
}
const resource = await binding.provision({ leaseKey: "thread:measure", lifetime: "thread", signal });
const box = resource.facade;
try {
  const shell: number[] = [];
  const argv: number[] = [];
  const write: number[] = [];
  const read: number[] = [];
  const list: number[] = [];
  const kill: number[] = [];
  for (let i = 0; i < rounds; i++) {
    await time(argv, () => box.runCommand({ command: "true", args: [] }));
    await time(shell, () => box.runCommand({ command: "true" }));
    await time(write, () => box.writeFiles([{ path: "m/f.txt", content: "x".repeat(1024) }]));
    await time(read, () => box.readFile("m/f.txt"));
    await time(list, () => box.listFiles("m"));
  }
  for (let i = 0; i < 10; i++) {
    const controller = new AbortController();
    const pending = box.runCommand({ command: "sleep 60", signal: controller.signal });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stopped = performance.now();
    controller.abort();
    await pending;
    kill.push(performance.now() - stopped);
  }
  const upload: number[] = [];
  const payload = randomBytes(8 * 1024 * 1024);
  for (let i = 0; i < 5; i++) {
    await time(upload, () => box.writeFiles([{ path: `big${i}.bin`, content: payload }]));
  }
  console.log(
    JSON.stringify(
      {
        image,
        executor: "docker-exec",
        startMs: Math.round(startMs),
        provisionWarmMs: summary(provision),
        releaseMs: summary(release),
        runCommandArgvTrueMs: summary(argv),
        runCommandShellTrueMs: summary(shell),
        writeFiles1KiBMs: summary(write),
        readFile1KiBMs: summary(read),
        listFilesMs: summary(list),
        abortToResultMs: summary(kill),
        writeFiles8MiBMs: summary(upload),
      },
      null,
      2,
    ),
  );
} finally {
  await resource.release();
  await binding.close();
}
