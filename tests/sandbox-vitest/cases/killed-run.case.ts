// Takes a sandbox, records it, and waits until the test that started the run kills it with SIGKILL.
import { paiSandboxFixture } from "@pai/sandbox/vitest";
import { test as base } from "vitest";
import { record } from "./case-log.ts";

const test = base.extend({ sandbox: paiSandboxFixture({ pool: { min: 1, max: 2 } }) });

test("holds a sandbox until the run is killed", { timeout: 300_000 }, async ({ sandbox }) => {
  await record("held", sandbox);
  await new Promise((resolve) => setTimeout(resolve, 300_000));
});
