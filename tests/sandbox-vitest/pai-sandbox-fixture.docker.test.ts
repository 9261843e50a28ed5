// `@pai/sandbox/vitest`: the fixture in this suite (the root config lists its global setup), and whole Vitest runs
// of the case files in ./cases started as child processes, observed through their reports and the engine.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { poolLabels } from "@pai/pool";
import { paiSandboxFixture } from "@pai/sandbox/vitest";
import { afterAll, test as base, beforeAll, describe, expect } from "vitest";
import { runDirectory } from "../../capabilities/sandbox/src/vitest/runner-owner.ts";
import { testDriver, waitFor } from "../sandbox/docker-helpers.ts";
import { type CaseRun, runContainers, startCaseRun } from "./run-cases.ts";

const test = base.extend({ sandbox: paiSandboxFixture() });

async function exists(containerId: string): Promise<boolean> {
  return testDriver.inspect(containerId).then(
    () => true,
    (error: { code?: string }) => {
      if (error.code === "NOT_FOUND") return false;
      throw error;
    },
  );
}

/**
 * Follows the engine's container-create events from now on (a live stream: the engine's history of past events
 * is a small buffer that a busy engine overwrites). `stop()` returns the pool id of every container created.
 */
function watchCreates(): { stop(): Promise<string[]> } {
  const events = spawn("docker", [
    "events",
    "--since",
    String(Math.floor(Date.now() / 1000) - 1),
    "--filter",
    "type=container",
    "--filter",
    "event=create",
    "--filter",
    `label=${poolLabels.managed}=true`,
    "--format",
    `{{index .Actor.Attributes "${poolLabels.pool}"}}`,
  ]);
  let output = "";
  events.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exited = new Promise((resolve) => events.once("exit", resolve));
  let stopped: Promise<string[]> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        // Events are streamed as the engine emits them; give the last ones a moment to arrive.
        await new Promise((resolve) => setTimeout(resolve, 1000));
        events.kill();
        await exited;
        return output.split("\n").filter((line) => line.trim() !== "");
      })();
      return stopped;
    },
  };
}

