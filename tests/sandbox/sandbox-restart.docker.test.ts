// A sandbox whose container stopped outside PAI's wish, on the real engine, through createAgentRuntime: its init
// killed from the host, `docker kill`, `docker stop`. The next call starts it again through the wake path (files
// kept, processes gone, its agent dialling in again), the run streams `restarted` with the reason and the model is
// told; a container that stops again and again is not restarted in a loop (CONTAINER_LOST); and one that cannot be
// started again is replaced by a new container that inherits its /workspace. An engine restart is shown on an extra
// engine (scripts/docker-engines-extra): the main engine is never restarted.

import { agentSupervisorSpec } from "@pai/container-agent";
import { createAgentRuntime, createMemoryThreadStore, toolEndOf } from "@pai/core";
import { createPooledBinding, type PooledResource } from "@pai/docker-binding";
import { dockerSandbox } from "@pai/sandbox";
import { describe, expect, it } from "vitest";
import {
  engineSandboxImage,
  ensureTestEngines,
  removeFromEngines,
  stopTestEngine,
} from "../fixtures/test-engines.ts";
import {
  docker,
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

/** Waits until the engine reports the container stopped (what each way of stopping it ends with). */
const stoppedOnEngine = (containerId: string) =>
  waitFor(async () => !(await testDriver.inspect(containerId)).running, "the container to stop");

const ways: Array<{ name: string; stop: (containerId: string) => Promise<unknown>; reason: string }> = [
  {
    name: "its init killed from the host",
    stop: async (containerId) =>
      process.kill(Number(await docker("inspect", "-f", "{{.State.Pid}}", containerId)), "SIGKILL"),
    reason: "its container was killed (exit code 137)",
  },
  {
    name: "docker kill",
    stop: (containerId) => docker("kill", containerId),
    reason: "its container was killed (exit code 137)",
  },
  {
    name: "docker stop",
    stop: (containerId) => docker("stop", "--time", "1", containerId),
    reason: "its container stopped (exit code 0)",
  },
];

describe.skipIf(dockerOptedOut)("a sandbox whose container stopped outside PAI", () => {
  it.each(ways)(
    "$name: the next call starts it again, files kept, processes gone; the run says why and the model is told",
    async ({ stop, reason }) => {
      const poolId = uniquePoolId("restart");
      const binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2 } });
      const model = commandModel();
      const runtime = createAgentRuntime({
        pai: coderPai,
        store: createMemoryThreadStore(),
        model,
        capabilities: { sandbox: binding },
      });
      const turn = async (message: string, threadId?: string) =>
        (await runtime.run({ agentId: "coder", identity, message, ...(threadId ? { threadId } : {}) })).done;
      try {
        const first = await turn("echo kept > note.txt; (setsid sleep 600 > /dev/null 2>&1 &); echo started");
        expect(outputsOf(first.messages)[0]).toMatchObject({ exitCode: 0, stdout: "started\n" });
        const containerId = runtime.leases()[0]!.resourceId!;

        await stop(containerId);
        await stoppedOnEngine(containerId);

        const second = await turn(
          "cat note.txt; pgrep -f 'sleep 6[0]0' || echo no-sleep; ps -o user=,args= -C pai-agent",
          first.threadId,
        );
        expect(outputsOf(second.messages).at(-1)).toMatchObject({
          exitCode: 0,
          stdout: "kept\nno-sleep\nroot     /opt/pai/pai-agent --dial\n",
        });
        const restarted = statusesOf(second.messages).filter((status) => status.status === "restarted");
        expect(restarted).toMatchObject([
          { capability: "sandbox", lifetime: "thread", resourceId: containerId, reason },
        ]);
        expect(runtime.leases()[0]?.resourceId).toBe(containerId);
        expect((await testDriver.inspect(containerId)).running).toBe(true);

        // The model is told from the next turn on, as of a wake.
        await turn("true", first.threadId);
        expect(JSON.stringify(model.doStreamCalls.at(-2)?.prompt)).toContain(
          `[the sandbox had stopped (${reason}) and was started again: its files are kept, processes started before are gone]`,
        );
      } finally {
        await runtime.close();
        try {
          expect(await poolContainers(poolId)).toEqual([]);
        } finally {
          await removePoolContainers(poolId);
        }
      }
    },
    120_000,
  );

  it("is not restarted in a loop: past the limit the call fails with CONTAINER_LOST, saying why", async () => {
    const poolId = uniquePoolId("restart-loop");
    const binding = dockerSandbox({
      image: sandboxImage,
      poolId,
      pool: { min: 0, max: 2, restartLimit: { restarts: 2, withinMs: 600_000 } },
    });
    const runtime = createAgentRuntime({
      pai: coderPai,
      store: createMemoryThreadStore(),
      model: commandModel(),
      capabilities: { sandbox: binding },
    });
    const turn = async (message: string, threadId?: string) =>
      (await runtime.run({ agentId: "coder", identity, message, ...(threadId ? { threadId } : {}) })).done;
    try {
      const first = await turn("echo kept > note.txt");
      const containerId = runtime.leases()[0]!.resourceId!;
      for (let restart = 1; restart <= 2; restart++) {
        await docker("kill", containerId);
        await stoppedOnEngine(containerId);
        const again = await turn("cat note.txt", first.threadId);
        expect(outputsOf(again.messages).at(-1)).toMatchObject({ exitCode: 0, stdout: "kept\n" });
      }
      await docker("kill", containerId);
      await stoppedOnEngine(containerId);
      const lost = await turn("cat note.txt", first.threadId);
      expect(lost.status).toBe("completed"); // the run goes on; the call says why it failed
      const call = lost.messages.at(-1)?.parts.find((part) => part.type === "tool-runScript");
      expect(call).toMatchObject({
        state: "output-error",
        errorText:
          "The sandbox stopped again (its container was killed (exit code 137)) after 2 restarts within 600 s and is not started again for now (CONTAINER_LOST). Try again later.",
      });
      expect(toolEndOf(call)).toMatchObject({ reason: "provision-failed", code: "CONTAINER_LOST" });
      expect(statusesOf(lost.messages).at(-1)).toMatchObject({ status: "failed", code: "CONTAINER_LOST" });
      // It was left stopped: not started a third time.
      expect((await testDriver.inspect(containerId)).running).toBe(false);
    } finally {
      await runtime.close();
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        await removePoolContainers(poolId);
      }
    }
  }, 180_000);

  it("is replaced by a new container inheriting its /workspace when it cannot be started again", async () => {
    const poolId = uniquePoolId("restart-successor");
    // A pool whose containers' set-up the test can make fail once: a container that starts but whose programs'
    // supervisor does not come up again (the way an engine's state can leave one).
    let failNextSetup = false;
    const pooled = createPooledBinding<string, { containerId: string }>({
      capability: "sandbox",
      engines: [{ id: "local", driver: testDriver }],
      poolId,
      pool: { min: 0, max: 2 },
      carryOver: ["/workspace"],
      closedError: () => new Error("closed"),
      calls: { containerId: {} },
      prepare: async () => ({
        image: sandboxImage,
        spec: { image: sandboxImage, ...agentSupervisorSpec },
        setup: ({ containerId }) => {
          if (failNextSetup) {
            failNextSetup = false;
            throw new Error("its supervisor did not come up");
          }
          return containerId;
        },
        facadeOf: (lease) => ({ facade: { containerId: lease.containerId } }),
      }),
    });
    let sandbox: PooledResource<{ containerId: string }> | undefined;
    const signal = new AbortController().signal;
    try {
      sandbox = await pooled.provision({ leaseKey: "thread:successor", signal });
      const old = sandbox.resourceId;
      const written = await testDriver.exec(old, {
        user: "1000:1000",
        cmd: ["sh", "-c", "mkdir -p src && echo kept > src/note.txt && chmod 600 src/note.txt"],
      });
      expect(written.exitCode).toBe(0);
      await docker("kill", old);
      await stoppedOnEngine(old);
      failNextSetup = true;

      expect(await sandbox.hibernation.wake(signal)).toEqual({
        status: "restarted",
        reason:
          "its container was killed (exit code 137); it could not be started again (its supervisor did not come up), so a new container took over its /workspace",
      });
      expect(sandbox.resourceId).not.toBe(old);
      expect(sandbox.facade.containerId).toBe(sandbox.resourceId);
      expect(await poolContainers(poolId)).toEqual([sandbox.resourceId]);
      const read = await testDriver.exec(sandbox.resourceId, {
        user: "1000:1000",
        cmd: ["sh", "-c", "cat /workspace/src/note.txt; stat -c '%u:%g %a' /workspace/src/note.txt"],
      });
      expect(read.stdout).toBe("kept\n1000:1000 600\n");
    } finally {
      await sandbox?.release();
      await pooled.close();
      try {
        expect(await poolContainers(poolId)).toEqual([]);
      } finally {
        await removePoolContainers(poolId);
      }
    }
  }, 120_000);
});

