// dockerSandbox on an engine reached over SSH, against real parts: the project's sshd on 127.0.0.1
// (scripts/sshd-loopback, root by key only) in front of the local engine, which each Engine API connection reaches
// through `docker system dial-stdio` on the "remote" side. The SSH engine is treated as remote (no host socket
// directory: egress goes through the agent's tunnel), alone, beside the local socket engine, and as DOCKER_HOST.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { createDockerDriver, PoolError } from "@pai/pool";
import {
  type DockerSandboxBinding,
  type DockerSandboxOptions,
  dockerSandbox,
  type ProvisionedSandbox,
  resolveDefaultSandboxImage,
  type SandboxConnectionEvent,
} from "@pai/sandbox";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ensureSshEngine, type SshEngine } from "../fixtures/ssh-engine.ts";
import { poolContainers, removePoolContainers, testDriver, uniquePoolId, waitFor } from "./docker-helpers.ts";
import { type EgressServers, startEgressServers } from "./fixtures/egress-servers.ts";
import { expectTunnelledHello } from "./fixtures/expect-tunnelled.ts";

const run = promisify(execFile);
const childScript = fileURLToPath(new URL("./fixtures/ssh-engine-child.ts", import.meta.url));

let ssh: SshEngine;
let image: string;
let servers: EgressServers;
const poolIds: string[] = [];

beforeAll(async () => {
  ssh = ensureSshEngine();
  image = process.env.PAI_SANDBOX_IMAGE ?? (await resolveDefaultSandboxImage());
  servers = await startEgressServers();
});

afterAll(async () => {
  try {
    for (const poolId of poolIds) await removePoolContainers(poolId);
  } finally {
    await servers?.close();
  }
});

function sshSandbox(
  name: string,
  options: Omit<DockerSandboxOptions, "image" | "poolId"> = {},
): { binding: DockerSandboxBinding; poolId: string } {
  const poolId = uniquePoolId(name);
  poolIds.push(poolId);
  const binding = dockerSandbox({
    image,
    poolId,
    engines: [ssh.engine("ssh-local")],
    pool: { min: 0, max: 3, acquireTimeoutMs: 60_000 },
    ...options,
  });
  return { binding, poolId };
}

const request = (leaseKey: string) => ({
  leaseKey,
  lifetime: "thread" as const,
  signal: AbortSignal.timeout(120_000),
});

/** Whether the local engine (reached through its socket, not over SSH) still has the container. */
async function onLocalEngine(containerId: string): Promise<boolean> {
  return testDriver.inspect(containerId).then(
    () => true,
    (error: unknown) => {
      if (PoolError.hasCode(error, "NOT_FOUND")) return false;
      throw error;
    },
  );
}

