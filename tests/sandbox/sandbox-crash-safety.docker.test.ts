// Crash safety: a thread's container outlives a SIGKILLed Node process; a new runtime on the same SQLite store
// takes it over once the dead process's heartbeat is stale (files intact) and removes the containers nobody owns.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createAgentRuntime, createSqliteThreadStore } from "@pai/core";
import { createScriptedModel } from "@pai/core/testing";
import { poolLabels } from "@pai/pool";
import { dockerSandbox } from "@pai/sandbox";
import { describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  testDriver,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";
import { coderPai } from "./fixtures/run-script.ts";

const childScript = fileURLToPath(new URL("./fixtures/crash-child.ts", import.meta.url));

/** Runs the child until it reports its container, then SIGKILLs it. */
async function crashingChild(
  path: string,
  poolId: string,
): Promise<{ status: string; threadId: string; containerId: string }> {
  const child = spawn(process.execPath, [childScript, path, poolId, sandboxImage], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => {
    stdout += text;
  });
  child.stderr.setEncoding("utf8").on("data", (text: string) => {
    stderr += text;
  });
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("exit", (_code, signal) => resolve(signal)),
  );
  try {
    const deadline = Date.now() + 60_000;
    while (!stdout.includes("\n")) {
      if (child.exitCode !== null) throw new Error(`the child exited early: ${stderr}`);
      if (Date.now() > deadline) throw new Error(`the child did not report: ${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return JSON.parse(stdout.split("\n")[0]!);
  } finally {
    child.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
  }
}

describe.skipIf(dockerOptedOut)("sandbox crash safety", () => {
  it("reattaches a thread's container after the process was killed and reaps containers nobody owns", async () => {
    const poolId = uniquePoolId("crash");
    const dir = mkdtempSync(join(tmpdir(), "pai-crash-"));
    const path = join(dir, "threads.db");
    const binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2 } });
    try {
      const before = await crashingChild(path, poolId);
      expect(before.status).toBe("completed");
      expect((await testDriver.inspect(before.containerId)).running).toBe(true);

      // A stray: labelled for this pool, owned by no lease.
      const stray = await testDriver.create(
        { image: sandboxImage },
        { [poolLabels.managed]: "true", [poolLabels.pool]: poolId, [poolLabels.instance]: "gone" },
      );
      await testDriver.start(stray.id);
      expect(await poolContainers(poolId)).toEqual([before.containerId, stray.id].sort());

      const model = createScriptedModel({
        steps: [
          { toolCalls: [{ toolName: "runScript", input: { command: "cat state.txt; hostname" } }] },
          { text: "read" },
        ],
      });
      await using runtime = createAgentRuntime({
        pai: coderPai,
        store: createSqliteThreadStore({ path }),
        model,
        capabilities: { sandbox: binding },
        // The killed child counts as dead once its last heartbeat is a second old.
        ownerTtlMs: 1000,
      });
      await runtime.startCapabilities();
      await waitFor(async () => {
        await runtime.sweep();
        return runtime.leases().length > 0;
      }, "the dead child's thread lease to be taken over");
      expect(runtime.leases()).toEqual([
        { capability: "sandbox", lifetime: "thread", key: before.threadId, resourceId: before.containerId },
      ]);
      expect(await poolContainers(poolId)).toEqual([before.containerId]);

      const run = await runtime.run({
        agentId: "coder",
        identity: { userId: "u1" },
        threadId: before.threadId,
        message: "what did you save?",
      });
      const result = await run.done;
      expect(result.status).toBe("completed");
      const prompt = JSON.stringify(model.doStreamCalls[1]?.prompt);
      expect(prompt).toContain(`survived\\n${before.containerId.slice(0, 12)}\\n`);

      await runtime.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await binding.close();
      await removePoolContainers(poolId);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
