// Quick measurements of the pool on the real engine: `node pool/scripts/measure-pool.ts [image] [rounds]`.
// Prints JSON. Not a benchmark suite (bench/ is); it answers "what does a warm acquire cost here".
import { createContainerPool, createDockerDriver } from "../src/index.ts";

const image = process.argv[2] ?? "pai/sandbox:latest";
const rounds = Number(process.argv[3] ?? 10);
const driver = createDockerDriver();

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

// 1. Cold create + start (+ remove), one at a time.
const create: number[] = [];
const start: number[] = [];
const remove: number[] = [];
for (let i = 0; i < rounds; i++) {
  let t = performance.now();
  const { id } = await driver.create({ image }, { "pai.managed": "true", "pai.pool": "measure" });
  create.push(performance.now() - t);
  t = performance.now();
  await driver.start(id);
  start.push(performance.now() - t);
  t = performance.now();
  await driver.remove(id);
  remove.push(performance.now() - t);
}
const createStart = create.map((c, i) => c + (start[i] ?? 0));

// 2. Warm acquire from a pool that had time to refill, and one exec.
const pool = createContainerPool({ driver, spec: { image }, poolId: "measure", min: 2, max: 4 });
const acquire: number[] = [];
const exec: number[] = [];
try {
  await pool.warm();
  for (let i = 0; i < rounds; i++) {
    await pool.warm();
    let t = performance.now();
    const lease = await pool.acquire({ leaseKey: `measure-${i}` });
    acquire.push(performance.now() - t);
    t = performance.now();
    await driver.exec(lease.containerId, { cmd: ["true"] });
    exec.push(performance.now() - t);
    await lease.release();
  }
} finally {
  await pool.close();
}

console.log(
  JSON.stringify(
    {
      image,
      createMs: summary(create),
      startMs: summary(start),
      createPlusStartMs: summary(createStart),
      removeMs: summary(remove),
      warmAcquireMs: summary(acquire),
      execTrueMs: summary(exec),
      poolMetrics: pool.metrics().acquireLatencyMs,
    },
    null,
    2,
  ),
);