describe("dockerSandbox on an engine reached over SSH", () => {
  it("provisions a sandbox, runs commands through its agent, moves files, and removes its container on release", async () => {
    const { binding, poolId } = sshSandbox("ssh");
    let resource: ProvisionedSandbox | undefined;
    try {
      resource = await binding.provision(request("thread:ssh"));
      const { facade, resourceId } = resource;
      expect(resource.meta).toMatchObject({ engine: "ssh-local", poolId });
      expect(await onLocalEngine(resourceId)).toBe(true);

      const hostname = await facade.runCommand({ command: "hostname" });
      expect(resourceId.startsWith(hostname.stdout.trim())).toBe(true);
      // stdin is written, then half-closed over the SSH channel while the output keeps flowing.
      const echoed = await facade.runCommand({ command: "tr a-z A-Z", stdin: "over ssh\n" });
      expect(echoed).toMatchObject({ exitCode: 0, stdout: "OVER SSH\n", terminationReason: "exit" });
      const failed = await facade.runCommand({ command: "echo nope >&2; exit 3" });
      expect(failed).toMatchObject({ exitCode: 3, stderr: "nope\n" });
      const background = await facade.spawn({ command: "sleep 0.2; echo done" });
      expect(await background.wait()).toMatchObject({ exitCode: 0, stdout: "done\n" });

      await facade.writeFiles([
        { path: "notes/a.txt", content: "written over ssh" },
        { path: "notes/b.bin", content: new Uint8Array(300_000).fill(7) },
      ]);
      expect(await facade.readTextFile("notes/a.txt")).toBe("written over ssh");
      const binary = await facade.readFile("notes/b.bin");
      expect(binary?.length).toBe(300_000);
      expect(binary?.every((byte) => byte === 7)).toBe(true);
      expect(await facade.readFile("missing.txt")).toBeNull();
      const sum = await facade.runCommand({ command: "wc -c < notes/b.bin" });
      expect(sum.stdout.trim()).toBe("300000");

      await resource.release();
      resource = undefined;
      await waitFor(async () => !(await onLocalEngine(resourceId)), "the released container to be removed");
      await binding.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await resource?.release().catch(() => undefined);
      await binding.close();
    }
  });

  it("spreads sandboxes over the local socket engine and the SSH engine, two engines of one daemon", async () => {
    const poolId = uniquePoolId("ssh-mixed");
    poolIds.push(poolId);
    const binding = dockerSandbox({
      image,
      poolId,
      engines: [{ id: "local" }, ssh.engine("ssh-local")],
      pool: { min: 1, max: 3, acquireTimeoutMs: 60_000 },
    });
    const leased: ProvisionedSandbox[] = [];
    try {
      await binding.start?.();
      // One warm container per engine, both on the one daemon.
      expect(await poolContainers(poolId)).toHaveLength(2);
      for (const key of ["a", "b"]) leased.push(await binding.provision(request(`thread:${key}`)));
      expect(new Set(leased.map((sandbox) => sandbox.meta?.engine))).toEqual(new Set(["local", "ssh-local"]));
      for (const sandbox of leased) {
        const result = await sandbox.facade.runCommand({ command: `echo ${sandbox.meta?.engine}` });
        expect(result.stdout).toBe(`${sandbox.meta?.engine}\n`);
      }
      expect(binding.metrics()?.engines.map((each) => [each.id, each.status])).toEqual([
        ["local", "reachable"],
        ["ssh-local", "reachable"],
      ]);
      for (const sandbox of leased.splice(0)) await sandbox.release();
      await binding.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await Promise.allSettled(leased.map((sandbox) => sandbox.release()));
      await binding.close();
    }
  });

  it("relays egress over the agent's tunnel: an engine reached over SSH never mounts this host's socket directory", async () => {
    const events: SandboxConnectionEvent[] = [];
    const { binding } = sshSandbox("ssh-egress", {
      network: { allow: [servers.web] },
      onConnection: (event) => events.push(event),
    });
    let resource: ProvisionedSandbox | undefined;
    try {
      resource = await binding.provision(request("thread:egress"));
      const { facade, resourceId } = resource;
      await expectTunnelledHello({ facade, resourceId, events, web: servers.web });
      // A target the policy does not name is refused on the host, and reported as such.
      const refused = await facade.runCommand({
        command: "curl -fsS http://127.0.0.1:9/",
        timeoutMs: 20_000,
      });
      expect(refused.exitCode).not.toBe(0);
      await waitFor(() => events.some((event) => event.target === "127.0.0.1:9"), "the refusal's event");
      expect(events.find((event) => event.target === "127.0.0.1:9")).toMatchObject({
        decision: "refused",
        channel: "tunnel",
      });
    } finally {
      await resource?.release();
      await binding.close();
    }
  });

  it("fails with DOCKER_UNAVAILABLE naming the refused SSH login for a key the server does not accept, leaving no container", async () => {
    const directory = await mkdtemp(join(tmpdir(), "pai-ssh-key-"));
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(directory, "key")]);
    const wrongKey = await readFile(join(directory, "key"));
    await rm(directory, { recursive: true, force: true });
    const driver = createDockerDriver(ssh.engine("bad", wrongKey));
    const ping = await driver.ping().catch((error: unknown) => error);
    expect(PoolError.hasCode(ping, "DOCKER_UNAVAILABLE")).toBe(true);
    expect((ping as PoolError).message).toContain(`SSH login to root@127.0.0.1:${ssh.port} refused`);
    expect((ping as PoolError).details).toMatchObject({ reason: "ssh-authentication" });

    const poolId = uniquePoolId("ssh-bad-key");
    poolIds.push(poolId);
    const binding = dockerSandbox({
      image,
      poolId,
      engines: [ssh.engine("ssh-bad-key", wrongKey)],
      pool: { min: 1, max: 2, acquireTimeoutMs: 10_000 },
    });
    try {
      const failure = await binding
        .provision({ ...request("thread:bad"), signal: AbortSignal.timeout(60_000) })
        .catch((error: unknown) => error);
      expect(PoolError.hasCode(failure, "DOCKER_UNAVAILABLE")).toBe(true);
      expect((failure as Error).message).toContain("ssh-bad-key");
      expect((failure as Error).message).toContain("SSH login");
    } finally {
      await binding.close();
    }
    expect(await poolContainers(poolId)).toEqual([]);
  });

  it("reaches the engine of DOCKER_HOST=ssh://root@127.0.0.1:<port> with the key of SSH_AUTH_SOCK's agent", async () => {
    const directory = await mkdtemp(join(tmpdir(), "pai-ssh-agent-"));
    const agentSocket = join(directory, "agent.sock");
    const agent = execa("ssh-agent", ["-D", "-a", agentSocket], { stdio: "ignore" });
    let binding: DockerSandboxBinding | undefined;
    let resource: ProvisionedSandbox | undefined;
    try {
      await waitFor(() => existsSync(agentSocket), "the ssh agent's socket");
      await run("ssh-add", [ssh.privateKeyPath], { env: { ...process.env, SSH_AUTH_SOCK: agentSocket } });
      vi.stubEnv("DOCKER_HOST", ssh.dockerHost);
      vi.stubEnv("SSH_AUTH_SOCK", agentSocket);
      const poolId = uniquePoolId("ssh-docker-host");
      poolIds.push(poolId);
      binding = dockerSandbox({ image, poolId, pool: { min: 0, max: 2 } });
      resource = await binding.provision(request("thread:docker-host"));
      expect(resource.meta).toMatchObject({ engine: ssh.dockerHost });
      expect((await resource.facade.runCommand({ command: "echo via DOCKER_HOST" })).stdout).toBe(
        "via DOCKER_HOST\n",
      );
      expect(await onLocalEngine(resource.resourceId)).toBe(true);
    } finally {
      await resource?.release();
      await binding?.close();
      vi.unstubAllEnvs();
      agent.kill();
      await agent.catch(() => undefined);
      await rm(directory, { recursive: true, force: true });
    }
  });

  it("lets a process that closed its binding exit: no SSH connection or timer keeps it alive", async () => {
    const poolId = uniquePoolId("ssh-child");
    poolIds.push(poolId);
    const child = await execa("node", [childScript, poolId, image], {
      timeout: 120_000,
      env: { PAI_SSH_ENGINE: ssh.description },
    });
    const report = JSON.parse(child.stdout.trim().split("\n").at(-1) ?? "{}");
    expect(report.stdout).toBe("from the child\n");
    // Once closed, nothing of the binding holds the process (an SSH connection would show as a TCPSocketWrap).
    expect(report.alive).toEqual([]);
    expect(await onLocalEngine(report.containerId)).toBe(false);
    expect(await poolContainers(poolId)).toEqual([]);
  });
});
