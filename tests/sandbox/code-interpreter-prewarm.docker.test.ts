// `dockerSandbox({ codeInterpreter: { prewarm } })` against the real engine: the pool starts the default Python
// context in each container it creates, and the conversation that gets the container runs its first cell in it.
import type { ProvisionedResource } from "@pai/core";
import { type DockerSandboxBinding, dockerSandbox, type SandboxFacade } from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("prewarm");
let binding: DockerSandboxBinding;
const resources: ProvisionedResource<SandboxFacade>[] = [];
const signal = new AbortController().signal;

/** The pids of the code context drivers running in the sandbox (their argv carries the drivers' first line). */
async function driverPids(box: SandboxFacade): Promise<string[]> {
  // argv, not a shell line: pgrep leaves itself out, a shell's command line would match
  const { stdout } = await box.runCommand({ command: "pgrep", args: ["-f", "PAI code context driver"] });
  return stdout.split("\n").filter(Boolean);
}

describe.skipIf(dockerOptedOut)("prewarmed code contexts", () => {
  beforeAll(async () => {
    binding = dockerSandbox({
      image: sandboxImage,
      poolId,
      pool: { min: 1, max: 2 },
      codeInterpreter: { prewarm: ["python"] },
    });
    await binding.start?.();
  }, 120_000);

  afterAll(async () => {
    try {
      for (const resource of resources) await resource.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  it("runs a new conversation's first cell in the Python context the pool started", async () => {
    const resource = await binding.provision({ leaseKey: "thread:prewarm-1", lifetime: "thread", signal });
    resources.push(resource);
    const box = resource.facade;
    // started with the container, before anything asked for it
    const before = await driverPids(box);
    expect(before).toHaveLength(1);
    expect(await box.listCodeContexts()).toEqual([
      { id: "default-python", language: "python", cwd: "/workspace" },
    ]);
    const first = await box.runCode("x = 20\nx + 1");
    expect(first).toMatchObject({ executionCount: 1, terminationReason: "completed" });
    expect(first.restarted).toBeUndefined();
    expect(first.results.find((result) => result.isMainResult)?.text).toBe("21");
    expect((await box.runCode("x * 2")).results[0]?.text).toBe("40");
    // the same process: nothing started another or killed it
    expect(await driverPids(box)).toEqual(before);
    // a view of the same sandbox for a run shares its contexts
    const view = resource.bind?.({ signal }) ?? box;
    expect((await view.runCode("x")).results[0]?.text).toBe("20");
    expect(await driverPids(box)).toEqual(before);
  });

  it("prewarms the container the pool creates next, which another conversation gets", async () => {
    const resource = await binding.provision({ leaseKey: "thread:prewarm-2", lifetime: "thread", signal });
    resources.push(resource);
    const box = resource.facade;
    expect(await driverPids(box)).toHaveLength(1);
    const { results, executionCount } = await box.runCode("'x' in dir()");
    expect({ text: results[0]?.text, executionCount }).toEqual({ text: "False", executionCount: 1 });
  });
});
