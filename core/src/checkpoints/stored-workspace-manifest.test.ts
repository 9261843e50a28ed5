import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import type { CheckpointBlobStore, ManifestEntry, WorkspaceManifest } from "./checkpoint-blob-store.ts";
import { createFileCheckpointStore } from "./file-checkpoint-store.ts";
import {
  loadWorkspaceManifest,
  storeWorkspaceManifest,
  workspaceManifestBlobs,
} from "./stored-workspace-manifest.ts";

const digestOf = (index: number) => index.toString(16).padStart(64, "0");

/** A workspace of `files` files in 10 directories. */
function workspace(files: number, changed?: { index: number; digest: string }): WorkspaceManifest {
  const entries: ManifestEntry[] = [];
  for (let dir = 0; dir < 10; dir++) entries.push({ path: `d${dir}`, type: "directory", mode: 0o755 });
  for (let index = 0; index < files; index++) {
    const digest = changed?.index === index ? changed.digest : digestOf(index);
    entries.push({ path: `d${index % 10}/f${index}.txt`, type: "file", mode: 0o644, size: index, digest });
  }
  return { version: 1, entries };
}

describe("stored workspace manifests", () => {
  let directory: string;
  let store: CheckpointBlobStore;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), "pai-manifests-"));
    store = createFileCheckpointStore({ directory });
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("stores a manifest and loads it back sorted, the same manifest under the same digest", async () => {
    const manifest = workspace(500);
    const first = await storeWorkspaceManifest({ store, manifest });
    const shuffled = { version: 1 as const, entries: [...manifest.entries].reverse() };
    expect(await storeWorkspaceManifest({ store, manifest: shuffled })).toEqual({
      manifestDigest: first.manifestDigest,
      bytesAdded: 0,
    });
    const loaded = await loadWorkspaceManifest({ store, manifestDigest: first.manifestDigest });
    expect(loaded.entries).toHaveLength(510);
    expect(new Set(loaded.entries.map((entry) => entry.path))).toEqual(
      new Set(manifest.entries.map((e) => e.path)),
    );
    const blobs = await workspaceManifestBlobs({ store, manifestDigest: first.manifestDigest });
    expect(blobs.has(first.manifestDigest)).toBe(true);
    expect(blobs.has(digestOf(499))).toBe(true);
  });

  it("adds a small part of a large manifest when one file changed", async () => {
    const before = await storeWorkspaceManifest({ store, manifest: workspace(10_000) });
    const after = await storeWorkspaceManifest({
      store,
      manifest: workspace(10_000, { index: 4321, digest: "f".repeat(64) }),
    });
    expect(after.manifestDigest).not.toBe(before.manifestDigest);
    // The whole manifest is over a megabyte; one chunk (a few dozen entries) and the root change.
    expect(before.bytesAdded).toBeGreaterThan(1_000_000);
    expect(after.bytesAdded).toBeLessThan(before.bytesAdded / 20);
  });

  it("refuses a manifest with a bad entry, and a digest that is not a stored manifest", async () => {
    await expect(
      storeWorkspaceManifest({
        store,
        manifest: { version: 1, entries: [{ path: "../x", type: "directory", mode: 0 }] },
      }),
    ).rejects.toSatisfy((error) => PaiError.hasCode(error, "INVALID_ARGUMENT"));
    await expect(loadWorkspaceManifest({ store, manifestDigest: digestOf(1) })).rejects.toSatisfy((error) =>
      PaiError.hasCode(error, "NOT_FOUND"),
    );
    const notManifest = await store.put(new TextEncoder().encode('{"version":1,"entries":[]}'));
    await expect(loadWorkspaceManifest({ store, manifestDigest: notManifest.digest })).rejects.toSatisfy(
      (error) => PaiError.hasCode(error, "STORE_CORRUPT"),
    );
  });
});
