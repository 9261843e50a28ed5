// A passing, a failing and a timed-out test, each with a sandbox; the last test checks that all three are gone.
import { paiSandboxFixture } from "@pai/sandbox/vitest";
import { test as base, expect } from "vitest";
import { exists, record } from "./case-log.ts";

const test = base.extend({ sandbox: paiSandboxFixture({ pool: { min: 3, max: 6 } }) });
const used: string[] = [];

test("passes", async ({ sandbox }) => {
  used.push((await record("passes", sandbox)).containerId);
  expect(await sandbox.runCommand({ command: "echo hello" })).toMatchObject({
    exitCode: 0,
    stdout: "hello\n",
  });
});

test("fails", async ({ sandbox }) => {
  used.push((await record("fails", sandbox)).containerId);
  expect((await sandbox.runCommand({ command: "exit 3" })).exitCode).toBe(0);
});

test("times out", { timeout: 8000 }, async ({ sandbox }) => {
  used.push((await record("times out", sandbox)).containerId);
  await sandbox.runCommand({ command: "sleep 60" });
});

test("finds the sandboxes of the tests before it removed", async () => {
  expect(used).toHaveLength(3);
  for (const id of used) expect(await exists(id)).toBe(false);
});
