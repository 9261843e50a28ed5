// The other of two files with the same fixture options, run side by side in two workers.
import { paiSandboxFixture } from "@pai/sandbox/vitest";
import { test as base, expect } from "vitest";
import { record } from "./case-log.ts";

const test = base.extend({ sandbox: paiSandboxFixture({ pool: { min: 2, max: 6 } }) });

for (const name of ["b1", "b2", "b3"]) {
  test(name, async ({ sandbox }) => {
    await record(name, sandbox);
    expect((await sandbox.runCommand({ command: "sleep 0.3; echo done" })).stdout).toBe("done\n");
  });
}
