import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createDockerDriver } from "@pai/pool";
import { createAgentExecutor, createSandboxFacade } from "@pai/sandbox";
import { createTestSandbox } from "@pai/sandbox/testing";
import { acquirePooledSandbox } from "../capabilities/sandbox/src/vitest/acquire-pooled-sandbox.ts";
import { createSandboxPoolServer } from "../capabilities/sandbox/src/vitest/sandbox-pool-server.ts";
import { benchImage } from "./bench-containers.ts";
import { type BenchRow, ratioRow } from "./bench-row.ts";
import { summarize } from "./stats.ts";

const READY = 2;

/**
 * Time to a first command in a fresh sandbox in a test: `paiSandboxFixture`'s path (lease from the run's pool
 * over its socket, the relayed agent, the facade, `true`) against `createTestSandbox()` (testcontainers: create,
 * start, exec readiness check, `true`), rounds alternating. Before each fixture round the pool is refilled to
 * its `min` (untimed), as it is between the tests of a suite. A second row weighs the relay: the same first
 * command over an agent connection the worker opens itself (`docker exec`) on a sandbox already leased.
 */
export async function benchVitestFixture(options: { rounds: number }): Promise<BenchRow[]> {
  const image = await benchImage();
  const driver = createDockerDriver();
  const stateDirectory = await mkdtemp(join(tmpdir(), "pai-bench-state-"));
  const server = await createSandboxPoolServer({ driver, stateDirectory });
  const fixtureOptions = { image, pool: { min: READY, max: READY + 2 } };
  const pool = server.pool(fixtureOptions);
  const fixture: number[] = [];
  const testcontainers: number[] = [];
  const ownConnection: number[] = [];
  try {
    const fixtureRound = async () => {
      await pool.warm();
      if (pool.metrics().ready < READY) throw new Error("the fixture's pool could not prepare its sandboxes");
      const startedAt = performance.now();
      const sandbox = await acquirePooledSandbox({
        address: server.address,
        options: fixtureOptions,
        driver,
      });
      try {
        const result = await sandbox.facade.runCommand({ command: "true", args: [] });
        if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
        fixture.push(performance.now() - startedAt);
        const ownStartedAt = performance.now();
        const executor = await createAgentExecutor({ driver, containerId: sandbox.containerId });
        try {
          const own = await createSandboxFacade({
            executor,
            driver,
            containerId: sandbox.containerId,
            image,
          });
          if ((await own.runCommand({ command: "true", args: [] })).exitCode !== 0)
            throw new Error("true failed");
          ownConnection.push(performance.now() - ownStartedAt);
        } finally {
          await executor.close();
        }
      } finally {
        await sandbox.release();
      }
    };
    const testcontainersRound = async () => {
      const startedAt = performance.now();
      const box = await createTestSandbox({ image });
      try {
        const result = await box.runCommand({ command: "true", args: [] });
        if (result.exitCode !== 0) throw new Error(`true exited ${result.exitCode}`);
        testcontainers.push(performance.now() - startedAt);
      } finally {
        await box.stop();
      }
    };
    // One untimed round each: images, modules and the engine's caches warm.
    await fixtureRound();
    await testcontainersRound();
    fixture.length = 0;
    testcontainers.length = 0;
    ownConnection.length = 0;
    for (let i = 0; i < options.rounds; i++) {
      if (i % 2 === 0) {
        await fixtureRound();
        await testcontainersRound();
      } else {
        await testcontainersRound();
        await fixtureRound();
      }
    }
  } finally {
    await server.close();
    await rm(stateDirectory, { recursive: true, force: true });
  }
  const subject = summarize(fixture);
  return [
    ratioRow({
      name: "first command in a fresh test sandbox: vitest fixture vs createTestSandbox",
      subject,
      baseline: summarize(testcontainers),
      target: "≤ 0.05 (≥ 20× faster)",
    }),
    ratioRow({
      name: "vitest fixture: relayed agent vs the worker's own docker exec",
      subject,
      baseline: summarize(ownConnection),
      note: "baseline: agent started by the worker (docker exec + HELLO) + first command, on a sandbox already leased",
    }),
  ];
}
