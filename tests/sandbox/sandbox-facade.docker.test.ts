// The sandbox facade against a real container from `dockerSandbox()`: commands, process groups, output caps,
// background processes, files, directory transfer and path escapes.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import type { ProvisionedResource } from "@pai/core";
import { type DockerSandboxBinding, dockerSandbox, SandboxError, type SandboxFacade } from "@pai/sandbox";
import { execa } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  docker,
  dockerOptedOut,
  listTar,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  tarOf,
  uniquePoolId,
  waitFor,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("facade");
let binding: DockerSandboxBinding;
let resource: ProvisionedResource<SandboxFacade>;
let box: SandboxFacade;

async function ps(): Promise<string> {
  return (await box.runCommand({ command: "ps", args: ["-eo", "pid,pgid,stat,args"] })).stdout;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => (SandboxError.isInstance(error) ? error.code : String(error)),
  );
}

describe.skipIf(dockerOptedOut)("sandbox facade (through the in-container agent)", () => {
  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2 } });
    await binding.start?.();
    resource = await binding.provision({
      leaseKey: "thread:facade",
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

  describe("runCommand", () => {
    it("keeps stdout and stderr apart and returns a non-zero exit code as a value", async () => {
      const result = await box.runCommand({ command: "echo out; echo err >&2; exit 3" });
      expect(result).toMatchObject({
        exitCode: 3,
        stdout: "out\n",
        stderr: "err\n",
        terminationReason: "exit",
        truncated: { stdout: false, stderr: false },
      });
      expect(result.durationMs).toBeGreaterThan(0);
    });

    it("passes stdin, env and cwd, and runs argv without a shell when args are given", async () => {
      await box.writeFiles([{ path: "sub/marker", content: "" }]);
      const stdin = await box.runCommand({ command: "tr a-z A-Z", stdin: "hello" });
      expect(stdin.stdout).toBe("HELLO");
      const env = await box.runCommand({ command: "echo $GREETING $HOME", env: { GREETING: "hi" } });
      expect(env.stdout).toBe("hi /workspace\n");
      const cwd = await box.runCommand({ command: "pwd; ls", cwd: "sub" });
      expect(cwd.stdout).toBe("/workspace/sub\nmarker\n");
      const argv = await box.runCommand({ command: "echo", args: ["$HOME", "a b"] });
      expect(argv.stdout).toBe("$HOME a b\n");
      const missing = await box.runCommand({ command: "definitely-not-a-program", args: [] });
      expect(missing.exitCode).toBe(127);
      const noDir = await box.runCommand({ command: "true", cwd: "no/such/dir" });
      expect(noDir.exitCode).not.toBe(0);
      expect(noDir.stderr).toMatch(/can't cd|No such file/);
    });

    it("streams output to callbacks as it arrives", async () => {
      const seen: string[] = [];
      const result = await box.runCommand({
        command: "for i in 1 2 3; do echo line$i; sleep 0.05; done",
        onStdout: (chunk) => seen.push(chunk),
      });
      expect(seen.join("")).toBe("line1\nline2\nline3\n");
      expect(seen.length).toBeGreaterThan(1);
      expect(result.stdout).toBe("line1\nline2\nline3\n");
    });

    it("returns when the command exits and stops what it left running in the background", async () => {
      const result = await box.runCommand({ command: "sleep 30 & echo started" });
      expect(result).toMatchObject({ exitCode: 0, stdout: "started\n", terminationReason: "exit" });
      expect(result.durationMs).toBeLessThan(1500); // docker exec alone would hold the stream ~2 s longer
      expect(await ps()).not.toContain("sleep 30");
    });

    it("kills the whole process group on timeout", async () => {
      const result = await box.runCommand({ command: "sleep 100 & sleep 100; wait", timeoutMs: 500 });
      expect(result.terminationReason).toBe("timeout");
      expect(result.exitCode).toBe(143);
      const processes = await ps();
      expect(processes).not.toContain("sleep 100");
    });

    it("kills the whole process group on abort", async () => {
      const controller = new AbortController();
      setTimeout(() => controller.abort(new Error("stop")), 300);
      const result = await box.runCommand({
        command: "sleep 100 & sleep 100; wait",
        signal: controller.signal,
      });
      expect(result.terminationReason).toBe("abort");
      const processes = await ps();
      expect(processes).not.toContain("sleep 100");
    });

    it("escalates to SIGKILL when a command ignores SIGTERM", async () => {
      const result = await box.runCommand({
        command: "trap '' TERM; sleep 100 & wait",
        timeoutMs: 200,
        forceKillAfterMs: 300,
      });
      expect(result.terminationReason).toBe("timeout");
      expect(result.exitCode).toBe(137);
      expect(result.oomKilled).toBeUndefined();
    });

    it("caps output, keeping head and tail with per-stream flags", async () => {
      const result = await box.runCommand({
        command: "seq 1 100000; echo small >&2",
        maxOutputBytes: 1000,
        onOutputLimit: "truncate",
      });
      expect(result.terminationReason).toBe("exit");
      expect(result.truncated).toEqual({ stdout: true, stderr: false });
      expect(result.stdout.startsWith("1\n2\n3\n")).toBe(true);
      expect(result.stdout.endsWith("99999\n100000\n")).toBe(true);
      expect(Buffer.byteLength(result.stdout)).toBe(1000);
      expect(result.omittedBytes.stdout).toBeGreaterThan(500_000);
      expect(result.stderr).toBe("small\n");
    });

    it("kills a command whose output outgrows the cap and says output-limit", async () => {
      const result = await box.runCommand({ command: "yes", maxOutputBytes: 4096 });
      expect(result.terminationReason).toBe("output-limit");
      expect(result.truncated.stdout).toBe(true);
      expect(result.stdout.startsWith("y\ny\n")).toBe(true);
      expect(await ps()).not.toContain("yes");
    });
  });

  describe("spawn", () => {
    it("runs a background process with live output, and kill() ends its group", async () => {
      const process = await box.spawn({
        command: "echo started; sleep 100 & sleep 100; wait",
      });
      expect(process.pid).toBeGreaterThan(1);
      const reader = process.stdout.getReader();
      const first = await reader.read();
      expect(new TextDecoder().decode(first.value)).toBe("started\n");
      expect(process.output().stdout).toBe("started\n");
      expect(await ps()).toContain(`${process.pid}`);
      await process.kill();
      const result = await process.wait();
      expect(result.terminationReason).toBe("abort");
      expect(await ps()).not.toContain("sleep 100");
      expect((await reader.read()).done).toBe(true);
    });

    it("leaves what a spawned command started running after it exits, still reachable by kill()", async () => {
      const process = await box.spawn({ command: "sleep 30 & echo started" });
      const result = await process.wait();
      expect(result).toMatchObject({ exitCode: 0, stdout: "started\n", terminationReason: "exit" });
      // through the agent the command returns within a millisecond or two: the background child may not have
      // exec'd `sleep` yet
      const sleeping = new RegExp(`${process.pid} +S +sleep 30$`, "m");
      await waitFor(async () => sleeping.test(await ps()), "the background sleep", 5_000);
      await process.kill("SIGKILL");
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await ps()).not.toMatch(new RegExp(`${process.pid} +S +sleep 30$`, "m"));
    });

    it("keeps stdin open with stdin: 'pipe'", async () => {
      const process = await box.spawn({ command: "cat", stdin: "pipe" });
      await process.writeStdin("a");
      await process.writeStdin(new TextEncoder().encode("b"));
      await process.closeStdin();
      const result = await process.wait();
      expect(result).toMatchObject({ exitCode: 0, stdout: "ab", terminationReason: "exit" });
    });
  });

  describe("files", () => {
    it("writes, reads and lists files; a missing file is null", async () => {
      await box.writeFiles([
        { path: "files/a.txt", content: "hello" },
        { path: "/workspace/files/deep/b.bin", content: new Uint8Array([0, 1, 2, 255]), mode: 0o600 },
      ]);
      expect(await box.readTextFile("files/a.txt")).toBe("hello");
      expect(await box.readFile("files/deep/b.bin")).toEqual(new Uint8Array([0, 1, 2, 255]));
      expect(await box.readFile("files/nope.txt")).toBeNull();
      expect(await box.readTextFile("files/nope/deeper.txt")).toBeNull();
      const owner = await box.runCommand({ command: "stat -c '%u %a' files/deep/b.bin" });
      expect(owner.stdout).toBe("1000 600\n");

      const flat = await box.listFiles("files");
      expect(flat?.map((e) => [e.name, e.type]).sort()).toEqual([
        ["a.txt", "file"],
        ["deep", "directory"],
      ]);
      const deep = await box.listFiles("files", { recursive: true });
      expect(deep?.find((e) => e.name === "b.bin")).toEqual({
        path: "/workspace/files/deep/b.bin",
        name: "b.bin",
        type: "file",
        size: 4,
      });
      expect(await box.listFiles("no-such-dir")).toBeNull();
      expect(await box.stat("files/a.txt")).toMatchObject({ type: "file", size: 5, mode: 0o644 });
      expect(await box.stat("files/none")).toBeNull();
      expect(await box.removeFile("files/a.txt")).toBe(true);
      expect(await box.removeFile("files/a.txt")).toBe(false);
      expect(await codeOf(box.removeFile("files"))).toBe("INVALID_ARGUMENT");
      expect(await box.removeFile("files", { recursive: true })).toBe(true);
    });

    it("refuses paths that leave the workspace, checking symlinks inside the container", async () => {
      await box.runCommand({ command: "ln -sf /etc/passwd leak && ln -sfn /etc leakdir" });
      expect(await codeOf(box.readFile("../etc/passwd"))).toBe("PATH_OUTSIDE_WORKSPACE");
      expect(await codeOf(box.readFile("/etc/passwd"))).toBe("PATH_OUTSIDE_WORKSPACE");
      expect(await codeOf(box.readFile("leak"))).toBe("PATH_OUTSIDE_WORKSPACE");
      expect(await codeOf(box.readTextFile("leakdir/passwd"))).toBe("PATH_OUTSIDE_WORKSPACE");
      expect(await codeOf(box.writeFiles([{ path: "leakdir/x", content: "x" }]))).toBe(
        "PATH_OUTSIDE_WORKSPACE",
      );
      // one escaping path among many refuses the whole batch, and writes nothing
      const batch = Array.from({ length: 50 }, (_, i) => ({ path: `batch/f${i}.txt`, content: `${i}` }));
      expect(await codeOf(box.writeFiles([...batch, { path: "leakdir/y", content: "y" }]))).toBe(
        "PATH_OUTSIDE_WORKSPACE",
      );
      expect(await box.stat("batch")).toBeNull();
      expect(await codeOf(box.writeFiles([{ path: "two\nlines", content: "x" }]))).toBe("INVALID_ARGUMENT");
      expect(await codeOf(box.listFiles("leakdir"))).toBe("PATH_OUTSIDE_WORKSPACE");
      expect(await codeOf(box.stat("leak"))).toBe("PATH_OUTSIDE_WORKSPACE");
      expect(await codeOf(box.uploadDirectory(Readable.from([]), "leakdir"))).toBe("PATH_OUTSIDE_WORKSPACE");
      expect(await codeOf(box.downloadDirectory("/etc"))).toBe("PATH_OUTSIDE_WORKSPACE");
      // the symlink itself may be removed: that touches nothing outside
      expect(await box.removeFile("leak")).toBe(true);
      expect(await box.removeFile("leakdir")).toBe(true);
    });

    it("uploads a host directory and downloads it again as a tar stream", async () => {
      const host = mkdtempSync(join(tmpdir(), "pai-upload-"));
      try {
        mkdirSync(join(host, "src/nested"), { recursive: true });
        writeFileSync(join(host, "src/main.py"), "print(6 * 7)\n");
        writeFileSync(join(host, "src/nested/data.bin"), Buffer.from([9, 8, 7]));
        symlinkSync("main.py", join(host, "src/link.py"));
        const uploaded = await box.uploadDirectory(host, "project");
        expect(uploaded).toEqual({ entries: 5, bytes: 16 });
        const run = await box.runCommand({ command: "python3 src/link.py", cwd: "project" });
        expect(run.stdout).toBe("42\n");

        expect(await listTar(await box.downloadDirectory("project"))).toEqual([
          "- src/main.py",
          "- src/nested/data.bin",
          "d src",
          "d src/nested",
          "l src/link.py",
        ]);

        // round trip: the downloaded stream uploads elsewhere unchanged
        await box.uploadDirectory(await box.downloadDirectory("project"), "copy");
        expect(await box.readFile("copy/src/nested/data.bin")).toEqual(new Uint8Array([9, 8, 7]));
        expect(await box.readTextFile("copy/src/main.py")).toBe(
          readFileSync(join(host, "src/main.py"), "utf8"),
        );
        expect((await box.runCommand({ command: "readlink copy/src/link.py" })).stdout).toBe("main.py\n");
      } finally {
        rmSync(host, { recursive: true, force: true });
      }
    });

    it("refuses tar entries that escape the target directory; nothing lands outside it", async () => {
      const archive = tarOf([
        { name: "ok.txt", content: "fine" },
        { name: "../escape.txt", content: "bad" },
      ]);
      expect(await codeOf(box.uploadDirectory(Readable.from([archive]), "evil"))).toBe(
        "PATH_OUTSIDE_WORKSPACE",
      );
      expect(await box.readFile("escape.txt")).toBeNull();
    });
  });

  it("defaults to the content-hashed image and a pool id derived from the spec", async () => {
    const defaults = dockerSandbox({ pool: { min: 0, max: 1 } });
    try {
      await defaults.start?.();
      const build = fileURLToPath(new URL("../../images/build", import.meta.url));
      const { stdout } = await execa(build, ["--print-tag", "sandbox"]);
      const tag = stdout.trim().split("\n").at(-1);
      // the hashed tag of the package's own image, there on the engine (built on first use when missing)
      expect(defaults.image).toBe(tag);
      expect(await docker("images", "-q", tag!)).not.toBe("");
      expect(defaults.poolId).toMatch(/^pai-sandbox-[0-9a-f]{12}$/);
    } finally {
      await defaults.close();
    }
  });

  it("reports which container, image and executor it is", async () => {
    expect(await box.info()).toEqual({
      id: resource.resourceId,
      workspace: "/workspace",
      image: sandboxImage,
      executor: "agent",
    });
  });
});
