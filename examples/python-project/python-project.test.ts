// Copy this file (with vitest.config.ts) to test a Python project inside a real, hardened sandbox: each test
// gets a fresh one from the run's warm pool and it is removed when the test ends.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { paiSandboxFixture } from "@pai/sandbox/vitest";
import { test as base, expect } from "vitest";

const test = base.extend({
  sandbox: paiSandboxFixture({ pool: { min: 2 }, limits: { memoryBytes: 256 * 1024 * 1024 } }),
});

/** The Python project under test, uploaded into each sandbox as `/workspace/project`. */
const project = join(import.meta.dirname, "project");
const unittest = { command: "python3 -m unittest discover -v", cwd: "project" };

test("the project's own tests pass inside the sandbox", async ({ sandbox }) => {
  await sandbox.uploadDirectory(project, "project");

  const result = await sandbox.runCommand(unittest);

  expect(result.exitCode).toBe(0);
  expect(result.stderr).toContain("test_reserve_never_overdraws (tests.test_stock.StockTest");
  expect(result.stderr).toMatch(/^Ran 4 tests in [\d.]+s\n\nOK\n$/m);
});

test("the project's tests catch a regression made inside the sandbox", async ({ sandbox }) => {
  await sandbox.uploadDirectory(project, "project");
  // Break the overdraw check, as a careless change would.
  await sandbox.runCommand({
    command: "sed -i 's/if quantity > available/if False/' inventory/stock.py",
    cwd: "project",
  });

  const result = await sandbox.runCommand(unittest);

  expect(result.exitCode).toBe(1);
  expect(result.stderr).toContain("FAIL: test_reserve_never_overdraws");
  expect(result.stderr).toContain("AssertionError: OutOfStock not raised");
  // Only the sandbox's copy changed.
  expect(await readFile(join(project, "inventory/stock.py"), "utf8")).toContain("if quantity > available");
});

test("a program in the sandbox reaches no network", async ({ sandbox }) => {
  const result = await sandbox.runCommand({
    command: "python3",
    args: ["-c", "import socket; socket.create_connection(('1.1.1.1', 53), timeout=2)"],
  });

  expect(result.exitCode).toBe(1);
  expect(result.stderr).toContain("OSError: [Errno 101] Network is unreachable");
});
