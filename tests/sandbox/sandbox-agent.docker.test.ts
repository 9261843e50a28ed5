// Commands through the in-container agent, against the real engine: a claimed sandbox is already connected (its
// agent dialled this process as the container started), the agent's loss falls back to `docker exec` and the agent
// comes back, background processes die with their command, and OOM kills are reported as such.
import type { ContainerDriver } from "@pai/pool";
import { type DockerSandboxBinding, dockerSandbox, type ProvisionedSandbox } from "@pai/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  testDriver,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";

/** The real driver, counting the exec sessions it starts per container. */
function countingDriver(inner: ContainerDriver) {
  const execs = new Map<string, number>();
  const count = (id: string) => execs.set(id, (execs.get(id) ?? 0) + 1);
  const driver: ContainerDriver = {
    ...inner,
    exec: (id, options) => {
      count(id);
      return inner.exec(id, options);
    },
    execDuplex: (id, options) => {
      count(id);
      return inner.execDuplex(id, options);
    },
  };
  return { driver, execsOf: (id: string) => execs.get(id) ?? 0 };
}

const poolId = uniquePoolId("agent");
const counting = countingDriver(testDriver);
let binding: DockerSandboxBinding;
const leases: ProvisionedSandbox[] = [];

async function provision(key: string): Promise<ProvisionedSandbox> {
  const resource = await binding.provision({
    leaseKey: `thread:${key}`,
    lifetime: "thread",
    signal: new AbortController().signal,
  });
  leases.push(resource);
  return resource;
}

describe.skipIf(dockerOptedOut)("sandbox commands through the in-container agent", () => {
  beforeAll(async () => {
    binding = dockerSandbox({
      image: sandboxImage,
      poolId,
      driver: counting.driver,
      pool: { min: 1, max: 6 },
      limits: { memoryBytes: 96 * 1024 * 1024 },
    });
    await binding.start?.();
  });

  afterAll(async () => {
    try {
      for (const lease of leases) await lease.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  it("hands out a sandbox whose agent is already connected, dialled in as the container started: no exec at all", async () => {
    const { facade, resourceId } = await provision("connected");
    const before = counting.execsOf(resourceId);
    expect(before).toBe(0); // the agent is the container's main process and connected to this process itself
    const result = await facade.runCommand({ command: "id -u; echo $HOME", timeoutMs: 5_000 });
    expect(result).toMatchObject({ exitCode: 0, stdout: "1000\n/workspace\n", terminationReason: "exit" });
    for (let i = 0; i < 20; i++) await facade.runCommand({ command: "true", args: [] });
    await facade.writeFiles([{ path: "notes/a.txt", content: "through the agent" }]);
    expect(await facade.readTextFile("notes/a.txt")).toBe("through the agent");
    expect(counting.execsOf(resourceId)).toBe(before);
    expect((await facade.info()).executor).toBe("agent");
    // the agent runs as root from its own volume, its parent idles as the main process, and commands run as the
    // sandbox user, which cannot signal either
    const agent = await facade.runCommand({ command: "ps -o user=,args= -C pai-agent" });
    expect(agent.stdout.trim()).toBe("root     /opt/pai/pai-agent --dial");
    const idle = await facade.runCommand({ command: "ps -o user=,comm= -C pai-idle" });
    expect(idle.stdout.trim()).toBe("root     pai-idle");
  });

  it("refuses a program that dials in with the container's spent token (from /proc/1/environ)", async () => {
    const { facade, resourceId } = await provision("replay");
    // A program cannot read the main process's environment (it is root's)...
    const unread = await facade.runCommand({ command: "cat /proc/1/environ" });
    expect(unread).toMatchObject({ exitCode: 1 });
    expect(unread.stderr).toContain("Permission denied");
    // ...and the token, read from outside and handed to a program, is spent.
    const environ = await testDriver.exec(resourceId, { cmd: ["cat", "/proc/1/environ"] });
    expect(environ.exitCode).toBe(0);
    const replay = await facade.runCommand({
      command: "python3",
      stdin: environ.stdout,
      args: [
        "-c",
        [
          "import socket, sys",
          "env = dict(kv.split('=', 1) for kv in sys.stdin.read().split('\\0') if '=' in kv)",
          "s = socket.socket(socket.AF_UNIX)",
          "s.settimeout(10)",
          "s.connect(env['PAI_AGENT_DIAL'])",
          "s.sendall(('PAI-AGENT/1 ' + env['PAI_AGENT_TOKEN'] + '\\n').encode() + bytes(9))",
          "print(repr(s.recv(64)))",
        ].join("\n"),
      ],
      timeoutMs: 20_000,
    });
    expect(replay).toMatchObject({ exitCode: 0, stdout: "b''\n" }); // closed unseen
    expect((await facade.runCommand({ command: "echo still served" })).stdout).toBe("still served\n");
  });

  it("kills what a command left in the background when it exits", async () => {
    const { facade } = await provision("background");
    const started = await facade.runCommand({ command: "sleep 4321 >/dev/null 2>&1 & echo $!" });
    expect(started.exitCode).toBe(0);
    // SIGKILLed as the command exits; on a loaded machine it may take a moment to be scheduled and die.
    await waitFor(
      async () =>
        (
          await facade.runCommand({ command: "ps -eo args= | grep -c '^sleep 4321$' || true" })
        ).stdout.trim() === "0",
      "the background sleep to die",
      3_000,
    );
  });

  it("falls back to docker exec when the agent is killed, and starts a fresh agent", async () => {
    const { facade, resourceId } = await provision("fallback");
    await facade.writeFiles([{ path: "kept.txt", content: "still here" }]);
    const firstPid = (await facade.runCommand({ command: "pgrep -x pai-agent" })).stdout.trim();
    expect(firstPid).toMatch(/^\d+$/);
    const execsBefore = counting.execsOf(resourceId);
    // killed from outside, as a pid-exhausted or misbehaving sandbox would lose it
    await testDriver.exec(resourceId, { cmd: ["kill", "-KILL", firstPid] });
    await waitFor(async () => (await facade.info()).executor === "docker-exec", "the agent's loss");

    const fallback = await facade.runCommand({ command: "cat kept.txt; id -u", timeoutMs: 10_000 });
    expect(fallback).toMatchObject({ exitCode: 0, stdout: "still here1000\n" });
    expect(counting.execsOf(resourceId)).toBeGreaterThan(execsBefore);

    await waitFor(async () => (await facade.info()).executor === "agent", "a fresh agent");
    const secondPid = (await facade.runCommand({ command: "pgrep -x pai-agent" })).stdout.trim();
    expect(secondPid).toMatch(/^\d+$/);
    expect(secondPid).not.toBe(firstPid);
    expect((await facade.runCommand({ command: "echo back" })).stdout).toBe("back\n");
  });

  it("reports a command the OOM killer ended as exit 137 with oomKilled, and a plain SIGKILL without", async () => {
    const { facade } = await provision("oom");
    const result = await facade.runCommand({
      command: "python3",
      args: ["-c", "chunks = []\nwhile True: chunks.append(bytearray(8 * 1024 * 1024))"],
      timeoutMs: 30_000,
    });
    expect(result).toMatchObject({ exitCode: 137, terminationReason: "exit", oomKilled: true });
    expect((await facade.info()).executor).toBe("agent"); // the agent survived the OOM kill
    const killed = await facade.runCommand({ command: "kill -KILL $$" });
    expect(killed.exitCode).toBe(137);
    expect(killed.oomKilled).toBeUndefined();
  });
});
