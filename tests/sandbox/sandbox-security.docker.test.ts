// The sandbox's security defaults, each checked from inside a real container.
import type { ProvisionedResource } from "@pai/core";
import { type DockerSandboxBinding, dockerSandbox, type SandboxFacade } from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  docker,
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("security");
const limits = {
  memoryBytes: 128 * 1024 * 1024,
  nanoCpus: 500_000_000,
  pidsLimit: 64,
  fsizeBytes: 1024 * 1024,
};
let binding: DockerSandboxBinding;
let resource: ProvisionedResource<SandboxFacade>;
let box: SandboxFacade;

async function sh(command: string): Promise<string> {
  const result = await box.runCommand({ command, timeoutMs: 10_000 });
  return result.stdout.trim();
}

function statusField(status: string, field: string): string | undefined {
  return new RegExp(`^${field}:\\s*(\\S+)`, "m").exec(status)?.[1];
}

describe.skipIf(dockerOptedOut)("sandbox security defaults, seen from inside the container", () => {
  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 1 }, limits });
    await binding.start?.();
    resource = await binding.provision({
      leaseKey: "thread:security",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    box = resource.facade;
  });

  afterAll(async () => {
    try {
      await resource?.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  it("has no network but loopback", async () => {
    expect(await sh("ls /sys/class/net")).toBe("lo");
    const route = await box.runCommand({ command: "cat /proc/net/route | wc -l" });
    expect(route.stdout.trim()).toBe("1"); // the header line only: no routes
  });

  it("runs as uid 1000 with no capabilities and no-new-privileges", async () => {
    expect(await sh("id -u; id -g")).toBe("1000\n1000");
    const status = await sh("cat /proc/self/status");
    expect(statusField(status, "CapEff")).toBe("0000000000000000");
    expect(statusField(status, "CapPrm")).toBe("0000000000000000");
    expect(statusField(status, "CapBnd")).toBe("0000000000000000");
    expect(statusField(status, "NoNewPrivs")).toBe("1");
  });

  it("cannot stop its sandbox: programs cannot signal the agent, its parent or init, and the next command runs", async () => {
    await box.writeFiles([{ path: "kept.txt", content: "before the attacks" }]);
    const agentPid = await sh("pgrep -x pai-agent");
    expect(agentPid).toMatch(/^\d+$/);
    // The agent, its parent (the container's main process) and init run as root: no program may signal them.
    expect(await sh("ps -o user= -p 1,$(pgrep -x pai-idle),$(pgrep -x pai-agent) | sort -u")).toBe("root");
    const attacks = [
      "kill -9 $(pgrep -f pai-agent)",
      "kill -9 $(pgrep -x pai-idle)",
      "kill -9 1",
      "pkill -9 -f pai-agent",
      "pkill -9 pai",
      "kill -9 -1",
    ];
    for (const command of attacks) {
      const attack = await box.runCommand({ command, timeoutMs: 10_000 });
      expect(attack.terminationReason).toBe("exit");
      // the very next command runs, through the same agent, in the same container
      const next = await box.runCommand({ command: "cat kept.txt; echo; pgrep -x pai-agent" });
      expect(next).toMatchObject({ exitCode: 0, stdout: `before the attacks\n${agentPid}\n` });
    }
    // What a program may signal (its own user's processes) it still can: `kill -9 -1` ends its siblings.
    const sibling = await box.spawn({ command: "sleep", args: ["600"] });
    expect((await box.runCommand({ command: "kill -9 -1" })).exitCode).toBe(0);
    expect((await sibling.wait()).exitCode).toBe(137);
    expect((await box.info()).executor).toBe("agent");
    expect(await docker("inspect", "-f", "{{.State.Running}} {{.RestartCount}}", resource.resourceId)).toBe(
      "true 0",
    );
  });

  it("cannot reach into the agent: its memory, descriptors and environment are root's, its volume read-only", async () => {
    const pid = await sh("pgrep -x pai-agent");
    for (const path of [`/proc/${pid}/environ`, `/proc/${pid}/mem`, "/proc/1/environ"]) {
      const read = await box.runCommand({ command: "head", args: ["-c", "1", path] });
      expect(read.exitCode).not.toBe(0);
      expect(read.stderr).toContain("Permission denied");
    }
    expect((await box.runCommand({ command: `ls /proc/${pid}/fd` })).stderr).toContain("Permission denied");
    const trace = await box.runCommand({
      command: "python3",
      args: [
        "-c",
        `import ctypes, sys; libc = ctypes.CDLL(None); sys.exit(0 if libc.ptrace(16, ${pid}, 0, 0) == 0 else ctypes.get_errno() or 1)`,
      ],
    });
    expect(trace.exitCode).not.toBe(0); // PTRACE_ATTACH refused
    const write = await box.runCommand({ command: "touch /opt/pai/planted; cp /bin/sh /opt/pai/pai-agent" });
    expect(write.exitCode).not.toBe(0);
    expect(write.stderr).toContain("Read-only file system");
  });

  it("has a read-only root with a writable workspace and /tmp", async () => {
    const root = await box.runCommand({ command: "touch /etc/pai-test" });
    expect(root.exitCode).not.toBe(0);
    expect(root.stderr).toContain("Read-only file system");
    expect((await box.runCommand({ command: "touch /workspace/ok /tmp/ok" })).exitCode).toBe(0);
  });

  it("bounds file sizes with the fsize limit", async () => {
    const result = await box.runCommand({ command: "head -c 2M /dev/zero > big.bin" });
    expect(result.exitCode).not.toBe(0);
    expect(Number(await sh("stat -c %s big.bin"))).toBeLessThanOrEqual(limits.fsizeBytes);
    await box.removeFile("big.bin");
  });

  it("contains a fork bomb within the pids limit, and the next command still runs", async () => {
    expect(await sh("cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max")).toBe(
      String(limits.pidsLimit),
    );
    const bomb = await box.runCommand({ command: ":(){ :|:& };:", timeoutMs: 2_000 });
    // the bomb's first shell returns at once; what it forked is its process group, killed with it
    expect(["exit", "timeout"]).toContain(bomb.terminationReason);
    const next = await box.runCommand({ command: "echo still alive; ps -e --no-headers | wc -l" });
    expect(next.exitCode).toBe(0);
    const [alive, count] = next.stdout.trim().split("\n");
    expect(alive).toBe("still alive");
    expect(Number(count)).toBeLessThan(10); // the bomb's processes are gone
  });

  it("ends a memory bomb with an OOM result and keeps the sandbox usable", async () => {
    const result = await box.runCommand({
      command: "python3",
      args: ["-c", "chunks = []\nwhile True: chunks.append(bytearray(8 * 1024 * 1024))"],
      timeoutMs: 30_000,
    });
    expect(result.exitCode).toBe(137);
    expect(result.terminationReason).toBe("exit");
    expect(result.oomKilled).toBe(true);
    expect(await sh("echo ok")).toBe("ok");
    // a plain SIGKILL is not reported as OOM
    const killed = await box.runCommand({ command: "kill -KILL $$" });
    expect(killed.exitCode).toBe(137);
    expect(killed.oomKilled).toBeUndefined();
  });

  it("limits memory and CPU as configured", async () => {
    expect(
      Number(
        await sh(
          "cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max",
        ),
      ),
    ).toBe(limits.memoryBytes);
    const quota = await sh(
      "cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us 2>/dev/null || cat /sys/fs/cgroup/cpu.max",
    );
    const [q, period] = quota.split(/\s+/).map(Number);
    expect((q ?? 0) / (period ?? 1)).toBeCloseTo(0.5);
    expect(await docker("inspect", "-f", "{{.HostConfig.NanoCpus}}", resource.resourceId)).toBe("500000000");
  });

  it("runs an init process as PID 1 that reaps orphaned zombies", async () => {
    expect(await sh("cat /proc/1/comm")).toBe("docker-init");
    // an orphan: its parent (the subshell) exits at once, so PID 1 inherits it
    await box.runCommand({ command: "( sleep 0.2 & ) ; true" });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await sh("ps -eo stat= | grep -c '^Z' || true")).toBe("0");
  });
});
