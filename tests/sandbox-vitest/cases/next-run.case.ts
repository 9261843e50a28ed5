// A run after a killed one: a test with a sandbox, so the run's pool starts and the run ends normally.
import { paiSandboxFixture } from "@pai/sandbox/vitest";
import { test as base, expect } from "vitest";
import { record } from "./case-log.ts";

const test = base.extend({ sandbox: paiSandboxFixture({ pool: { min: 1, max: 2 } }) });

test("gets a sandbox", async ({ sandbox }) => {
  await record("next", sandbox);
  expect((await sandbox.runCommand({ command: "id -u" })).stdout).toBe("1000\n");
});