describe.skipIf(dockerOptedOut)("a sandbox whose engine restarted", () => {
  it("is started again on the next call, with its files, once the engine is back", async () => {
    const [engine] = ensureTestEngines(1);
    const poolId = uniquePoolId("restart-engine");
    const binding = dockerSandbox({
      image: engineSandboxImage(),
      engines: [engine!.engine],
      poolId,
      pool: { min: 0, max: 2, acquireTimeoutMs: 60_000 },
      // No health check of the engine during the test: a check that found it down would lose the sandbox (an
      // unreachable engine's sandboxes are lost for good), which is not what this test is about.
      poolTuning: { engineChecks: { intervalMs: 600_000 } },
    });
    const signal = new AbortController().signal;
    let stopped = false;
    try {
      const sandbox = await binding.provision({ leaseKey: "thread:engine", lifetime: "thread", signal });
      await sandbox.facade.writeFiles([{ path: "note.txt", content: "kept" }]);
      await stopTestEngine(engine!.n);
      stopped = true;
      ensureTestEngines(1); // its dockerd starts again, and stops the containers it left running
      stopped = false;
      await waitFor(
        async () => !(await engine!.driver.inspect(sandbox.resourceId)).running,
        "the engine to stop the container",
        60_000,
      );
      const woke = await sandbox.hibernation?.wake(signal);
      expect(woke).toMatchObject({ status: "restarted", reason: expect.stringContaining("its container") });
      expect(await sandbox.facade.readTextFile("note.txt")).toBe("kept");
      expect((await sandbox.facade.runCommand({ command: "echo back" })).stdout).toBe("back\n");
      await sandbox.release();
    } finally {
      if (stopped) ensureTestEngines(1);
      await binding.close();
      await removeFromEngines([engine!], poolId);
    }
  }, 300_000);
});
