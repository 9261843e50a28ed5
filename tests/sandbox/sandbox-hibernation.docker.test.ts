// Hibernation end to end on the real engine: `max` bounds running sandboxes, not conversations. Idle thread
// sandboxes are stopped (files kept, processes gone) to make room and woken by the next call.
import { createAgentRuntime, createMemoryThreadStore } from "@pai/core";
import { PoolError } from "@pai/pool";
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
import { coderPai, commandModel, outputsOf, statusesOf } from "./fixtures/run-script.ts";

const identity = { userId: "u1" };

describe.skipIf(dockerOptedOut)("sandbox hibernation through createAgentRuntime", () => {
  it("twenty conversations on max 4: each writes a file, then each is continued and finds it", async () => {
    const poolId = uniquePoolId("hibernate-twenty");
    const binding = dockerSandbox({
      image: sandboxImage,
      poolId,
      pool: { min: 1, max: 4, acquireTimeoutMs: 60_000 },
    });
    const runtime = createAgentRuntime({
      pai: coderPai,
      store: createMemoryThreadStore(),
      model: commandModel(),
      capabilities: { sandbox: binding },
    });
    try {
      let mostRunning = 0;
      const watch = setInterval(() => {
        mostRunning = Math.max(mostRunning, binding.metrics()?.size ?? 0);
      }, 20);
      const conversations = Array.from({ length: 20 }, (_, index) => index);
      const first = await Promise.all(
        conversations.map(async (index) => {
          const run = await runtime.run({
            agentId: "coder",
            identity,
            message: `echo conversation-${index} > /workspace/mine.txt && echo wrote-${index}`,
          });
          return run.done;
        }),
      );
      for (const [index, result] of first.entries()) {
        expect(result.status, JSON.stringify(result.error)).toBe("completed");
        expect(outputsOf(result.messages)).toMatchObject([{ exitCode: 0, stdout: `wrote-${index}\n` }]);
      }
      const second = await Promise.all(
        first.map(async (previous) => {
          const run = await runtime.run({
            agentId: "coder",
            identity,
            threadId: previous.threadId,
            message: "cat /workspace/mine.txt",
          });
          return run.done;
        }),
      );
      clearInterval(watch);
      for (const [index, result] of second.entries()) {
        expect(result.status, JSON.stringify(result.error)).toBe("completed");
        expect(outputsOf(result.messages).at(-1)).toMatchObject({
          exitCode: 0,
          stdout: `conversation-${index}\n`,
        });
      }
      // Every conversation kept its own container; never more than max ran at once.
      expect(new Set(runtime.leases().map((lease) => lease.resourceId)).size).toBe(20);
      expect(mostRunning).toBeLessThanOrEqual(4);
      const woken = second
        .flatMap((result) => statusesOf(result.messages))
        .filter((s) => s.status === "woken");
      expect(woken.length).toBeGreaterThan(0);
    } finally {
      await runtime.close();
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        await removePoolContainers(poolId);
      }
    }
  }, 300_000);

  it("a wake is reported as woken: files are kept, processes started before are gone, the agent dials in again", async () => {
    const poolId = uniquePoolId("hibernate-wake");
    const binding = dockerSandbox({
      image: sandboxImage,
      poolId,
      pool: { min: 0, max: 2, hibernateAfterMs: 300 },
    });
    const model = commandModel();
    const runtime = createAgentRuntime({
      pai: coderPai,
      store: createMemoryThreadStore(),
      model,
      capabilities: { sandbox: binding },
    });
    try {
      const first = await (
        await runtime.run({
          agentId: "coder",
          identity,
          message:
            "echo kept > /workspace/note.txt; (setsid sleep 600 > /dev/null 2>&1 &); pgrep -f 'sleep 6[0]0'",
        })
      ).done;
      expect(first.status).toBe("completed");
      expect(outputsOf(first.messages)[0]).toMatchObject({ exitCode: 0 });
      const [lease] = runtime.leases();
      const containerId = lease?.resourceId ?? "";
      await waitFor(async () => binding.metrics()?.hibernated === 1, "hibernation");
      expect((await testDriver.inspect(containerId)).running).toBe(false);

      const second = await (
        await runtime.run({
          agentId: "coder",
          identity,
          threadId: first.threadId,
          // the agent serving it is the container's own (`--dial`), not one started with docker exec
          message:
            "cat /workspace/note.txt; pgrep -f 'sleep 6[0]0' || echo no-sleep; ps -o args= -C pai-agent",
        })
      ).done;
      expect(second.status).toBe("completed");
      expect(outputsOf(second.messages).at(-1)).toMatchObject({
        exitCode: 0,
        stdout: "kept\nno-sleep\n/opt/pai/pai-agent --dial\n",
      });
      const woken = statusesOf(second.messages).find((status) => status.status === "woken");
      expect(woken).toMatchObject({ capability: "sandbox", lifetime: "thread", resourceId: containerId });
      expect(woken?.durationMs).toBeGreaterThanOrEqual(0);
      expect(runtime.leases()[0]?.resourceId).toBe(containerId);

      // The model is told from the next turn on.
      await (await runtime.run({ agentId: "coder", identity, threadId: first.threadId, message: "true" }))
        .done;
      expect(JSON.stringify(model.doStreamCalls.at(-2)?.prompt)).toContain("had hibernated while idle");
    } finally {
      await runtime.close();
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        await removePoolContainers(poolId);
      }
    }
  }, 120_000);

  it("a hibernated sandbox is reattached by a restarted binding and woken on use", async () => {
    const poolId = uniquePoolId("hibernate-restart");
    const options = { image: sandboxImage, poolId, pool: { min: 0, max: 2, hibernateAfterMs: 200 } };
    const before = dockerSandbox(options);
    const after = dockerSandbox(options);
    try {
      await before.start?.({ ownerId: "hibernate-test" });
      const signal = new AbortController().signal;
      const resource = await before.provision({ leaseKey: "thread:t1", lifetime: "thread", signal });
      await resource.hibernation?.wake(signal);
      await resource.bind({ signal }).writeFiles([{ path: "a.txt", content: "from before" }]);
      resource.hibernation?.idle();
      await waitFor(async () => before.metrics()?.hibernated === 1, "hibernation");
      await before.close(); // the process ends; the lease stays recorded

      await after.start?.({ ownerId: "hibernate-test" });
      const record = {
        capability: "sandbox",
        lifetime: "thread" as const,
        key: "t1",
        resourceId: resource.resourceId,
        meta: resource.meta ?? {},
        createdAt: Date.now(),
        lastUsedAt: Date.now(),
      };
      const reattached = await after.reattach(record, signal);
      expect(reattached?.resourceId).toBe(resource.resourceId);
      expect(after.metrics()).toMatchObject({ hibernated: 1, size: 0 });
      expect(() => reattached?.facade).toThrow(/hibernated/);
      expect(await reattached?.hibernation?.wake(signal)).toBe("woken");
      const read = await reattached?.bind({ signal }).readFile("a.txt");
      expect(Buffer.from(read ?? []).toString()).toBe("from before");
      await reattached?.release();
    } finally {
      await Promise.allSettled([before.close(), after.close()]);
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        await removePoolContainers(poolId);
      }
    }
  }, 120_000);

  it("a wake that finds no room fails with POOL_EXHAUSTED and the sandbox stays hibernated", async () => {
    const poolId = uniquePoolId("hibernate-full");
    const binding = dockerSandbox({
      image: sandboxImage,
      poolId,
      pool: { min: 0, max: 1, acquireTimeoutMs: 5_000, hibernateAfterMs: 200 },
    });
    try {
      await binding.start?.({ ownerId: "hibernate-test" });
      const signal = new AbortController().signal;
      const sleeper = await binding.provision({ leaseKey: "thread:a", lifetime: "thread", signal });
      sleeper.hibernation?.idle();
      await waitFor(async () => binding.metrics()?.hibernated === 1, "hibernation");
      const busy = await binding.provision({ leaseKey: "thread:b", lifetime: "thread", signal });
      const failure = await sleeper.hibernation?.wake(signal).catch((error: unknown) => error);
      expect(PoolError.hasCode(failure, "POOL_EXHAUSTED")).toBe(true);
      expect(binding.metrics()).toMatchObject({ hibernated: 1, size: 1 });
      await busy.release();
      expect(await sleeper.hibernation?.wake(signal)).toBe("woken");
      await sleeper.release();
    } finally {
      await binding.close();
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        await removePoolContainers(poolId);
      }
    }
  }, 120_000);
});
