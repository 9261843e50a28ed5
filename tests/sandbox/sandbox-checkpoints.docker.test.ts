// Checkpoints of a real sandbox's /workspace (issue 25): taken into a file store on a temp directory, restored in
// the same sandbox (a rewind) and in a second one (a fork), with the workspace compared by what `find` and
// `sha256sum` see inside the container, never by the checkpoint program's own word.

import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CheckpointBlobStore,
  createFileCheckpointStore,
  PaiError,
  type ProvisionedResource,
} from "@pai/core";
import { dockerSandbox, SandboxError, type SandboxFacade } from "@pai/sandbox";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  dockerOptedOut,
  poolContainers,
  removePoolContainers,
  sandboxImage,
  uniquePoolId,
} from "./docker-helpers.ts";

const poolId = uniquePoolId("checkpoints");
const signal = new AbortController().signal;
const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");

let binding: ReturnType<typeof dockerSandbox>;
let first: ProvisionedResource<SandboxFacade>;
let second: ProvisionedResource<SandboxFacade>;
let directory: string;
let store: CheckpointBlobStore;

/** Runs a shell command line in the sandbox and returns its stdout; a failure fails the test. */
async function sh(resource: ProvisionedResource<SandboxFacade>, command: string): Promise<string> {
  const result = await resource.facade.runCommand({ command });
  expect(result.exitCode, result.stderr).toBe(0);
  return result.stdout;
}

/** What the workspace holds, as the container's own tools see it: every entry's type, mode and link, every file's hash. */
function fingerprint(resource: ProvisionedResource<SandboxFacade>): Promise<string> {
  return sh(
    resource,
    "cd /workspace && find . -mindepth 1 -printf '%y %m %p -> %l\\n' | LC_ALL=C sort && " +
      "find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum",
  );
}

function checkpointsOf(resource: ProvisionedResource<SandboxFacade>) {
  const checkpoints = resource.checkpoints;
  if (!checkpoints) throw new Error("the sandbox resource has no checkpoints");
  return checkpoints;
}

