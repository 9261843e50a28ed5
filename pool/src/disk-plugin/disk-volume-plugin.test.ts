// Runs the plugin's protocol against real loop-mounted filesystems: needs root and loop devices (as the engine's
// host does). The Docker-backed test in src/docker-driver.docker.test.ts drives it through the engine.
import { mkdtemp, open, readdir, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createDiskVolumePlugin, type DiskVolumePlugin } from "./disk-volume-plugin.ts";

const MiB = 1024 * 1024;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function makePlugin(): Promise<{ plugin: DiskVolumePlugin; stateDir: string }> {
  const stateDir = await mkdtemp(join(tmpdir(), "pai-disk-test-"));
  const plugin = createDiskVolumePlugin({ stateDir });
  const created: string[] = [];
  const call = plugin.call.bind(plugin);
  plugin.call = async (path, body) => {
    if (path === "/VolumeDriver.Create") created.push(String(body.Name));
    return call(path, body);
  };
  cleanups.push(async () => {
    for (const name of created) await call("/VolumeDriver.Remove", { Name: name });
    await plugin.close();
    await rm(stateDir, { recursive: true, force: true });
  });
  return { plugin, stateDir };
}

/** Writes 1 MiB blocks into `path` until the filesystem refuses; returns the bytes written and the error code. */
async function fill(path: string, limit: number): Promise<{ written: number; code: string | undefined }> {
  const file = await open(path, "w");
  const block = Buffer.alloc(MiB, 1);
  let written = 0;
  try {
    while (written < limit) written += (await file.write(block)).bytesWritten;
    return { written, code: undefined };
  } catch (error) {
    return { written, code: (error as NodeJS.ErrnoException).code };
  } finally {
    await file.close().catch(() => undefined);
  }
}

describe("pai-disk volume plugin", () => {
  it("bounds the volumes of one disk together: writing past the size fails with ENOSPC", async () => {
    const { plugin } = await makePlugin();
    const size = String(64 * MiB);
    const opts = (dir: string) => ({ size, disk: "box1", dir });
    expect(await plugin.call("/VolumeDriver.Create", { Name: "ws", Opts: opts("0-workspace") })).toEqual({});
    expect(await plugin.call("/VolumeDriver.Create", { Name: "tmp", Opts: opts("1-tmp") })).toEqual({});
    const ws = String((await plugin.call("/VolumeDriver.Mount", { Name: "ws", ID: "c1" })).Mountpoint);
    const tmp = String((await plugin.call("/VolumeDriver.Mount", { Name: "tmp", ID: "c1" })).Mountpoint);
    expect(await readdir(ws)).toEqual([]);

    const first = await fill(join(ws, "a"), 48 * MiB);
    const second = await fill(join(tmp, "b"), 48 * MiB);

    expect(first).toEqual({ written: 48 * MiB, code: undefined });
    expect(second.code).toBe("ENOSPC");
    expect(first.written + second.written).toBeLessThanOrEqual(64 * MiB);
    const got = (await plugin.call("/VolumeDriver.Get", { Name: "tmp" })).Volume as {
      Status: { availableBytes: number; usedBytes: number };
    };
    expect(got.Status.availableBytes).toBeLessThan(MiB);
    expect(got.Status.usedBytes).toBeGreaterThan(0.9 * (first.written + second.written));
  });

  it("spends host disk only on what is written, and gives it all back when the last volume goes", async () => {
    const { plugin, stateDir } = await makePlugin();
    const opts = { size: String(1024 * MiB), disk: "box2", dir: "data" };
    await plugin.call("/VolumeDriver.Create", { Name: "only", Opts: opts });
    const image = join(stateDir, "disks", "box2", "disk.img");
    const fresh = await stat(image);
    expect(fresh.size).toBe(1024 * MiB);
    expect(fresh.blocks * 512).toBeLessThan(4 * MiB);
    const mountpoint = String(
      (await plugin.call("/VolumeDriver.Mount", { Name: "only", ID: "c" })).Mountpoint,
    );
    await fill(join(mountpoint, "f"), 8 * MiB);
    expect((await plugin.call("/VolumeDriver.Remove", { Name: "only" })).Err).toBeUndefined();
    await expect(stat(join(stateDir, "disks", "box2"))).rejects.toMatchObject({ code: "ENOENT" });
    expect((await plugin.call("/VolumeDriver.Get", { Name: "only" })).Err).toMatch(/no such volume/);
  });

  it("answers bad requests with Err and creates nothing", async () => {
    const { plugin, stateDir } = await makePlugin();
    const errorOf = async (body: Record<string, unknown>) =>
      (await plugin.call("/VolumeDriver.Create", body)).Err;
    expect(await errorOf({ Name: "v", Opts: {} })).toMatch(/size/);
    expect(await errorOf({ Name: "v", Opts: { size: "1024" } })).toMatch(/size/);
    expect(await errorOf({ Name: "../v", Opts: { size: String(64 * MiB) } })).toMatch(/invalid volume name/);
    expect(await errorOf({ Name: "v", Opts: { size: String(64 * MiB), dir: "../etc" } })).toMatch(
      /invalid dir/,
    );
    expect(await errorOf({ Name: "v", Opts: { size: String(64 * MiB), colour: "red" } })).toMatch(
      /unknown option/,
    );
    await plugin.call("/VolumeDriver.Create", { Name: "a", Opts: { size: String(64 * MiB), disk: "d" } });
    expect(await errorOf({ Name: "b", Opts: { size: String(64 * MiB), disk: "d" } })).toMatch(
      /belongs to volume a/,
    );
    expect(await errorOf({ Name: "c", Opts: { size: String(128 * MiB), disk: "d", dir: "x" } })).toMatch(
      /exists with size/,
    );
    expect(await readdir(join(stateDir, "volumes"))).toEqual(["a.json"]);
    expect((await plugin.call("/Plugin.Activate", {})).Implements).toEqual(["VolumeDriver"]);
  });
});
