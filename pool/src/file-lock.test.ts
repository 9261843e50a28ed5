import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { acquireFileLock, type FileLockOwner } from "./file-lock.ts";

const lockModule = pathToFileURL(join(import.meta.dirname, "file-lock.ts")).href;
const children: ChildProcess[] = [];
const made: string[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function lockDirectory(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "pai-lock-test-"));
  made.push(dir);
  return dir;
}

/** Another process that takes the lock, says HELD, and releases it (saying RELEASED) when told `release`. */
async function holder(name: string, directory: string): Promise<ChildProcess> {
  const code = `
    const { acquireFileLock } = await import(${JSON.stringify(lockModule)});
    const lock = await acquireFileLock({ name: ${JSON.stringify(name)}, directory: ${JSON.stringify(directory)} });
    console.log("HELD");
    process.stdin.setEncoding("utf8").on("data", async () => {
      await lock.release();
      console.log("RELEASED");
      process.exit(0);
    });`;
  const child = spawn(process.execPath, ["--input-type=module", "-e", code], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  children.push(child);
  await new Promise<void>((resolve, reject) => {
    child.stdout?.setEncoding("utf8").on("data", (text: string) => {
      if (text.includes("HELD")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`the holder exited (${code}) before taking the lock`)));
  });
  return child;
}

describe("acquireFileLock", () => {
  it("makes another process wait while one holds it, and lets it in once it is released", async () => {
    const directory = await lockDirectory();
    const child = await holder("image e1 pai/sandbox:1", directory);
    const waitedFor: Array<FileLockOwner | undefined> = [];
    let acquired = false;
    const taking = acquireFileLock({
      name: "image e1 pai/sandbox:1",
      directory,
      onWait: (owner) => waitedFor.push(owner),
    }).then((lock) => {
      acquired = true;
      return lock;
    });
    // Another name is another lock: free at once.
    const other = await acquireFileLock({ name: "image e2 pai/sandbox:1", directory });
    await other.release();
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(acquired).toBe(false);
    expect(waitedFor).toEqual([expect.objectContaining({ pid: child.pid, name: "image e1 pai/sandbox:1" })]);
    const released = new Promise((resolve) =>
      child.stdout?.on("data", (text: string) => text.includes("RELEASED") && resolve(true)),
    );
    child.stdin?.write("release\n");
    await released;
    const lock = await taking;
    expect(acquired).toBe(true);
    await lock.release();
    expect(await readdir(directory)).toEqual([]);
  });

  it("takes over the lock of a process that died holding it", async () => {
    const directory = await lockDirectory();
    const child = await holder("base", directory);
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.kill("SIGKILL");
    await exited;
    const lock = await acquireFileLock({ name: "base", directory, signal: AbortSignal.timeout(10_000) });
    await lock.release();
    expect(await readdir(directory)).toEqual([]);
  });

  it("stops waiting when its signal aborts", async () => {
    const directory = await lockDirectory();
    await holder("busy", directory);
    await expect(
      acquireFileLock({ name: "busy", directory, signal: AbortSignal.timeout(300) }),
    ).rejects.toMatchObject({ name: "TimeoutError" });
  });
});
