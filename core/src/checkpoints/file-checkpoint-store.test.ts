import { createHash } from "node:crypto";
import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { PaiError } from "../errors/pai-error.ts";
import { createFileCheckpointStore } from "./file-checkpoint-store.ts";

const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex");
const encode = (value: string) => new TextEncoder().encode(value);
const anHourAgo = () => new Date(Date.now() - 3_600_000);

async function* chunked(bytes: Uint8Array, size: number): AsyncIterable<Uint8Array> {
  for (let offset = 0; offset < bytes.length; offset += size) {
    await new Promise((resolve) => setImmediate(resolve));
    yield bytes.subarray(offset, offset + size);
  }
}

describe("createFileCheckpointStore", () => {
  let directory: string;
  beforeEach(async () => {
    directory = await mkdtemp(join(tmpdir(), "pai-checkpoints-"));
  });
  afterEach(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it("stores bytes under their SHA-256 as <2 hex>/<digest> and reads them back", async () => {
    const store = createFileCheckpointStore({ directory });
    const blob = await store.put(encode("hello"));
    expect(blob).toEqual({ digest: sha256("hello"), bytes: 5 });
    expect(await readFile(join(directory, blob.digest.slice(0, 2), blob.digest), "utf8")).toBe("hello");
    const stream = await store.get(blob.digest);
    expect(stream && (await text(stream))).toBe("hello");
    expect(await store.has([blob.digest, sha256("other")])).toEqual(new Set([blob.digest]));
    expect(await store.get(sha256("other"))).toBeUndefined();
  });

  it("hashes a stream of chunks as it writes it", async () => {
    const store = createFileCheckpointStore({ directory });
    const bytes = new Uint8Array(300_000).map((_, index) => index % 251);
    const blob = await store.put(chunked(bytes, 4096));
    expect(blob).toEqual({ digest: sha256(bytes), bytes: bytes.length });
    expect(sha256(await readFile(join(directory, blob.digest.slice(0, 2), blob.digest)))).toBe(blob.digest);
  });

  it("lets two puts of the same bytes run at once, leaving one whole blob and no temporary file", async () => {
    const store = createFileCheckpointStore({ directory });
    const other = createFileCheckpointStore({ directory });
    const bytes = new Uint8Array(1_000_000).map((_, index) => (index * 7) % 256);
    const [first, second] = await Promise.all([
      store.put(chunked(bytes, 65_536)),
      other.put(chunked(bytes, 10_000)),
    ]);
    expect(first).toEqual(second);
    expect(await readdir(directory)).toEqual([first.digest.slice(0, 2)]);
    expect(sha256(await readFile(join(directory, first.digest.slice(0, 2), first.digest)))).toBe(
      first.digest,
    );
  });

  it("removes the temporary file when a put is aborted", async () => {
    const store = createFileCheckpointStore({ directory });
    const controller = new AbortController();
    async function* abortMidway(): AsyncIterable<Uint8Array> {
      yield encode("part");
      controller.abort(new Error("stop"));
      yield encode("rest");
    }
    await expect(store.put(abortMidway(), { signal: controller.signal })).rejects.toThrow("stop");
    expect(await readdir(directory)).toEqual([]);
  });

  it("ignores a truncated temporary file a crash left, and collect removes it once it is old", async () => {
    const store = createFileCheckpointStore({ directory });
    const left = join(directory, ".incoming-crashed");
    await writeFile(left, "trunc");
    expect(await store.has([sha256("trunc")])).toEqual(new Set());
    expect(await store.get(sha256("trunc"))).toBeUndefined();
    await store.collect(new Set());
    expect(await readdir(directory)).toEqual([".incoming-crashed"]);
    await utimes(left, anHourAgo(), anHourAgo());
    await store.collect(new Set());
    expect(await readdir(directory)).toEqual([]);
  });

  it("collects old unreferenced blobs, keeping referenced ones and young ones", async () => {
    const store = createFileCheckpointStore({ directory });
    const kept = await store.put(encode("kept"));
    const dropped = await store.put(encode("dropped!"));
    const young = await store.put(encode("young"));
    for (const blob of [kept, dropped]) {
      const path = join(directory, blob.digest.slice(0, 2), blob.digest);
      await utimes(path, anHourAgo(), anHourAgo());
    }
    expect(await store.collect(new Set([kept.digest]))).toEqual({ blobs: 1, bytes: 8 });
    expect(await store.has([kept.digest, dropped.digest, young.digest])).toEqual(
      new Set([kept.digest, young.digest]),
    );
  });

  it("stops a collect whose signal aborted, removing nothing more", async () => {
    const store = createFileCheckpointStore({ directory, collectAfterMs: 0 });
    const blob = await store.put(encode("unreferenced"));
    const controller = new AbortController();
    controller.abort(new Error("closing"));
    await expect(store.collect(new Set(), { signal: controller.signal })).rejects.toThrow("closing");
    expect(await store.has([blob.digest])).toEqual(new Set([blob.digest]));
  });

  it("marks a blob found by has as in use, so a collect right after spares it", async () => {
    const store = createFileCheckpointStore({ directory });
    const reused = await store.put(encode("reused"));
    const path = join(directory, reused.digest.slice(0, 2), reused.digest);
    await utimes(path, anHourAgo(), anHourAgo());
    // Another process's store finds it, and the collect of this one spares it.
    const other = createFileCheckpointStore({ directory });
    expect(await other.has([reused.digest])).toEqual(new Set([reused.digest]));
    expect(await store.collect(new Set())).toEqual({ blobs: 0, bytes: 0 });
  });

  it("refuses a digest that is not 64 lowercase hex, never turning it into a path", async () => {
    const store = createFileCheckpointStore({ directory });
    for (const bad of ["../../etc/passwd", sha256("x").toUpperCase(), "ab", `${sha256("x")}/`, ""]) {
      await expect(store.get(bad)).rejects.toSatisfy((error) => PaiError.hasCode(error, "INVALID_ARGUMENT"));
      await expect(store.has([bad])).rejects.toSatisfy((error) =>
        PaiError.hasCode(error, "INVALID_ARGUMENT"),
      );
    }
    expect(() => createFileCheckpointStore({ directory, collectAfterMs: -1 })).toThrow(PaiError);
  });
});
