import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SandboxError } from "../sandbox-error.ts";
import { addCrunRuntime } from "./add-crun-runtime.ts";

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), "pai-daemon-json-"));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const read = async (path: string) => JSON.parse(await readFile(path, "utf8"));

describe("addCrunRuntime", () => {
  it("writes a daemon.json naming crun where there is none, making its folder", async () => {
    const configPath = join(folder, "docker", "daemon.json");
    expect(await addCrunRuntime({ configPath, crunPath: "/usr/bin/crun" })).toBe(true);
    expect(await read(configPath)).toEqual({ runtimes: { crun: { path: "/usr/bin/crun" } } });
  });

  it("keeps everything else in an existing file, and a second call changes nothing", async () => {
    const configPath = join(folder, "daemon.json");
    const before = {
      "log-level": "warn",
      runtimes: { kata: { path: "/opt/kata" } },
      "data-root": "/srv/docker",
    };
    await writeFile(configPath, JSON.stringify(before));
    expect(await addCrunRuntime({ configPath, crunPath: "/usr/bin/crun" })).toBe(true);
    expect(await read(configPath)).toEqual({
      ...before,
      runtimes: { kata: { path: "/opt/kata" }, crun: { path: "/usr/bin/crun" } },
    });
    const [text, { mtimeMs }] = await Promise.all([readFile(configPath, "utf8"), stat(configPath)]);
    expect(await addCrunRuntime({ configPath, crunPath: "/other/crun" })).toBe(false);
    expect(await readFile(configPath, "utf8")).toBe(text);
    expect((await stat(configPath)).mtimeMs).toBe(mtimeMs);
  });

  it("takes an empty file as an empty configuration", async () => {
    const configPath = join(folder, "daemon.json");
    await writeFile(configPath, "\n");
    expect(await addCrunRuntime({ configPath, crunPath: "/usr/bin/crun" })).toBe(true);
    expect(await read(configPath)).toEqual({ runtimes: { crun: { path: "/usr/bin/crun" } } });
  });

  it("refuses a file that is not a JSON object, and leaves it as it was", async () => {
    for (const text of ['{"runtimes": ', "[1, 2]"]) {
      const configPath = join(folder, "daemon.json");
      await writeFile(configPath, text);
      const error = await addCrunRuntime({ configPath, crunPath: "/usr/bin/crun" }).catch((e: unknown) => e);
      expect(SandboxError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
      expect((error as SandboxError).message).toContain(configPath);
      expect(await readFile(configPath, "utf8")).toBe(text);
    }
  });
});