describe.skipIf(dockerOptedOut)("sandbox checkpoints (real engine, file store)", () => {
  beforeAll(async () => {
    binding = dockerSandbox({ image: sandboxImage, poolId, pool: { min: 0, max: 2 } });
    first = await binding.provision({ leaseKey: "thread:checkpoints-a", lifetime: "thread", signal });
    second = await binding.provision({ leaseKey: "thread:checkpoints-b", lifetime: "thread", signal });
  }, 120_000);

  afterAll(async () => {
    try {
      await first?.release();
      await second?.release();
      await binding?.close();
      expect(await poolContainers(poolId)).toEqual([]);
    } finally {
      await removePoolContainers(poolId);
    }
  });

  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), "pai-sandbox-checkpoints-"));
    store = createFileCheckpointStore({ directory });
    for (const resource of [first, second])
      await sh(resource, "rm -rf /workspace/* /workspace/.[!.]* /tmp/.pai-checkpoint");
    return async () => {
      // Whatever a test did, the store holds every blob under the SHA-256 of its bytes.
      for (const prefix of await readdir(directory)) {
        for (const name of await readdir(join(directory, prefix))) {
          expect(sha256(await readFile(join(directory, prefix, name)))).toBe(name);
        }
      }
      await rm(directory, { recursive: true, force: true });
    };
  });

  it("rewinds a deleted file, a changed file (content and mode), an added file and a replaced symlink", async () => {
    await sh(
      first,
      "mkdir -p src/deep docs && chmod 750 docs && printf 'keep me' > src/keep.txt && printf 'old' > src/deep/change.sh && " +
        "chmod 755 src/deep/change.sh && printf 'doomed' > docs/delete.md && ln -s src/keep.txt link && " +
        "ln -s /etc/passwd outside && printf 'hidden' > .env && printf '' > empty",
    );
    const before = await fingerprint(first);
    const taken = await checkpointsOf(first).take({ store, signal });
    expect(taken).toMatchObject({ files: 5, totalBytes: 7 + 3 + 6 + 6 });

    await sh(
      first,
      "rm docs/delete.md && printf 'new content' > src/deep/change.sh && chmod 600 src/deep/change.sh && " +
        "printf 'added' > added.txt && mkdir -p extra/dir && rm link && ln -s docs link && chmod 700 docs && chmod 600 .env",
    );
    expect(await fingerprint(first)).not.toBe(before);

    const restored = await checkpointsOf(first).restore(taken.manifestDigest, { store, signal });
    expect(await fingerprint(first)).toBe(before);
    // The deleted and the changed file came back; .env only got its mode.
    expect(restored).toMatchObject({ written: 2, bytesWritten: 6 + 3 });
    expect(restored.removed).toBeGreaterThanOrEqual(2);
    expect(await first.facade.readTextFile("docs/delete.md")).toBe("doomed");
    expect(await sh(first, "readlink outside")).toBe("/etc/passwd\n");

    const again = await checkpointsOf(first).take({ store, signal });
    expect(again.manifestDigest).toBe(taken.manifestDigest);
    expect(again.bytesAdded).toBe(0);
  });

  it("stores about the changed file's size for a checkpoint after one file of many changed", async () => {
    await sh(first, "for i in $(seq 1 40); do head -c 65536 /dev/urandom > f$i.bin; done");
    const full = await checkpointsOf(first).take({ store, signal });
    expect(full.files).toBe(40);
    expect(full.bytesAdded).toBeGreaterThan(40 * 65536);

    await sh(first, "head -c 10000 /dev/urandom > f7.bin");
    const next = await checkpointsOf(first).take({ store, signal });
    expect(next.manifestDigest).not.toBe(full.manifestDigest);
    // The new file, and the manifest chunk holding it with the manifest's root.
    expect(next.bytesAdded).toBeGreaterThanOrEqual(10000);
    expect(next.bytesAdded).toBeLessThan(10000 + 8192);
  });

  it("restores a checkpoint of one sandbox into another (a fork), leaving the first as it is", async () => {
    await sh(
      first,
      "mkdir -p app/lib && printf 'console.log(1)' > app/main.js && chmod 700 app/main.js && " +
        "head -c 20000000 /dev/urandom > app/lib/big.bin && ln -s app/main.js entry",
    );
    await sh(second, "printf 'stale' > stale.txt && mkdir app && printf 'x' > app/main.js");
    const taken = await checkpointsOf(first).take({ store, signal });
    const restored = await checkpointsOf(second).restore(taken.manifestDigest, { store, signal });
    expect(restored).toMatchObject({ written: 2, bytesWritten: 14 + 20_000_000 });
    expect(await fingerprint(second)).toBe(await fingerprint(first));
    expect((await checkpointsOf(second).take({ store, signal })).manifestDigest).toBe(taken.manifestDigest);

    await sh(second, "printf 'diverged' > app/main.js");
    expect(await first.facade.readTextFile("app/main.js")).toBe("console.log(1)");
  });

  it("takes and restores through docker exec when the sandbox runs without the agent", async () => {
    const execBinding = dockerSandbox({
      image: sandboxImage,
      poolId: `${poolId}-exec`,
      executor: "docker-exec",
      pool: { min: 0, max: 1 },
    });
    try {
      const viaExec = await execBinding.provision({
        leaseKey: "thread:checkpoints-exec",
        lifetime: "thread",
        signal,
      });
      await sh(
        first,
        "mkdir -p src && printf 'one' > src/a.txt && head -c 9000000 /dev/urandom > big.bin && ln -s src l",
      );
      await sh(viaExec, "printf 'other' > other.txt");
      const taken = await checkpointsOf(first).take({ store, signal });
      expect(await checkpointsOf(viaExec).restore(taken.manifestDigest, { store, signal })).toMatchObject({
        written: 2,
        removed: 1,
      });
      expect(await fingerprint(viaExec)).toBe(await fingerprint(first));
      await sh(viaExec, "printf 'two' > src/a.txt");
      const fromExec = await checkpointsOf(viaExec).take({ store, signal });
      expect(fromExec.bytesAdded).toBeLessThan(4096);
      await viaExec.release();
    } finally {
      await execBinding.close();
      await removePoolContainers(`${poolId}-exec`);
    }
  });

  it("refuses to restore a checkpoint the store lacks, leaving the workspace as it is", async () => {
    await sh(first, "printf 'kept' > kept.txt");
    const before = await fingerprint(first);
    const failure = await checkpointsOf(first)
      .restore("0".repeat(64), { store, signal })
      .catch((error: unknown) => error);
    expect(PaiError.hasCode(failure, "NOT_FOUND")).toBe(true);
    expect(await fingerprint(first)).toBe(before);
  });

  it("refuses a checkpoint whose cache lies about a file, storing nothing under the claimed digest", async () => {
    await sh(first, "printf 'real bytes' > secret.txt");
    const lie = sha256("bytes the cache claims");
    // A program rewrites the checkpoint program's cache so secret.txt seems to hold other bytes.
    await sh(
      first,
      `python3 -c 'import os; s = os.lstat("/workspace/secret.txt"); open("/tmp/.pai-checkpoint", "wb").write(b"secret.txt\\x00%d\\x00%d\\x00%d\\x00%d\\x00${lie}\\x00" % (s.st_size, s.st_mtime_ns, s.st_ino, s.st_ctime_ns))'`,
    );
    const failure = await checkpointsOf(first)
      .take({ store, signal })
      .catch((error: unknown) => error);
    expect(SandboxError.hasCode(failure, "CHECKPOINT_MISMATCH"), String(failure)).toBe(true);
    expect((failure as SandboxError).details).toMatchObject({ path: "secret.txt", claimed: lie });
    expect(await store.has([lie])).toEqual(new Set());

    // Once the file changes, its cache line no longer matches and the walk hashes it again.
    await sh(first, "printf 'real bytes!' > secret.txt");
    const taken = await checkpointsOf(first).take({ store, signal });
    expect(taken.files).toBe(1);
  });
});
