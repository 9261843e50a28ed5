// Deploys: a process closed with `close({ handOver: true })` leaves each conversation's sandbox to the next process
// on the same SQLite store. With the same spec, the next process reattaches the very container; with another
// spec (an upgrade: here another environment and pool id), it gives the conversation a fresh container that
// inherits the old one's /workspace — even from a hibernated (stopped) one — and removes the old container.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createAgentRuntime, createSqliteThreadStore } from "@pai/core";
import { createScriptedModel, type ScriptedStep } from "@pai/core/testing";
import { type DockerSandboxOptions, dockerSandbox } from "@pai/sandbox";
import { afterEach, describe, expect, it } from "vitest";
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

/** One process of the app: a runtime on the shared store whose model runs `command` once. */
function appProcess(path: string, binding: ReturnType<typeof dockerSandbox>, command: string) {
  const steps: ScriptedStep[] = [
    { toolCalls: [{ toolName: "runScript", input: { command } }] },
    { text: "ok" },
  ];
  const model = createScriptedModel({ steps });
  const runtime = createAgentRuntime({
    pai: coderPai,
    store: createSqliteThreadStore({ path }),
    model,
    capabilities: { sandbox: binding },
  });
  /** One message of user u1 (on `threadId`, or a new thread), run to its end: it must complete. */
  async function converse(message: string, threadId?: string) {
    const run = await runtime.run({
      agentId: "coder",
      identity: { userId: "u1" },
      message,
      ...(threadId ? { threadId } : {}),
    });
    const result = await run.done;
    expect(result.status).toBe("completed");
    return result;
  }
  return { runtime, model, converse };
}

/** The container of the runtime's one lease. */
function leasedContainer(runtime: ReturnType<typeof createAgentRuntime>): string {
  const [lease] = runtime.leases();
  if (lease?.resourceId === undefined) throw new Error("no settled lease");
  expect(lease.lifetime).toBe("thread");
  return lease.resourceId;
}

/** What the model saw of the tool's result on its second step. */
function toolOutput(model: ReturnType<typeof createScriptedModel>): string {
  return JSON.stringify(model.doStreamCalls[1]?.prompt);
}

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

function sandboxFor(options: DockerSandboxOptions) {
  const binding = dockerSandbox({ image: sandboxImage, ...options });
  cleanups.push(async () => {
    const poolId = binding.poolId;
    await binding.close();
    if (poolId) await removePoolContainers(poolId);
  });
  return binding;
}

function storePath(): string {
  const dir = mkdtempSync(join(tmpdir(), "pai-deploy-"));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  return join(dir, "threads.db");
}

describe.skipIf(dockerOptedOut)("sandbox across a deploy", () => {
  it("hands a conversation's container over to the next process, which reattaches it as it is", async () => {
    const path = storePath();
    const poolId = uniquePoolId("deploy-same");
    cleanups.push(() => removePoolContainers(poolId));
    const first = appProcess(
      path,
      sandboxFor({ poolId, pool: { min: 0, max: 2 } }),
      "echo drafted > notes.txt; hostname",
    );
    const written = await first.converse("write");
    const containerId = leasedContainer(first.runtime);
    await first.runtime.close({ handOver: true });
    // Left running, not removed.
    expect((await testDriver.inspect(containerId)).running).toBe(true);

    const next = appProcess(
      path,
      sandboxFor({ poolId, pool: { min: 0, max: 2 } }),
      "cat notes.txt; hostname",
    );
    await next.converse("read", written.threadId);
    expect(toolOutput(next.model)).toContain(`drafted\\n${containerId.slice(0, 12)}\\n`);
    expect(await poolContainers(poolId)).toEqual([containerId]);
    await next.runtime.close();
    expect(await poolContainers(poolId)).toEqual([]);
  });

  it("gives a conversation of an older spec a new container with its workspace, even from a hibernated one", async () => {
    const path = storePath();
    const oldPool = uniquePoolId("deploy-old");
    cleanups.push(() => removePoolContainers(oldPool));
    const first = appProcess(
      path,
      sandboxFor({
        poolId: oldPool,
        env: { APP_VERSION: "1" },
        pool: { min: 0, max: 2, hibernateAfterMs: 200 },
      }),
      "mkdir -p src && echo 'print(1)' > src/main.py && chmod 751 src/main.py && echo $APP_VERSION",
    );
    const written = await first.converse("write");
    const oldId = leasedContainer(first.runtime);
    // Idle past hibernateAfterMs: stopped, its files kept.
    await waitFor(async () => !(await testDriver.inspect(oldId)).running, "the sandbox to hibernate");
    await first.runtime.close({ handOver: true });
    expect(await poolContainers(oldPool)).toEqual([oldId]);

    // The upgrade: another environment and the default (spec-derived) pool id.
    const upgraded = sandboxFor({ env: { APP_VERSION: "2" }, pool: { min: 0, max: 2 } });
    const next = appProcess(
      path,
      upgraded,
      "cat src/main.py; stat -c %a src/main.py; echo $APP_VERSION; hostname",
    );
    await next.converse("read", written.threadId);
    const newId = leasedContainer(next.runtime);
    expect(newId).not.toBe(oldId);
    expect(toolOutput(next.model)).toContain(`print(1)\\n751\\n2\\n${newId.slice(0, 12)}\\n`);
    // The old container is gone; the store records the new one.
    expect(await poolContainers(oldPool)).toEqual([]);
    expect(await poolContainers(upgraded.poolId!)).toEqual([newId]);
    await next.runtime.close();
    expect(await poolContainers(upgraded.poolId!)).toEqual([]);
  });
});
