// The one executor contract, on one real container: the same requests through the in-container agent and through
// `docker exec` give the same results and the same errors — exit codes as a shell reports them, files resolved
// inside the container (symlinks followed, escapes refused with the path they resolve to), a batch checked
// before anything is written, files larger than an agent frame.
import {
  createDockerExecExecutor,
  createSandboxFacade,
  type DockerSandboxBinding,
  dockerSandbox,
  type ProvisionedSandbox,
  SandboxError,
  type SandboxFacade,
} from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  testDriver,
  uniquePoolId,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("contract");
let binding: DockerSandboxBinding;
let resource: ProvisionedSandbox;
let viaAgent: SandboxFacade;
let viaExec: SandboxFacade;
let closeExec: () => Promise<void>;

/** What a call gave: its value, or its error's code, message and details. */
async function outcome(call: () => Promise<unknown>): Promise<unknown> {
  try {
    const value = await call();
    if (value instanceof Uint8Array) return { bytes: Buffer.from(value).toString("base64") };
    if (value && typeof value === "object" && "exitCode" in value) {
      const { exitCode, stdout, terminationReason } = value as Record<string, unknown>;
      return { exitCode, stdout, terminationReason };
    }
    return { value };
  } catch (error) {
    if (!SandboxError.isInstance(error)) throw error;
    return { code: error.code, message: error.message, details: error.details };
  }
}

describe.skipIf(dockerOptedOut)("the executor contract", () => {
  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 1 } });
    resource = await binding.provision({
      leaseKey: "thread:contract",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    viaAgent = resource.facade;
    const executor = createDockerExecExecutor({ driver: testDriver, containerId: resource.resourceId });
    closeExec = () => executor.close();
    viaExec = createSandboxFacade({
      executor,
      driver: testDriver,
      containerId: resource.resourceId,
      image: sandboxImage,
    });
    expect((await viaAgent.info()).executor).toBe("agent");
    expect((await viaExec.info()).executor).toBe("docker-exec");
    await viaAgent.runCommand({
      command: [
        "mkdir -p dir && ln -sfn /etc out && ln -sf /etc/passwd leak && echo inside > target.txt",
        "ln -sf /workspace/target.txt alias-abs && ln -sf target.txt alias",
        "head -c 3000000 /dev/zero > big.bin",
      ].join(" && "),
    });
  });

  afterAll(async () => {
    try {
      await closeExec?.();
      await resource?.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  it("runs commands with the same exit codes and output", async () => {
    const cases: Array<(box: SandboxFacade) => Promise<unknown>> = [
      (box) => box.runCommand({ command: "echo hi; exit 3" }),
      (box) => box.runCommand({ command: "no-such-program", args: [] }),
      (box) => box.runCommand({ command: "true", args: [], cwd: "no/such/dir" }),
      (box) => box.runCommand({ command: "kill -KILL $$" }),
      (box) => box.runCommand({ command: "sleep 5", timeoutMs: 200 }),
    ];
    for (const run of cases) {
      expect(await outcome(() => run(viaAgent))).toEqual(await outcome(() => run(viaExec)));
    }
    expect(await outcome(() => viaAgent.runCommand({ command: "no-such-program", args: [] }))).toMatchObject({
      exitCode: 127,
    });
  });

  it("reads and refuses files the same way, larger than a frame included", async () => {
    const cases: Array<(box: SandboxFacade) => Promise<unknown>> = [
      (box) => box.readFile("target.txt"),
      (box) => box.readFile("alias"),
      (box) => box.readFile("alias-abs"),
      (box) => box.readFile("missing.txt"),
      (box) => box.readFile("missing/deeper.txt"),
      (box) => box.readFile("dir"),
      (box) => box.readFile("leak"),
      (box) => box.readFile("out/passwd"),
      (box) => box.readFile("big.bin"),
      (box) => box.readFile("big.bin", { maxBytes: 1000 }),
    ];
    for (const read of cases) {
      expect(await outcome(() => read(viaAgent))).toEqual(await outcome(() => read(viaExec)));
    }
    expect(await outcome(() => viaAgent.readFile("leak"))).toMatchObject({
      code: "PATH_OUTSIDE_WORKSPACE",
      details: { resolved: "/etc/passwd" },
    });
  });

  it("writes files the same way: symlinks replaced, directories refused, a bad batch writes nothing", async () => {
    for (const [name, box] of [
      ["agent", viaAgent],
      ["exec", viaExec],
    ] as const) {
      await viaAgent.runCommand({
        command: `rm -rf w-${name} && mkdir w-${name} && ln -s ../target.txt w-${name}/link`,
      });
      expect(await outcome(() => box.writeFiles([{ path: `w-${name}/link`, content: "new" }]))).toEqual({
        value: undefined,
      });
      expect(await viaAgent.readTextFile("target.txt")).toBe("inside\n");
      expect(await viaAgent.readTextFile(`w-${name}/link`)).toBe("new");
      expect((await viaAgent.runCommand({ command: `test -L w-${name}/link || echo regular` })).stdout).toBe(
        "regular\n",
      );
      await box.writeFiles([{ path: `w-${name}/deep/er/x.sh`, content: "#!/bin/sh\n", mode: 0o755 }]);
      expect((await viaAgent.runCommand({ command: `stat -c '%a %u' w-${name}/deep/er/x.sh` })).stdout).toBe(
        "755 1000\n",
      );
    }
    const refusals: Array<(box: SandboxFacade) => Promise<unknown>> = [
      (box) => box.writeFiles([{ path: "dir", content: "x" }]),
      (box) => box.writeFiles([{ path: "out/x", content: "x" }]),
      (box) =>
        box.writeFiles([
          { path: "fine/a.txt", content: "a" },
          { path: "leak", content: "x" },
        ]),
    ];
    for (const write of refusals) {
      const agentSide = await outcome(() => write(viaAgent));
      expect(agentSide).toEqual(await outcome(() => write(viaExec)));
      expect(agentSide).toMatchObject({
        code: expect.stringMatching(/INVALID_ARGUMENT|PATH_OUTSIDE_WORKSPACE/),
      });
    }
    expect(await viaAgent.stat("fine")).toBeNull();
    const big = new Uint8Array(2 * 1024 * 1024).fill(7);
    await viaAgent.writeFiles([{ path: "big-agent.bin", content: big }]);
    await viaExec.writeFiles([{ path: "big-exec.bin", content: big }]);
    expect(await viaAgent.readFile("big-agent.bin")).toEqual(await viaExec.readFile("big-exec.bin"));
  });
});
