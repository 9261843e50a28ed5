import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { poolLabels } from "@pai/pool";
import { createFakeDriver } from "@pai/pool/testing";
import { describe, expect, it } from "vitest";
import { reapDeadRuns, runnerOwnerOfPool, runnerPoolId } from "./reap-dead-runs.ts";
import { machineLivenessProbe, processStartTicks } from "./runner-owner.ts";

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ["-e", ""], { stdio: "ignore" });
  await new Promise((resolve) => child.once("exit", resolve));
  return child.pid ?? -1;
}

describe("runner pool ids", () => {
  it("finds the run in a pool id and ignores other pools", () => {
    const id = "vitest:ci-7:4242:998877:0a1b2c3d";
    expect(runnerOwnerOfPool(runnerPoolId(id, "e6d9918e32cd"))?.id).toBe(id);
    expect(runnerOwnerOfPool("pai-sandbox-0123456789ab")).toBeUndefined();
    expect(runnerOwnerOfPool("test-sandbox-x/vitest:ci-7:4242:998877:0a1b2c3d")).toBeUndefined();
    expect(runnerOwnerOfPool(undefined)).toBeUndefined();
  });
});

describe("reapDeadRuns", () => {
  it("removes the containers of dead runs only", async () => {
    const driver = createFakeDriver();
    const dead = `vitest:${hostname()}:${await deadPid()}:1:0a1b2c3d`;
    const live = `vitest:${hostname()}:${process.pid}:${processStartTicks(process.pid)}:0a1b2c3d`;
    const elsewhere = "vitest:another-host:1:1:0a1b2c3d";
    const container = (pool: string) =>
      driver.addContainer({ [poolLabels.managed]: "true", [poolLabels.pool]: pool });
    const deadOnes = [
      container(runnerPoolId(dead, "aaaaaaaaaaaa")),
      container(runnerPoolId(dead, "bbbbbbbbbbbb")),
    ];
    const kept = [
      container(runnerPoolId(live, "aaaaaaaaaaaa")),
      container(runnerPoolId(elsewhere, "aaaaaaaaaaaa")),
      container("pai-sandbox-0123456789ab"),
      container(`${process.pid}`),
    ];

    const stateDirectory = await mkdtemp(join(tmpdir(), "pai-reap-"));
    const removed = await reapDeadRuns({ driver, probe: await machineLivenessProbe(stateDirectory) }).finally(
      () => rm(stateDirectory, { recursive: true, force: true }),
    );

    expect(removed.sort()).toEqual(deadOnes.sort());
    expect([...driver.containers.keys()].sort()).toEqual(kept.sort());
  });
});
