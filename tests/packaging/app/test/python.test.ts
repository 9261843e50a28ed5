// The app's own test of code it runs in a sandbox: Vitest with @pai/sandbox's fixture, as the README shows.
import { paiSandboxFixture } from "@pai/sandbox/vitest";
import { test as base, expect } from "vitest";

const test = base.extend({ sandbox: paiSandboxFixture({ pool: { min: 1 } }) });

test("python runs in a fresh sandbox", async ({ sandbox }) => {
  await sandbox.writeFiles([{ path: "answer.py", content: "print(6 * 7)\n" }]);
  const result = await sandbox.runCommand({ command: "python3 answer.py" });
  expect(result).toMatchObject({ exitCode: 0, stdout: "42\n" });
});

test("each test gets its own sandbox", async ({ sandbox }) => {
  expect(await sandbox.readTextFile("answer.py")).toBeNull();
});
