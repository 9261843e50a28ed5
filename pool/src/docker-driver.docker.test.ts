// Docker-backed tests of the driver and the pool against the real engine and the real `pai/sandbox` image.
// They fail (never skip) when the engine or the image is missing; set PAI_DOCKER_TESTS=0 to opt out on a
// machine without Docker (ignored under CI=true, where scripts/docker-engine brings the engine up).

import { randomBytes } from "node:crypto";
import { statfs } from "node:fs/promises";
import { dirname } from "node:path";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ExecResult, LabelFilter } from "./container-driver.ts";
import { type ContainerPool, createContainerPool } from "./container-pool.ts";
import { createDockerDriver } from "./docker-driver.ts";
import { poolLabels } from "./labels.ts";
import { PoolError } from "./pool-error.ts";

const image = process.env.PAI_SANDBOX_IMAGE ?? "pai/sandbox:latest";
const optedOut = process.env.PAI_DOCKER_TESTS === "0" && process.env.CI !== "true";
const testRun = randomBytes(3).toString("hex");
const GiB = 1024 ** 3;

async function docker(...args: string[]): Promise<string> {
  const { stdout } = await execa("docker", args, { timeout: 60_000 });
  return stdout.trim();
}

/** Ids of the containers (any state) carrying label `pai.pool=<poolId>`, as `docker ps` shows them. */
async function dockerPs(poolId: string): Promise<string[]> {
  const out = await docker(
    "ps",
    "-a",
    "--no-trunc",
    "--filter",
    `label=${poolLabels.pool}=${poolId}`,
    "--format",
    "{{.ID}}",
  );
  return out === "" ? [] : out.split("\n").sort();
}

async function waitFor(condition: () => Promise<boolean> | boolean, timeoutMs = 20_000, what = "condition") {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A one-file ustar archive. */
function tarOf(name: string, content: Buffer): Buffer {
  const header = Buffer.alloc(512);
  const octal = (value: number, length: number) => `${value.toString(8).padStart(length - 1, "0")}\0`;
  header.write(name, 0, 100, "utf8");
  header.write(octal(0o644, 8), 100, "ascii");
  header.write(octal(1000, 8), 108, "ascii");
  header.write(octal(1000, 8), 116, "ascii");
  header.write(octal(content.length, 12), 124, "ascii");
  header.write(octal(Math.floor(Date.now() / 1000), 12), 136, "ascii");
  header.write("        ", 148, "ascii");
  header.write("0", 156, "ascii");
  header.write("ustar\0", 257, "ascii");
  header.write("00", 263, "ascii");
  let sum = 0;
  for (const byte of header) sum += byte;
  header.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, "ascii");
  const padding = Buffer.alloc((512 - (content.length % 512)) % 512);
  return Buffer.concat([header, content, padding, Buffer.alloc(1024)]);
}

/** The first entry of a tar archive. */
function untarFirst(archive: Buffer): { name: string; content: Buffer } {
  const name = archive.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
  const size = Number.parseInt(archive.subarray(124, 136).toString("ascii").replace(/\0.*$/s, "").trim(), 8);
  return { name, content: archive.subarray(512, 512 + size) };
}

async function readAll(stream: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}