describe("paiSandboxFixture", () => {
  let stateDirectory: string;
  beforeAll(async () => {
    stateDirectory = await mkdtemp(join(tmpdir(), "pai-sandbox-state-"));
  });
  afterAll(async () => {
    await rm(stateDirectory, { recursive: true, force: true });
  });

  test("gives the test a hardened sandbox from the run's pool, on the relayed agent", async ({ sandbox }) => {
    const info = await sandbox.info();
    expect(info.executor).toBe("agent");
    const { labels } = await testDriver.inspect(info.id);
    expect(labels[poolLabels.pool]).toMatch(/^vitest:[^:]+:\d+:\d+:[0-9a-f]{8}\/[0-9a-f]{12}$/);
    const inside = await sandbox.runCommand({
      command:
        "id -u; ls /sys/class/net; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /etc/x 2>&1",
    });
    expect(inside.stdout.split("\n").map((line) => line.replace(/\s+/g, " "))).toEqual([
      "1000",
      "lo",
      "CapEff: 0000000000000000",
      "NoNewPrivs: 1",
      "touch: cannot touch '/etc/x': Read-only file system",
      "",
    ]);
    await sandbox.writeFiles([{ path: "src/main.py", content: "print(6 * 7)\n" }]);
    expect(await sandbox.runCommand({ command: "python3 src/main.py" })).toMatchObject({
      exitCode: 0,
      stdout: "42\n",
    });
  });

  test("tells the user to add the global setup when the run has none", { timeout: 240_000 }, async () => {
    const caseRun = await startCaseRun({
      cases: ["cases/next-run.case.ts"],
      stateDirectory,
      withoutSetup: true,
    });
    try {
      await caseRun.exited;
      const [result] = await caseRun.results();
      expect(result?.status).toBe("failed");
      expect(result?.failureMessages.join("\n")).toContain(
        'paiSandboxFixture needs the run\'s sandbox pool: add globalSetup: ["@pai/sandbox/vitest/setup"]',
      );
    } finally {
      await caseRun.dispose();
    }
  });

  test("removes the sandbox after a passing, a failing and a timed-out test, and closes the pool at the end", {
    timeout: 240_000,
  }, async () => {
    const caseRun = await startCaseRun({ cases: ["cases/lifecycle.case.ts"], stateDirectory });
    try {
      await caseRun.exited;
      const results = await caseRun.results();
      expect(results.map(({ title, status }) => [title, status])).toEqual([
        ["passes", "passed"],
        ["fails", "failed"],
        ["times out", "failed"],
        ["finds the sandboxes of the tests before it removed", "passed"],
      ]);
      expect(results[1]?.failureMessages.join("\n")).toContain("expected 3 to be +0");
      expect(results[2]?.failureMessages.join("\n")).toContain("Test timed out in 8000ms");
      const records = await caseRun.records();
      expect(records.map((entry) => entry.test)).toEqual(["passes", "fails", "times out"]);
      for (const entry of records) expect(await exists(entry.containerId)).toBe(false);
      // The run's ready sandboxes went with it.
      expect(await runContainers(caseRun.child.pid ?? -1)).toEqual([]);
    } finally {
      await caseRun.dispose();
    }
  });

  describe.each(["threads", "forks"] as const)("with Vitest's %s pool", (pool) => {
    test("shares one pool between two test files running in two workers", { timeout: 240_000 }, async () => {
      const creates = watchCreates();
      const caseRun = await startCaseRun({
        cases: ["cases/share-a.case.ts", "cases/share-b.case.ts"],
        pool,
        stateDirectory,
      });
      try {
        await caseRun.exited;
        const results = await caseRun.results();
        expect(results.map((result) => result.status)).toEqual(Array(6).fill("passed"));
        const records = await caseRun.records();
        expect(records.map((entry) => entry.test).sort()).toEqual(["a1", "a2", "a3", "b1", "b2", "b3"]);
        expect(new Set(records.map((entry) => entry.containerId)).size).toBe(6);
        const workerOf = (file: string) =>
          new Set(records.filter((entry) => entry.test.startsWith(file)).map((entry) => entry.worker));
        expect([...workerOf("a")].some((worker) => workerOf("b").has(worker))).toBe(false);
        const poolIds = new Set(records.map((entry) => entry.poolId));
        expect(poolIds.size).toBe(1);
        // One pool kept `min: 2` ready for both files: a pool per file would have made 6 + 2 × 2.
        const created = (await creates.stop()).filter((poolId) => poolIds.has(poolId)).length;
        expect(created).toBeGreaterThanOrEqual(6);
        expect(created).toBeLessThanOrEqual(6 + 2);
        expect(await runContainers(caseRun.child.pid ?? -1)).toEqual([]);
      } finally {
        await creates.stop();
        await caseRun.dispose();
      }
    });
  });

  test("frees at the next run what a run killed with SIGKILL left on the engine", {
    timeout: 240_000,
  }, async () => {
    const killed = await startCaseRun({ cases: ["cases/killed-run.case.ts"], stateDirectory });
    let next: CaseRun | undefined;
    try {
      await waitFor(async () => (await killed.records()).length > 0, "the held sandbox", 180_000);
      const killedPid = killed.child.pid ?? -1;
      process.kill(-killedPid, "SIGKILL");
      expect(await killed.exited).toBe("SIGKILL");
      const [held] = await killed.records();
      const left = await runContainers(killedPid);
      // The dead run's sandbox (and any it kept ready) outlive it until a run frees them, as does its directory.
      expect(left.map((row) => row.id)).toContain(held?.containerId);
      const deadRun = runDirectory(stateDirectory, held?.poolId.split("/")[0] ?? "");
      expect(existsSync(join(deadRun, "pool.sock"))).toBe(true);

      next = await startCaseRun({ cases: ["cases/next-run.case.ts"], stateDirectory });
      await next.exited;
      expect((await next.results()).map((result) => result.status)).toEqual(["passed"]);
      for (const row of left) expect(await exists(row.id)).toBe(false);
      expect(existsSync(deadRun)).toBe(false);
    } finally {
      await killed.dispose();
      await next?.dispose();
    }
  });
});
