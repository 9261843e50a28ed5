import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  createRunnerOwner,
  isRunnerOwnerLive,
  machineLivenessProbe,
  parseRunnerOwnerId,
  processStartTicks,
  pruneRunnerRecords,
  type RunnerLivenessProbe,
  runDirectory,
} from "./runner-owner.ts";

const owner = (id: string) => {
  const parsed = parseRunnerOwnerId(id);
  if (!parsed) throw new Error(`not a runner owner id: ${id}`);
  return parsed;
};

function probe(overrides: Partial<RunnerLivenessProbe> = {}): RunnerLivenessProbe {
  return {
    host: "here",
    processStartTicks: () => undefined,
    heartbeatAt: () => undefined,
    now: 100_000,
    ttlMs: 30_000,
    ...overrides,
  };
}

/** The pid of a process that has exited. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid ?? -1;
}

describe("runner owner ids", () => {
  it("parses a runner's id and nothing else", () => {
    expect(parseRunnerOwnerId("vitest:ci-7:4242:998877:0a1b2c3d")).toEqual({
      host: "ci-7",
      pid: 4242,
      startTicks: 998877,
      id: "vitest:ci-7:4242:998877:0a1b2c3d",
    });
    for (const other of [
      "ci-7:4242:0a1b2c3d", // a runtime process's owner id
      "vitest:ci-7:4242:0a1b2c3d",
      "vitest::4242:1:0a1b2c3d",
      "vitest:ci-7:-1:1:0a1b2c3d",
      "vitest:ci-7:4242:1:0A1B2C3D",
      "vitest:ci-7:4242:1:0a1b2c3d:extra",
    ]) {
      expect(parseRunnerOwnerId(other)).toBeUndefined();
    }
  });
});

describe("isRunnerOwnerLive", () => {
  const here = owner("vitest:here:4242:500:0a1b2c3d");

  it("on its own host, holds a run live while its process runs with the start time its id names", () => {
    expect(isRunnerOwnerLive(here, probe({ processStartTicks: () => 500 }))).toBe(true);
    expect(isRunnerOwnerLive(here, probe({ processStartTicks: () => undefined }))).toBe(false);
    // The pid was reused by a later process.
    expect(isRunnerOwnerLive(here, probe({ processStartTicks: () => 9_000 }))).toBe(false);
    // No /proc: the pid alone decides.
    expect(isRunnerOwnerLive(here, probe({ processStartTicks: () => 0 }))).toBe(true);
  });

  it("on another host, holds a run live unless its heartbeat record here is stale", () => {
    const there = owner("vitest:there:4242:500:0a1b2c3d");
    const noProcessHere = probe({ processStartTicks: () => undefined });
    expect(isRunnerOwnerLive(there, noProcessHere)).toBe(true);
    expect(isRunnerOwnerLive(there, { ...noProcessHere, heartbeatAt: () => 100_000 - 30_000 })).toBe(true);
    expect(isRunnerOwnerLive(there, { ...noProcessHere, heartbeatAt: () => 100_000 - 30_001 })).toBe(false);
  });
});

describe("processStartTicks", () => {
  it("reads this process's start time and knows an exited process is gone", async () => {
    const ticks = processStartTicks(process.pid);
    expect(ticks).toBeGreaterThan(0);
    expect(processStartTicks(process.pid)).toBe(ticks);
    expect(processStartTicks(await deadPid())).toBeUndefined();
    expect(processStartTicks(0)).toBeUndefined();
  });
});

describe("createRunnerOwner", () => {
  let stateDirectory: string;
  beforeEach(async () => {
    stateDirectory = await mkdtemp(join(tmpdir(), "pai-runner-owner-"));
  });
  afterEach(async () => {
    await rm(stateDirectory, { recursive: true, force: true });
  });

  it("keeps a heartbeat record and a private directory while the run lives and removes both on close", async () => {
    const runner = await createRunnerOwner({ stateDirectory, heartbeatIntervalMs: 20 });
    try {
      expect(runner.directory).toBe(runDirectory(stateDirectory, runner.id));
      expect((await stat(runner.directory)).mode & 0o777).toBe(0o700);
      const parsed = parseRunnerOwnerId(runner.id);
      expect(parsed).toMatchObject({
        host: hostname(),
        pid: process.pid,
        startTicks: processStartTicks(process.pid),
      });
      const [file] = await readdir(join(stateDirectory, "owners"));
      const first = JSON.parse(await readFile(join(stateDirectory, "owners", file ?? ""), "utf8"));
      expect(first).toMatchObject({ id: runner.id, pid: process.pid });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const later = JSON.parse(await readFile(join(stateDirectory, "owners", file ?? ""), "utf8"));
      expect(later.heartbeatAt).toBeGreaterThan(first.heartbeatAt);
      const machine = await machineLivenessProbe(stateDirectory);
      expect(machine.heartbeatAt(runner.id)).toBeGreaterThanOrEqual(later.heartbeatAt);
      expect(isRunnerOwnerLive(owner(runner.id), machine)).toBe(true);
    } finally {
      await runner.close();
    }
    expect(await readdir(join(stateDirectory, "owners"))).toEqual([]);
    expect(await readdir(join(stateDirectory, "runs"))).toEqual([]);
  });

  it("prunes the records and directories of dead runs and keeps the live ones", async () => {
    const runner = await createRunnerOwner({ stateDirectory });
    try {
      const dead = `vitest:${hostname()}:${await deadPid()}:1:0a1b2c3d`;
      const owners = join(stateDirectory, "owners");
      await mkdir(runDirectory(stateDirectory, dead));
      await writeFile(
        join(owners, `${encodeURIComponent(dead)}.json`),
        JSON.stringify({ id: dead, heartbeatAt: Date.now() }),
      );
      expect(await readdir(owners)).toHaveLength(2);

      await pruneRunnerRecords(stateDirectory, await machineLivenessProbe(stateDirectory));

      expect(await readdir(owners)).toEqual([`${encodeURIComponent(runner.id)}.json`]);
      expect(await readdir(join(stateDirectory, "runs"))).toEqual([basename(runner.directory)]);
    } finally {
      await runner.close();
    }
  });
});
