// uploadDirectory(hostPath) against a real container: the packed tree arrives byte for byte, sanitized.

import { createHash, randomBytes } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import type { ProvisionedResource } from "@pai/core";
import {
  type DockerSandboxBinding,
  dockerSandbox,
  SandboxError,
  type SandboxFacade,
  type UploadResult,
} from "@pai/sandbox";
import { execaSync } from "execa";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("upload");
let binding: DockerSandboxBinding;
let resource: ProvisionedResource<SandboxFacade>;
let box: SandboxFacade;
let host: string;
let uploaded: UploadResult;
const files = new Map<string, Buffer>();

function put(path: string, bytes: Buffer): void {
  mkdirSync(dirname(join(host, path)), { recursive: true });
  writeFileSync(join(host, path), bytes);
  files.set(path, bytes);
}

describe.skipIf(dockerOptedOut)("uploadDirectory from a host path", () => {
  beforeAll(async () => {
    host = mkdtempSync(join(tmpdir(), "pai-upload-tree-"));
    for (let i = 0; i < 240; i++)
      put(`pkg${i % 7}/mod${i % 3}/file${i}.py`, randomBytes((i * 7919) % 40_000));
    put("data/big.bin", randomBytes(3 * 1024 * 1024 + 17));
    put(`${"long".repeat(30)}/${"name".repeat(30)}.txt`, Buffer.from("a path over 100 bytes\n"));
    put("ünïcödé/名前.py", Buffer.from("print('hi')\n"));
    put("bin/tool", Buffer.from("#!/bin/sh\necho tool\n"));
    chmodSync(join(host, "bin/tool"), 0o4755);
    symlinkSync("/etc/passwd", join(host, "passwd-link"));
    execaSync("mkfifo", [join(host, "pipe")]);

    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 1 } });
    resource = await binding.provision({
      leaseKey: "thread:upload",
      lifetime: "thread",
      signal: new AbortController().signal,
    });
    box = resource.facade;
    uploaded = await box.uploadDirectory(host, "tree");
  });

  afterAll(async () => {
    try {
      await resource?.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
      rmSync(host, { recursive: true, force: true });
    }
  });

  it("writes every file byte for byte, long and non-ASCII names included, and reports what it wrote", async () => {
    const bytes = [...files.values()].reduce((sum, content) => sum + content.length, 0);
    expect(uploaded.bytes).toBe(bytes);
    const listing = await box.runCommand({
      command: "find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum",
      cwd: "tree",
      maxOutputBytes: 1024 * 1024,
    });
    expect(listing.exitCode).toBe(0);
    const expected = [...files.entries()]
      .map(([path, content]) => `${createHash("sha256").update(content).digest("hex")}  ./${path}`)
      .sort((a, b) => Buffer.compare(Buffer.from(a.slice(66)), Buffer.from(b.slice(66))));
    expect(listing.stdout.trimEnd().split("\n")).toEqual(expected);
    expect(await box.stat("tree/pipe")).toBeNull();
  });

  it("owns every entry by the sandbox user, drops setuid, and keeps symlinks as links that cannot be read out", async () => {
    const modes = await box.runCommand({
      command: "stat -c '%u:%g %a' bin/tool data && readlink passwd-link",
      cwd: "tree",
    });
    expect(modes.stdout).toBe("1000:1000 755\n1000:1000 755\n/etc/passwd\n");
    const outside = await box.readFile("tree/passwd-link").catch((error: unknown) => error);
    expect(SandboxError.hasCode(outside, "PATH_OUTSIDE_WORKSPACE")).toBe(true);
    expect((await box.runCommand({ command: "./bin/tool", cwd: "tree" })).stdout).toBe("tool\n");
  });
});