describe.skipIf(optedOut)(`Docker driver and pool on the real engine (${image})`, () => {
  const driver = createDockerDriver();
  const poolIds: string[] = [];
  const pools: ContainerPool<unknown>[] = [];
  const newPoolId = (name: string) => {
    const id = `t${testRun}-${name}`;
    poolIds.push(id);
    return id;
  };
  const track = <STATE>(pool: ContainerPool<STATE>) => {
    pools.push(pool as ContainerPool<unknown>);
    return pool;
  };

  beforeAll(async () => {
    try {
      await driver.ping();
    } catch (error) {
      throw new Error(
        "Docker engine unavailable: these tests need a running engine (run scripts/docker-engine). " +
          "Set PAI_DOCKER_TESTS=0 to opt out locally.",
        { cause: error },
      );
    }
    try {
      await docker("image", "inspect", image);
    } catch (error) {
      throw new Error(`Image ${image} is missing: build it with images/build.`, { cause: error });
    }
  });

  afterAll(async () => {
    await Promise.allSettled(pools.map((pool) => pool.close()));
    for (const poolId of poolIds) {
      const rows = await driver.list({ labels: { [poolLabels.pool]: poolId } }).catch(() => []);
      for (const row of rows) await driver.remove(row.id);
    }
  });

  it("warms min containers, visible to docker ps by pool label", async () => {
    const poolId = newPoolId("warm");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 2, max: 3 }));
    await pool.warm({ timeoutMs: 60_000 });
    const ids = await dockerPs(poolId);
    expect(ids).toHaveLength(2);
    const states = await docker(
      "ps",
      "--filter",
      `label=${poolLabels.pool}=${poolId}`,
      "--format",
      "{{.State}}",
    );
    expect(states.split("\n")).toEqual(["running", "running"]);
    await pool.close();
    expect(await dockerPs(poolId)).toEqual([]);
  });

  it("hands out a hardened container: uid 1000, no network, read-only root, writable /workspace and /tmp", async () => {
    const poolId = newPoolId("lease");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 1, max: 2 }));
    const lease = await pool.acquire({ leaseKey: "thread:hardened" });
    try {
      const id = lease.containerId;
      expect((await driver.exec(id, { cmd: ["id", "-u"] })).stdout.trim()).toBe("1000");
      expect((await driver.exec(id, { cmd: ["ls", "/sys/class/net"] })).stdout.trim().split(/\s+/)).toEqual([
        "lo",
      ]);
      const touchRoot = await driver.exec(id, { cmd: ["touch", "/x"] });
      expect(touchRoot.exitCode).not.toBe(0);
      expect(touchRoot.stderr).toMatch(/Read-only file system/);
      const write = await driver.exec(id, {
        cmd: ["sh", "-c", "echo hi > /workspace/a && echo ho > /tmp/b && cat /workspace/a /tmp/b && pwd"],
      });
      expect(write).toMatchObject({ exitCode: 0, stdout: "hi\nho\n/workspace\n" });
      // Its own network namespace, set up by the runtime (not the engine), where localhost still resolves.
      const loopback = await driver.exec(id, {
        cmd: [
          "python3",
          "-c",
          "import socket; s = socket.create_server(('localhost', 0)); print(socket.create_connection(s.getsockname()).getpeername()[0])",
        ],
      });
      expect(loopback).toMatchObject({ exitCode: 0, stdout: "127.0.0.1\n" });
      const touchHosts = await driver.exec(id, { cmd: ["sh", "-c", "echo x >> /etc/hosts"] });
      expect(touchHosts.exitCode).not.toBe(0);
      const inspected = JSON.parse(await docker("inspect", id))[0];
      expect(inspected.Config.NetworkDisabled).toBe(true);
      expect(inspected.HostConfig).toMatchObject({
        NetworkMode: "none",
        ReadonlyRootfs: true,
        CapDrop: ["ALL"],
        SecurityOpt: ["no-new-privileges"],
        Init: true,
        Memory: 512 * 1024 * 1024,
        PidsLimit: 256,
        NanoCpus: 1e9,
        LogConfig: { Type: "none" },
      });
      expect(inspected.Config.Labels).toMatchObject({
        [poolLabels.managed]: "true",
        [poolLabels.pool]: poolId,
      });
    } finally {
      await lease.release();
    }
    expect(await dockerPs(poolId)).not.toContain(lease.containerId);
  });

  it("reports the engine's host: memory, CPUs and the machine architecture its containers run", async () => {
    const info = await driver.info();
    const [memory, cpus, architecture] = (
      await docker("info", "--format", "{{.MemTotal}} {{.NCPU}} {{.Architecture}}")
    ).split(" ");
    expect(info).toMatchObject({ memoryBytes: Number(memory), cpus: Number(cpus), architecture });
    // A container on this engine says the same machine.
    const { stdout } = await execa("docker", ["run", "--rm", "--network", "none", image, "uname", "-m"]);
    expect(info.architecture).toBe(stdout.trim());
  });

  it("runs containers on crun when the engine has it, else on the engine's default runtime", async () => {
    const runtimes = Object.keys(JSON.parse(await docker("info", "--format", "{{json .Runtimes}}")));
    const pool = track(
      createContainerPool({ driver, spec: { image }, poolId: newPoolId("runtime"), min: 0 }),
    );
    await using lease = await pool.acquire({ leaseKey: "runtime" });
    const inspected = JSON.parse(await docker("inspect", lease.containerId))[0];
    expect(inspected.HostConfig.Runtime).toBe(runtimes.includes("crun") ? "crun" : "runc");
    expect((await driver.exec(lease.containerId, { cmd: ["true"] })).exitCode).toBe(0);
  });

  it("returns exit codes and stderr as values and feeds stdin", async () => {
    const poolId = newPoolId("exec");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    await using lease = await pool.acquire({ leaseKey: "exec" });
    const failed = await driver.exec(lease.containerId, {
      cmd: ["sh", "-c", "echo out; echo err >&2; exit 7"],
    });
    expect(failed).toMatchObject({ exitCode: 7, stdout: "out\n", stderr: "err\n", truncated: false });
    const piped = await driver.exec(lease.containerId, { cmd: ["wc", "-c"], stdin: "x".repeat(100_000) });
    expect(piped.stdout.trim()).toBe("100000");
    const capped = await driver.exec(lease.containerId, {
      cmd: ["sh", "-c", "seq 1 100000"],
      maxOutputBytes: 1000,
    });
    expect(capped.truncated).toBe(true);
    expect(capped.stdout.endsWith("99999\n100000\n")).toBe(true);
  });

  it("keeps an exec session open over a hijacked duplex stream", async () => {
    const poolId = newPoolId("duplex");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    await using lease = await pool.acquire({ leaseKey: "duplex" });
    const session = await driver.execDuplex(lease.containerId, { cmd: ["cat"] });
    const output = readAll(session.stdout);
    session.stdin.write("one\n");
    await new Promise((resolve) => setTimeout(resolve, 100));
    session.stdin.write("two\n");
    session.stdin.end();
    expect((await output).toString()).toBe("one\ntwo\n");
    await waitFor(async () => !(await session.inspect()).running, 5_000, "cat to exit");
    expect(await session.inspect()).toEqual({ running: false, exitCode: 0 });
  });

  it("round-trips files through the archive API into /workspace", async () => {
    const poolId = newPoolId("archive");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    await using lease = await pool.acquire({ leaseKey: "archive" });
    const content = Buffer.from(`hello from the host ${testRun}\n`);
    await driver.putArchive(lease.containerId, "/workspace", tarOf("note.txt", content));
    const cat = await driver.exec(lease.containerId, { cmd: ["cat", "/workspace/note.txt"] });
    expect(cat.stdout).toBe(content.toString());
    const stat = await driver.exec(lease.containerId, { cmd: ["stat", "-c", "%u", "/workspace/note.txt"] });
    expect(stat.stdout.trim()).toBe("1000");
    const archive = await readAll(await driver.getArchive(lease.containerId, "/workspace/note.txt"));
    expect(untarFirst(archive)).toEqual({ name: "note.txt", content });
    const missing = await driver
      .getArchive(lease.containerId, "/workspace/missing.txt")
      .catch((e: unknown) => e);
    expect(PoolError.hasCode(missing, "NOT_FOUND")).toBe(true);
    const readOnly = await driver
      .putArchive(lease.containerId, "/etc", tarOf("x", Buffer.from("x")))
      .catch((e) => e);
    expect(PoolError.isInstance(readOnly)).toBe(true);
  });

  it("bounds file size with the fsize ulimit", async () => {
    const poolId = newPoolId("fsize");
    const pool = track(
      createContainerPool({ driver, spec: { image, limits: { fsizeBytes: 1024 * 1024 } }, poolId, min: 0 }),
    );
    await using lease = await pool.acquire({ leaseKey: "fsize" });
    const small = await driver.exec(lease.containerId, {
      cmd: ["sh", "-c", "head -c 512K /dev/zero > /workspace/s"],
    });
    expect(small.exitCode).toBe(0);
    const big = await driver.exec(lease.containerId, {
      cmd: ["sh", "-c", "head -c 2M /dev/zero > /workspace/b"],
    });
    expect(big.exitCode).not.toBe(0);
    const size = await driver.exec(lease.containerId, { cmd: ["stat", "-c", "%s", "/workspace/b"] });
    expect(Number(size.stdout.trim())).toBeLessThanOrEqual(1024 * 1024);
  });

  it("bounds what /workspace and /tmp hold together at limits.diskBytes: 1 GiB files stop there with ENOSPC", async () => {
    const poolId = newPoolId("disk");
    // The defaults: a 2 GiB disk, files up to 1 GiB.
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    await using lease = await pool.acquire({ leaseKey: "disk" });
    const id = lease.containerId;
    const [workspace] = JSON.parse(await docker("inspect", id))[0].Mounts.filter(
      (mount: { Destination: string }) => mount.Destination === "/workspace",
    );
    expect(workspace.Driver).toBe("pai-disk");
    const volume = JSON.parse(await docker("volume", "inspect", workspace.Name))[0];
    // <state dir>/disks/<disk>/mnt/<dir>: the disk's own directory is on the host's filesystem.
    const hostDirectory = dirname(dirname(volume.Mountpoint));
    const free = async () => {
      const fs = await statfs(hostDirectory);
      return fs.bavail * fs.bsize;
    };
    const freeBefore = await free();

    const writes: ExecResult[] = [];
    for (let i = 0; i < 5; i++) {
      const path = `${i % 2 === 0 ? "/workspace" : "/tmp"}/file-${i}`;
      writes.push(await driver.exec(id, { cmd: ["sh", "-c", `head -c 1G /dev/zero > ${path}`] }));
    }

    expect(writes[0]).toMatchObject({ exitCode: 0, stderr: "" });
    const refused = writes.filter((write) => write.exitCode !== 0);
    expect(refused.length).toBeGreaterThanOrEqual(3);
    for (const write of refused) expect(write.stderr).toMatch(/No space left on device/);
    const held = await driver.exec(id, { cmd: ["sh", "-c", "du -scb /workspace /tmp | tail -n1"] });
    const heldBytes = Number.parseInt(held.stdout, 10);
    expect(heldBytes).toBeGreaterThan(1.8 * GiB);
    expect(heldBytes).toBeLessThanOrEqual(2 * GiB);
    const usage = await driver.diskUsage(id);
    expect(usage?.sizeBytes).toBe(2 * GiB);
    expect(usage?.availableBytes).toBeLessThan(1024 * 1024);
    expect(freeBefore - (await free())).toBeLessThan(2 * GiB + 128 * 1024 * 1024);
  });

  it("names the missing disk volume plugin when the engine has none", async () => {
    const missing = createDockerDriver({ diskVolumeDriver: `pai-disk-missing-${testRun}` });
    const error = await missing.create({ image }, { [poolLabels.pool]: newPoolId("nodisk") }).catch((e) => e);
    expect(PoolError.hasCode(error, "CONTAINER_FAILED")).toBe(true);
    expect(error.message).toMatch(
      /has no "pai-disk-missing-\w+" volume plugin.*`npx pai engine setup`.*limits\.diskBytes/,
    );
    expect(error.details).toMatchObject({ reason: "disk-driver-missing" });
  }, 40_000);

  it("tells what the engine says about itself: host, version, architecture, runtimes", async () => {
    const expected = JSON.parse(
      await docker(
        "info",
        "--format",
        '{"name":{{json .Name}},"version":{{json .ServerVersion}},"arch":{{json .Architecture}},"runtimes":{{json .Runtimes}},"default":{{json .DefaultRuntime}}}',
      ),
    );
    const info = await driver.info();
    expect(info).toMatchObject({
      hostname: expected.name,
      serverVersion: expected.version,
      architecture: expected.arch,
      defaultRuntime: expected.default,
    });
    expect(info.runtimes.sort()).toEqual(Object.keys(expected.runtimes).sort());
    expect(info.volumePlugins).toContain("local");
  });

  it("checks an engine before its first container: the image, the disk plugin, and the runtime containers get", async () => {
    const runtimes = Object.keys(JSON.parse(await docker("info", "--format", "{{json .Runtimes}}")));
    expect(await driver.checkEngine({ image })).toEqual({
      runtime: runtimes.includes("crun") ? "crun" : "runc",
    });
    expect(await driver.checkEngine({ image, runtime: "runc" })).toEqual({ runtime: "runc" });
    const noImage = await driver.checkEngine({ image: "pai/does-not-exist:never" }).catch((e) => e);
    expect(PoolError.hasCode(noImage, "NOT_FOUND")).toBe(true);
    expect(noImage.message).toMatch(/pai\/does-not-exist:never is not on the engine/);
    const missing = createDockerDriver({ diskVolumeDriver: `pai-disk-missing-${testRun}` });
    const noDisk = await missing.checkEngine({ image }).catch((e) => e);
    expect(noDisk.details).toMatchObject({ reason: "disk-driver-missing" });
    // Unbounded volumes need no plugin.
    expect(await missing.checkEngine({ image, limits: { diskBytes: null } })).toHaveProperty("runtime");
  }, 60_000);

  it("aborts an exec with the signal's reason, and removal ends a hanging exec", async () => {
    const poolId = newPoolId("execabort");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    const lease = await pool.acquire({ leaseKey: "execabort" });
    const reason = new Error("stop pressed");
    const controller = new AbortController();
    const started = Date.now();
    const aborted = driver
      .exec(lease.containerId, { cmd: ["sleep", "30"], signal: controller.signal })
      .catch((e: unknown) => e);
    const hanging = driver.exec(lease.containerId, { cmd: ["sleep", "30"] }).catch((e: unknown) => e);
    setTimeout(() => controller.abort(reason), 200);
    expect(await aborted).toBe(reason);
    await lease.release();
    await hanging; // settles (whatever the outcome) once the container is gone
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("lets beforeStart copy files into a created container", async () => {
    const poolId = newPoolId("hooks");
    const pool = track(
      createContainerPool({
        driver,
        spec: { image },
        poolId,
        min: 0,
        beforeStart: async ({ containerId }) => {
          await driver.putArchive(containerId, "/tmp", tarOf("agent.txt", Buffer.from("agent")));
        },
      }),
    );
    await using lease = await pool.acquire({ leaseKey: "hooks" });
    expect((await driver.exec(lease.containerId, { cmd: ["cat", "/tmp/agent.txt"] })).stdout).toBe("agent");
  });

  it("release removes the container and its volumes; close removes everything", async () => {
    const poolId = newPoolId("close");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 2, max: 4 }));
    await pool.warm({ timeoutMs: 60_000 });
    const lease = await pool.acquire({ leaseKey: "a" });
    const kept = await pool.acquire({ leaseKey: "b" });
    const volumes = JSON.parse(await docker("inspect", lease.containerId))[0]
      .Mounts.filter((mount: { Type: string }) => mount.Type === "volume")
      .map((mount: { Name: string }) => mount.Name);
    expect(volumes).toHaveLength(2);
    await lease.release();
    expect(await dockerPs(poolId)).not.toContain(lease.containerId);
    for (const volume of volumes) {
      await expect(docker("volume", "inspect", volume)).rejects.toThrow();
    }
    await waitFor(() => pool.metrics().available === 2, 30_000, "refill");
    expect(await dockerPs(poolId)).toHaveLength(3);
    await pool.close();
    expect(await dockerPs(poolId)).toEqual([]);
    await kept.release();
  });

  it("reapStrays removes a stray labelled container of its pool id", async () => {
    const poolId = newPoolId("reap");
    const stray = await driver.create({ image }, { [poolLabels.managed]: "true", [poolLabels.pool]: poolId });
    await driver.start(stray.id);
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 1 }));
    await pool.warm({ timeoutMs: 60_000 });
    const own = (await dockerPs(poolId)).filter((id) => id !== stray.id);
    const { removed } = await pool.reapStrays();
    expect(removed).toEqual([stray.id]);
    expect(await dockerPs(poolId)).toEqual(own);
  });

  it("reaps a dead owner's containers across pool ids and never a live owner's", async () => {
    // Owner-based reaping looks at every managed container of the engine. This engine is shared with other test
    // files, so the pools see it through a driver that lists only this test's containers (a label on the spec).
    const scope = { "pai-test-run": `${testRun}-owners` };
    const scoped = {
      ...driver,
      list: (filter: LabelFilter, options?: { signal?: AbortSignal }) =>
        driver.list({ labels: { ...filter.labels, ...scope } }, options),
    };
    const live = `live-${testRun}`;
    const dead = `dead-${testRun}`;
    const livePool = track(
      createContainerPool({
        driver: scoped,
        spec: { image, labels: scope },
        poolId: newPoolId("owner-live"),
        ownerId: live,
        min: 1,
      }),
    );
    // min 0: a killed process creates nothing more; its warm container is one made by hand with its labels.
    const deadPool = track(
      createContainerPool({
        driver: scoped,
        spec: { image, labels: scope },
        poolId: newPoolId("owner-dead"),
        ownerId: dead,
        min: 0,
      }),
    );
    const deadWarm = await driver.create(
      { image, labels: scope },
      {
        [poolLabels.managed]: "true",
        [poolLabels.pool]: newPoolId("owner-dead-2"),
        [poolLabels.owner]: dead,
      },
    );
    await driver.start(deadWarm.id);
    await livePool.warm({ timeoutMs: 60_000 });
    const liveLease = await livePool.acquire({ leaseKey: "thread:live" });
    const deadLease = await deadPool.acquire({ leaseKey: "thread:dead" });
    const deadKept = await deadPool.acquire({ leaseKey: "thread:taken-over" });
    await waitFor(() => livePool.metrics().available === 1, 30_000, "refill");
    const byOwner = async (owner: string) =>
      (
        await docker(
          "ps",
          "-a",
          "--no-trunc",
          "--filter",
          `label=${poolLabels.owner}=${owner}`,
          "--format",
          "{{.ID}}",
        )
      )
        .split("\n")
        .filter(Boolean)
        .sort();
    const liveBefore = await byOwner(live);
    expect(liveBefore).toHaveLength(2);
    expect(await byOwner(dead)).toHaveLength(3);

    // The dead owner's pool object stays open here, as a killed process's containers stay on the engine.
    const { removed, failed } = await livePool.reapStrays({
      keep: [deadKept.containerId],
      deadOwners: new Set([dead]),
    });

    expect(failed).toEqual([]);
    expect(removed.sort()).toEqual([deadLease.containerId, deadWarm.id].sort());
    expect(await byOwner(live)).toEqual(liveBefore);
    expect(await byOwner(dead)).toEqual([deadKept.containerId]);
    const exec = await driver.exec(liveLease.containerId, { cmd: ["true"] });
    expect(exec.exitCode).toBe(0);
    await deadKept.release();
  });

  it("adopts a running container after a restart with its files intact", async () => {
    const poolId = newPoolId("adopt");
    const before = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    const lease = await before.acquire({ leaseKey: "thread:7" });
    await driver.exec(lease.containerId, { cmd: ["sh", "-c", "echo kept > /workspace/state"] });
    const after = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    await after.reapStrays({ keep: [lease.containerId] });
    const adopted = await after.adopt(lease.containerId, { leaseKey: "thread:7" });
    expect((await driver.exec(adopted.containerId, { cmd: ["cat", "/workspace/state"] })).stdout).toBe(
      "kept\n",
    );
    await adopted.release();
    expect(await dockerPs(poolId)).toEqual([]);
  });

  it("replaces an idle container that dies", async () => {
    const poolId = newPoolId("die");
    const pool = track(
      createContainerPool({ driver, spec: { image }, poolId, min: 1, evictionIntervalMs: 100 }),
    );
    const reasons: string[] = [];
    pool.events.on("destroy", ({ reason }) => reasons.push(reason));
    await pool.warm({ timeoutMs: 60_000 });
    const [victim] = await dockerPs(poolId);
    await docker("kill", victim!);
    await waitFor(
      async () => {
        const ids = await dockerPs(poolId);
        return ids.length === 1 && ids[0] !== victim && pool.metrics().available === 1;
      },
      30_000,
      "replacement",
    );
    expect(reasons).toContain("died");
  });

  it("leaves no container behind when acquire is aborted", async () => {
    const poolId = newPoolId("abort");
    const pool = track(createContainerPool({ driver, spec: { image }, poolId, min: 0 }));
    const controller = new AbortController();
    const pending = pool.acquire({ leaseKey: "stop", signal: controller.signal });
    setTimeout(() => controller.abort(), 50);
    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    await waitFor(
      async () => pool.metrics().size === 0 && (await dockerPs(poolId)).length === 0,
      30_000,
      "cleanup",
    );
  });

  it("leaves no container behind when a create is aborted while the engine makes it", async () => {
    const poolId = newPoolId("create-abort");
    const labels = { [poolLabels.managed]: "true", [poolLabels.pool]: poolId };
    const made: string[] = [];
    // Aborts land at points through the engine's work on the request, whatever its speed today.
    const startedAt = performance.now();
    made.push((await driver.create({ image }, labels)).id);
    const createMs = performance.now() - startedAt;
    for (const delayMs of [0.1, 0.25, 0.4, 0.55, 0.7, 0.85].map((share) => share * createMs)) {
      const controller = new AbortController();
      const pending = driver.create({ image }, labels, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error("stop")), delayMs);
      await pending.then(
        ({ id }) => made.push(id),
        (error: unknown) => expect(error).toMatchObject({ message: "stop" }),
      );
    }
    for (const id of made) await driver.remove(id);
    // An engine that got a create request goes on with it after the client hung up: give it time to show.
    for (let look = 0; look < 6; look++) {
      expect(await dockerPs(poolId)).toEqual([]);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  });

  it("fails acquire with a clear error for a missing image", async () => {
    const poolId = newPoolId("noimage");
    const pool = track(
      createContainerPool({
        driver,
        spec: { image: "pai/does-not-exist:never" },
        poolId,
        min: 0,
        acquireTimeoutMs: 1_000,
        createBackoff: { initialMs: 100, maxMs: 200 },
      }),
    );
    const error = await pool.acquire({ leaseKey: "x" }).catch((e: unknown) => e);
    expect(PoolError.hasCode(error, "POOL_EXHAUSTED")).toBe(true);
    expect((error as Error).message).toMatch(/No such image/);
  });

  it("reports DOCKER_UNAVAILABLE for an engine that is not there", async () => {
    const nowhere = createDockerDriver({ socketPath: `/tmp/pai-no-docker-${testRun}.sock` });
    await expect(nowhere.ping()).rejects.toMatchObject({ code: "DOCKER_UNAVAILABLE" });
  });
});
